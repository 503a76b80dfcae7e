"""Graph manifests: the static dataflow description a compiled-accelerator job sends ahead.

The format is the article's (YAML, read with ``yaml.safe_load``'s SafeLoader, in its C
form when PyYAML was built with libyaml: seven times faster, same safe subset)::

    job:
      id: recsys-inference-42
      gpu_type: mtia_v2            # a catalog key or alias; "mtia-v2" also works
      graph:
        - layer: embedding_lookup
          runtime: 800us           # how long the layer computes on the device
          memory: 2.1GB            # what it needs while it runs (GB = 10^9 bytes)
          interconnect: nvlink_3   # the link its output crosses (optional, "none")
      pre_reserve: true            # static allocation of the whole graph (default true)

One extension, optional: ``transfer: 64MB`` on a layer, the bytes its output sends over
its interconnect after it finishes (default 0). The packer turns it into link time.

Memory model. ``memory`` is what a layer needs while it runs. With ``pre_reserve: true``
the graph is statically allocated: every layer's buffers get fixed addresses for the
whole run, so the reservation is the *sum* of the layers' memory, held from the first
layer's start to the last layer's end. With ``pre_reserve: false`` memory is taken and
given back layer by layer, so the peak is the *largest* layer. Either way a graph whose
peak exceeds the device's memory is refused.

Validation collects every problem, each starting with its path in the document
(``job.graph[1].runtime: -800us is negative``), and raises one :class:`ManifestError`
holding them all. Unknown keys are errors, not warnings: a typo such as ``runtme``
silently ignored would reserve the wrong thing.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from magnum_lib.hardware import Catalog, UnknownAcceleratorError, default_catalog
from magnum_lib.units import format_size, parse_duration, parse_interconnect, parse_size

__all__ = ["Layer", "Manifest", "ManifestError", "parse_manifest", "load_manifest", "validate_manifest"]

_JOB_KEYS = ("id", "gpu_type", "graph", "pre_reserve")
_LAYER_KEYS = ("layer", "runtime", "memory", "interconnect", "transfer")
_NO_LINK = ("none", "local")
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ManifestError(ValueError):
    """A manifest that cannot be reserved; ``problems`` lists every reason, one per line.

    Each problem starts with the path of the offending field, e.g.
    ``job.graph[1].runtime: -800us is negative``.
    """

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True)
class Layer:
    """One layer of a static graph, in base units.

    Attributes
    ----------
    name : str
    runtime_ns : int
        Compute time on the device, nanoseconds (> 0).
    memory_bytes : int
        Memory the layer needs while it runs, bytes (> 0).
    interconnect : str or None
        Canonical link class its output crosses (``"nvlink_3"``), None for none.
    transfer_bytes : int
        Bytes sent over ``interconnect`` after the layer (0 = no transfer).
    """

    name: str
    runtime_ns: int
    memory_bytes: int
    interconnect: str | None = None
    transfer_bytes: int = 0

    def to_dict(self) -> dict:
        return {"layer": self.name, "runtime_ns": self.runtime_ns, "memory_bytes": self.memory_bytes,
                "interconnect": self.interconnect, "transfer_bytes": self.transfer_bytes}


@dataclass(frozen=True)
class Manifest:
    """A validated job manifest.

    Attributes
    ----------
    job_id : str
    gpu_type : str
        Canonical catalog key of the device the job was compiled for.
    layers : tuple[Layer, ...]
        In execution order (a chain: layer k+1 consumes layer k's output).
    pre_reserve : bool
        Static allocation of the whole graph (see the module docstring).
    """

    job_id: str
    gpu_type: str
    layers: tuple[Layer, ...]
    pre_reserve: bool = True

    @property
    def peak_memory_bytes(self) -> int:
        """Bytes reserved: sum of the layers under ``pre_reserve``, else the largest layer."""
        return graph_peak(self.layers, self.pre_reserve)

    @property
    def compute_ns(self) -> int:
        """Sum of the layers' runtimes, nanoseconds."""
        return sum(layer.runtime_ns for layer in self.layers)

    def to_dict(self) -> dict:
        return {"job_id": self.job_id, "gpu_type": self.gpu_type, "pre_reserve": self.pre_reserve,
                "peak_memory_bytes": self.peak_memory_bytes,
                "layers": [layer.to_dict() for layer in self.layers]}


def graph_peak(layers, pre_reserve: bool) -> int:
    """Reserved bytes of a chain of layers (sum when statically allocated, else max)."""
    sizes = [layer.memory_bytes for layer in layers]
    return (sum(sizes) if pre_reserve else max(sizes)) if sizes else 0


# ---------------------------------------------------------------------------
# Validation: each helper appends "path: problem" lines and returns a value or None.
# ---------------------------------------------------------------------------

def _kind(value) -> str:
    return "null" if value is None else type(value).__name__


def _unknown_keys(doc: dict, accepted: tuple, path: str, problems: list) -> None:
    for key in doc:
        if key not in accepted:
            problems.append(f"{path}.{key}: unknown key; accepted: {', '.join(accepted)}")


def _is_negative(value) -> bool:
    """``"-800us"`` or ``-3``: caught before the unit parsers, whose message is less direct."""
    if isinstance(value, str):
        return value.strip().startswith("-")
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0


def _positive(text, path: str, problems: list, parse, zero_hint: str):
    """Parse a duration or size, naming negative and zero values the way people write them."""
    if text is None:
        problems.append(f"{path}: missing (required)")
        return None
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        problems.append(f"{path}: expected a string such as {zero_hint!r}, got {_kind(text)} {text!r}")
        return None
    shown = text.strip() if isinstance(text, str) else text
    if _is_negative(shown):
        problems.append(f"{path}: {shown} is negative")
        return None
    try:
        value = parse(text, field=path)
    except (ValueError, TypeError) as exc:
        problems.append(str(exc))
        return None
    if value <= 0:
        problems.append(f"{path}: {shown} is zero; expected a positive amount such as {zero_hint!r}")
        return None
    return value


def _runtime(text, path: str, problems: list):
    if isinstance(text, (int, float)) and not isinstance(text, bool) and text > 0:
        # parse_duration would read a bare number as seconds; in a manifest that is a guess.
        problems.append(f"{path}: {text} has no unit; write it with one, e.g. '{text}us' or '{text}ms'")
        return None
    return _positive(text, path, problems, parse_duration, "800us")


def _interconnect(text, path: str, problems: list):
    if text is None or (isinstance(text, str) and text.strip().lower() in _NO_LINK):
        return None
    try:
        return parse_interconnect(text, field=path).name
    except (ValueError, TypeError) as exc:
        problems.append(f"{exc}; or 'none'")
        return None


def _layer(doc, path: str, problems: list) -> Layer | None:
    if not isinstance(doc, dict):
        problems.append(f"{path}: expected a mapping with keys layer, runtime, memory, interconnect; "
                        f"got {_kind(doc)} {doc!r}")
        return None
    before = len(problems)
    _unknown_keys(doc, _LAYER_KEYS, path, problems)
    name = doc.get("layer")
    if name is None:
        problems.append(f"{path}.layer: missing (required)")
    elif not isinstance(name, str) or not name.strip():
        problems.append(f"{path}.layer: expected a non-empty name, got {_kind(name)} {name!r}")
    runtime = _runtime(doc.get("runtime"), f"{path}.runtime", problems)
    memory = _positive(doc.get("memory"), f"{path}.memory", problems, parse_size, "2.1GB")
    link = _interconnect(doc.get("interconnect"), f"{path}.interconnect", problems)
    transfer = 0
    if "transfer" in doc:
        text = doc["transfer"]
        if _is_negative(text):
            problems.append(f"{path}.transfer: {text} is negative")
        else:
            try:
                transfer = parse_size(text, field=f"{path}.transfer")
            except (ValueError, TypeError) as exc:
                problems.append(str(exc))
        if transfer > 0 and link is None and "interconnect" not in doc:
            problems.append(f"{path}.transfer: a transfer needs an interconnect to cross; add one")
    if len(problems) > before:
        return None
    return Layer(name.strip(), runtime, memory, link, transfer)


def _device(name, path: str, catalog: Catalog, problems: list) -> str | None:
    if name is None:
        problems.append(f"{path}: missing (required)")
        return None
    if not isinstance(name, str):
        problems.append(f"{path}: expected a device name such as 'mtia_v2', got {_kind(name)} {name!r}")
        return None
    try:
        return catalog.resolve(name.strip().replace("-", "_"))
    except UnknownAcceleratorError:
        known = ", ".join(catalog)
        problems.append(f"{path}: unknown device type {name!r}; known: {known} (aliases accepted)")
        return None


def _problems_and_manifest(doc, device, catalog: Catalog) -> tuple[list[str], Manifest | None]:
    problems: list[str] = []
    if not isinstance(doc, dict) or "job" not in doc:
        got = f"{_kind(doc)}" + (f" with keys {', '.join(map(str, doc))}" if isinstance(doc, dict) else "")
        return [f"job: missing; a manifest is a mapping with one key `job`, got {got}"], None
    problems += [f"{key}: unknown top-level key; accepted: job" for key in doc if key != "job"]
    job = doc["job"]
    if not isinstance(job, dict):
        problems.append(f"job: expected a mapping with keys {', '.join(_JOB_KEYS)}, got {_kind(job)} {job!r}")
        return problems, None
    _unknown_keys(job, _JOB_KEYS, "job", problems)

    job_id = job.get("id")
    if job_id is None:
        problems.append("job.id: missing (required)")
    elif isinstance(job_id, bool) or not isinstance(job_id, (str, int)) or not str(job_id).strip():
        problems.append(f"job.id: expected a non-empty name, got {_kind(job_id)} {job_id!r}")
    gpu_type = _device(job.get("gpu_type"), "job.gpu_type", catalog, problems)
    if device is not None:
        gpu_type = _device(device, "device", catalog, problems)  # an override, e.g. --device
    pre_reserve = job.get("pre_reserve", True)
    if not isinstance(pre_reserve, bool):
        problems.append(f"job.pre_reserve: expected true or false, got {_kind(pre_reserve)} {pre_reserve!r}")

    graph = job.get("graph")
    layers = []
    if graph is None:
        problems.append("job.graph: missing (required): a list of layers")
    elif not isinstance(graph, list) or not graph:
        problems.append(f"job.graph: expected a non-empty list of layers, got {_kind(graph)} {graph!r}")
    else:
        seen: dict[str, int] = {}
        for i, item in enumerate(graph):
            layer = _layer(item, f"job.graph[{i}]", problems)
            if layer is None:
                continue
            if layer.name in seen:
                problems.append(f"job.graph[{i}].layer: duplicate name {layer.name!r} "
                                f"(also job.graph[{seen[layer.name]}])")
            seen.setdefault(layer.name, i)
            layers.append(layer)
        if layers and len(layers) == len(graph) and gpu_type and isinstance(pre_reserve, bool):
            peak = graph_peak(layers, pre_reserve)
            capacity = catalog[gpu_type].memory_bytes
            if peak > capacity:
                how = f"sum of {len(layers)} layers, pre_reserve" if pre_reserve else "largest layer"
                problems.append(f"job.graph: peak memory {format_size(peak, digits=None)} ({how}) exceeds "
                                f"{gpu_type} memory {format_size(capacity, digits=None)}")
    if problems:
        return problems, None
    return [], Manifest(str(job_id).strip(), gpu_type, tuple(layers), pre_reserve)


def _load_yaml(text: str, source: str):
    try:
        return yaml.load(text, Loader=_SAFE_LOADER)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ManifestError([f"{source}: {where}YAML does not parse: {what}"]) from None


def validate_manifest(doc, *, device=None, catalog: Catalog | None = None) -> list[str]:
    """Every problem of a manifest (a parsed document or YAML text); ``[]`` when valid."""
    try:
        parse_manifest(doc, device=device, catalog=catalog)
    except ManifestError as exc:
        return exc.problems
    return []


def parse_manifest(doc, *, device=None, catalog: Catalog | None = None, source: str = "<manifest>") -> Manifest:
    """Validate a manifest and return it in base units.

    Parameters
    ----------
    doc : str or dict
        YAML text, or the document already parsed (``yaml.safe_load`` output).
    device : str, optional
        Reserve on this device instead of the manifest's ``gpu_type`` (memory is checked
        against it); problems with it are reported under the path ``device``.
    catalog : Catalog, optional
        Where device names are resolved; default the shipped catalog.
    source : str
        Name used in a YAML syntax error (the file name).

    Raises
    ------
    ManifestError
        With every problem found, one per line, each naming its path.
    """
    if isinstance(doc, str):
        doc = _load_yaml(doc, source)
    problems, manifest = _problems_and_manifest(doc, device, catalog or default_catalog())
    if problems:
        raise ManifestError(problems)
    return manifest


def load_manifest(path: str | os.PathLike, *, device=None, catalog: Catalog | None = None) -> Manifest:
    """Read and validate a manifest file (see :func:`parse_manifest`)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ManifestError([f"{p}: cannot read: {exc.strerror or exc}"]) from None
    return parse_manifest(text, device=device, catalog=catalog, source=str(p))
