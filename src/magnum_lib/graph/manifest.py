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
          interconnect: 40GB/s     # a bandwidth demand (the article's form), or a link
                                   # class its output crosses ("nvlink_4"; optional, "none")
      pre_reserve: true            # static allocation of the whole graph (default true)

``interconnect`` takes either form. A bandwidth (``40GB/s``, as in the article's own
manifest, claim C37) is what the layer streams while it runs; reserving checks it
against the device's link (hardware catalog) and, where the link is slower, stretches
the layer to the time its bytes need and says so in a note. A link class is the link
the layer's ``transfer`` crosses; a fabric the device lacks (the article's ``nvlink_3``
on an H100, which has NVLink 4, or on an MTIA, which has no NVLink) is noted, and the
device's own link is used (see :func:`magnum_lib.hardware.device_link`).

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

Files are read defensively (:func:`load_manifest`): a regular file of at most
``MAX_MANIFEST_BYTES``, opened without blocking (a FIFO or a device is refused, never
read), UTF-8 (a UTF-8 byte-order mark is allowed; UTF-16, latin-1 or binary is refused
with the offset of the first bad byte), and YAML whose anchors and aliases expand to at
most ``MAX_YAML_NODES`` nodes (a "billion laughs" document is refused before it is
built). Messages quote at most a short excerpt of a bad value. The shipped manifests
are reachable by short name (``load_manifest("article")``; :func:`shipped_manifests`).
"""
from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

import yaml

from magnum_lib._resources import data_path
from magnum_lib.base.validate import ParameterError, check_int, excerpt
from magnum_lib.hardware import Catalog, UnknownAcceleratorError, default_catalog
from magnum_lib.units import format_size, parse_bandwidth, parse_duration, parse_interconnect, parse_size

__all__ = ["Layer", "Manifest", "ManifestError", "parse_manifest", "load_manifest", "validate_manifest",
           "shipped_manifests", "resolve_manifest", "MAX_MANIFEST_BYTES", "MAX_YAML_NODES"]

_JOB_KEYS = ("id", "gpu_type", "graph", "pre_reserve")
_LAYER_KEYS = ("layer", "runtime", "memory", "interconnect", "transfer")
_NO_LINK = ("none", "local")
#: Largest manifest file read (the article's is 300 bytes; 1000 layers take about 100 kB).
MAX_MANIFEST_BYTES = 1_000_000
#: Most YAML nodes a document may expand to, aliases counted each time they are used.
MAX_YAML_NODES = 200_000
#: Deepest YAML nesting accepted (a manifest nests 4 levels: job, graph, layer, value).
MAX_YAML_DEPTH = 32
#: Most layers in one graph, and most problems reported (then "... and N more").
MAX_LAYERS = 10_000
MAX_PROBLEMS = 20
#: Largest bandwidth demand accepted: 100 TB/s, 30x an H100's memory bandwidth.
MAX_BANDWIDTH_BPS = 100e12
#: Per-layer upper bounds, far above any real layer, that keep every timeline in int64 ns:
#: a layer runs at most an hour, needs at most 1 PB, sends at most 1 TB after it.
MAX_LAYER_RUNTIME_NS = 3600 * 10**9
MAX_LAYER_MEMORY_BYTES = 10**15
MAX_TRANSFER_BYTES = 10**12
_BANDWIDTH_HINT = re.compile(r"(/s|ps)\s*$", re.IGNORECASE)
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ManifestError(ValueError):
    """A manifest that cannot be reserved; ``problems`` lists every reason, one per line.

    Each problem starts with the path of the offending field, e.g.
    ``job.graph[1].runtime: -800us is negative``.
    """

    def __init__(self, problems: list[str]):
        problems = list(problems)
        if len(problems) > MAX_PROBLEMS:  # thousands of broken layers still give a readable error
            problems = problems[:MAX_PROBLEMS] + [f"... and {len(problems) - MAX_PROBLEMS} more problems"]
        self.problems = problems
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
        Canonical link class its output crosses (``"nvlink_3"``), None for none (or when
        the manifest gave a bandwidth instead).
    transfer_bytes : int
        Bytes sent over ``interconnect`` after the layer (0 = no transfer).
    bandwidth_Bps : float
        Interconnect bandwidth the layer streams while it runs, bytes/s (the article's
        ``interconnect: 40GB/s``); 0 when the manifest gave none.
    """

    name: str
    runtime_ns: int
    memory_bytes: int
    interconnect: str | None = None
    transfer_bytes: int = 0
    bandwidth_Bps: float = 0.0

    def __post_init__(self):
        # parse_manifest checks the same bounds with the manifest's paths; this catches a
        # Layer built directly (two layers of 2^63-1 ns would wrap reserve's timeline).
        check_int("runtime_ns", self.runtime_ns, 1, MAX_LAYER_RUNTIME_NS)
        check_int("memory_bytes", self.memory_bytes, 1, MAX_LAYER_MEMORY_BYTES)
        check_int("transfer_bytes", self.transfer_bytes, 0, MAX_TRANSFER_BYTES)
        bw = self.bandwidth_Bps
        if isinstance(bw, bool) or not isinstance(bw, (int, float)) or not 0 <= bw <= MAX_BANDWIDTH_BPS:
            raise ParameterError("bandwidth_Bps", f"must be a number in [0, {MAX_BANDWIDTH_BPS:g}], got {excerpt(bw)}")

    def to_dict(self) -> dict:
        return {"layer": self.name, "runtime_ns": self.runtime_ns, "memory_bytes": self.memory_bytes,
                "interconnect": self.interconnect, "transfer_bytes": self.transfer_bytes,
                "bandwidth_Bps": self.bandwidth_Bps}


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
            shown = key if isinstance(key, str) and len(key) <= 40 else excerpt(key, 40)
            problems.append(f"{path}.{shown}: unknown key; accepted: {', '.join(accepted)}")


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
        problems.append(f"{path}: expected a string such as {zero_hint!r}, got {_kind(text)} {excerpt(text)}")
        return None
    if isinstance(text, str) and len(text) > 40:  # no size or duration is written this long
        problems.append(f"{path}: cannot parse {excerpt(text, 40)}: expected a value such as {zero_hint!r}")
        return None
    shown = text.strip() if isinstance(text, str) else excerpt(text, 40)
    if _is_negative(text):
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
        shown = excerpt(text, 20)
        problems.append(f"{path}: {shown} has no unit; write it with one, e.g. '{shown}us' or '{shown}ms'")
        return None
    return _at_most(_positive(text, path, problems, parse_duration, "800us"), MAX_LAYER_RUNTIME_NS,
                    f"{path}: {excerpt(text, 40)} is longer than an hour; no layer of a graph runs that long",
                    problems)


def _at_most(value, limit: int, message: str, problems: list):
    """``value`` if it is None or within ``limit``; else None with ``message`` recorded."""
    if value is not None and value > limit:
        problems.append(message)
        return None
    return value


def _interconnect(text, path: str, problems: list) -> tuple[str | None, float]:
    """``(link class, 0.0)`` or ``(None, bandwidth in bytes/s)``; ``(None, 0.0)`` for none."""
    if text is None or (isinstance(text, str) and text.strip().lower() in _NO_LINK):
        return None, 0.0
    accepted = "a link class such as 'nvlink_4' or 'pcie_5_x8', a bandwidth such as '40GB/s', or 'none'"
    if not isinstance(text, str) or len(text) > 40:
        problems.append(f"{path}: expected {accepted}, got {_kind(text)} {excerpt(text, 40)}")
        return None, 0.0
    if _BANDWIDTH_HINT.search(text):  # "40GB/s", "400Gbps": a bandwidth demand (the article's form)
        if _is_negative(text):
            problems.append(f"{path}: {text.strip()} is negative")
            return None, 0.0
        try:
            bw = parse_bandwidth(text, field=path)
        except (ValueError, TypeError) as exc:
            problems.append(str(exc))
            return None, 0.0
        if not 0 < bw <= MAX_BANDWIDTH_BPS:
            problems.append(f"{path}: {text.strip()} is {'zero' if bw == 0 else 'above 100 TB/s'}; "
                            f"expected a positive bandwidth such as '40GB/s'")
            return None, 0.0
        return None, bw
    try:
        return parse_interconnect(text, field=path).name, 0.0
    except (ValueError, TypeError) as exc:
        problems.append(f"{exc}; or a bandwidth such as '40GB/s'; or 'none'")
        return None, 0.0


def _layer(doc, path: str, problems: list) -> Layer | None:
    if not isinstance(doc, dict):
        problems.append(f"{path}: expected a mapping with keys layer, runtime, memory, interconnect; "
                        f"got {_kind(doc)} {excerpt(doc)}")
        return None
    before = len(problems)
    _unknown_keys(doc, _LAYER_KEYS, path, problems)
    name = doc.get("layer")
    if name is None:
        problems.append(f"{path}.layer: missing (required)")
    elif not isinstance(name, str) or not name.strip():
        problems.append(f"{path}.layer: expected a non-empty name, got {_kind(name)} {excerpt(name)}")
    elif len(name) > 200:
        problems.append(f"{path}.layer: a name of at most 200 characters, got {excerpt(name)}")
    runtime = _runtime(doc.get("runtime"), f"{path}.runtime", problems)
    memory = _at_most(_positive(doc.get("memory"), f"{path}.memory", problems, parse_size, "2.1GB"),
                      MAX_LAYER_MEMORY_BYTES, f"{path}.memory: {excerpt(doc.get('memory'), 40)} is above 1 PB; "
                      f"no device has that much", problems)
    link, bandwidth = _interconnect(doc.get("interconnect"), f"{path}.interconnect", problems)
    transfer = 0
    if "transfer" in doc:
        text = doc["transfer"]
        if isinstance(text, str) and len(text) > 40:
            problems.append(f"{path}.transfer: cannot parse {excerpt(text, 40)}: expected a size such as '64MB'")
        elif _is_negative(text):
            problems.append(f"{path}.transfer: {text} is negative")
        else:
            try:
                transfer = _at_most(parse_size(text, field=f"{path}.transfer"), MAX_TRANSFER_BYTES,
                                    f"{path}.transfer: {excerpt(text, 40)} is above 1 TB; at most 1TB per layer",
                                    problems) or 0
            except (ValueError, TypeError) as exc:
                problems.append(str(exc))
        if transfer > 0 and bandwidth > 0:
            problems.append(f"{path}.transfer: a transfer crosses a link class (e.g. 'pcie_5_x8'), "
                            f"but interconnect is a bandwidth; give the class, or drop the transfer")
        elif transfer > 0 and link is None and "interconnect" not in doc:
            problems.append(f"{path}.transfer: a transfer needs an interconnect to cross; add one")
    if len(problems) > before:
        return None
    return Layer(name.strip(), runtime, memory, link, transfer, bandwidth)


def _device(name, path: str, catalog: Catalog, problems: list) -> str | None:
    if name is None:
        problems.append(f"{path}: missing (required)")
        return None
    if not isinstance(name, str):
        problems.append(f"{path}: expected a device name such as 'mtia_v2', got {_kind(name)} {excerpt(name)}")
        return None
    try:
        return catalog.resolve(name.strip().replace("-", "_"))
    except UnknownAcceleratorError:
        known = ", ".join(catalog)
        problems.append(f"{path}: unknown device type {excerpt(name, 40)}; known: {known} (aliases accepted)")
        return None


def _problems_and_manifest(doc, device, catalog: Catalog) -> tuple[list[str], Manifest | None]:
    problems: list[str] = []
    if not isinstance(doc, dict) or "job" not in doc:
        got = f"{_kind(doc)}" + (f" with keys {excerpt(', '.join(map(str, doc)))}" if isinstance(doc, dict) else "")
        return [f"job: missing; a manifest is a mapping with one key `job`, got {got}"], None
    problems += [f"{excerpt(key, 40) if not isinstance(key, str) or len(key) > 40 else key}: unknown top-level key; "
                 f"accepted: job" for key in doc if key != "job"]
    job = doc["job"]
    if not isinstance(job, dict):
        problems.append(f"job: expected a mapping with keys {', '.join(_JOB_KEYS)}, got {_kind(job)} {excerpt(job)}")
        return problems, None
    _unknown_keys(job, _JOB_KEYS, "job", problems)

    job_id = job.get("id")
    if job_id is None:
        problems.append("job.id: missing (required)")
    elif isinstance(job_id, bool) or not isinstance(job_id, (str, int)) or not str(job_id).strip():
        problems.append(f"job.id: expected a non-empty name, got {_kind(job_id)} {excerpt(job_id)}")
    elif len(str(job_id)) > 200:
        problems.append(f"job.id: a name of at most 200 characters, got {excerpt(job_id)}")
    gpu_type = _device(job.get("gpu_type"), "job.gpu_type", catalog, problems)
    if device is not None:
        gpu_type = _device(device, "device", catalog, problems)  # an override, e.g. --device
    pre_reserve = job.get("pre_reserve", True)
    if not isinstance(pre_reserve, bool):
        problems.append(f"job.pre_reserve: expected true or false, got {_kind(pre_reserve)} {excerpt(pre_reserve)}")

    graph = job.get("graph")
    layers = []
    if graph is None:
        problems.append("job.graph: missing (required): a list of layers")
    elif not isinstance(graph, list) or not graph:
        problems.append(f"job.graph: expected a non-empty list of layers, got {_kind(graph)} {excerpt(graph)}")
    elif len(graph) > MAX_LAYERS:
        problems.append(f"job.graph: {len(graph):,} layers; at most {MAX_LAYERS:,} are accepted")
    else:
        seen: dict[str, int] = {}
        for i, item in enumerate(graph):
            layer = _layer(item, f"job.graph[{i}]", problems)
            if layer is None:
                continue
            if layer.name in seen:
                problems.append(f"job.graph[{i}].layer: duplicate name {excerpt(layer.name)} "
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


def _yaml_problem(exc: yaml.YAMLError, source: str) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return f"{source}: {where}YAML does not parse: {excerpt(what, 120)[1:-1] if len(what) > 120 else what}"


def _check_expansion(node, source: str) -> None:
    """Refuse a node graph whose aliases expand past MAX_YAML_NODES, or that nests too deep.

    Walks the document as it would be built, an alias counted every time it is used, and
    stops at the limit: the cost is bounded by MAX_YAML_NODES whatever the document (a
    "billion laughs" bomb, or an alias that contains itself).
    """
    stack, count = [(node, 1)], 0
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_YAML_NODES:
            raise ManifestError([f"{source}: the YAML expands to more than {MAX_YAML_NODES:,} nodes (anchors "
                                 f"and aliases `&a` / `*a` repeat whole subtrees); 10,000 layers take about 90,000"])
        if depth > MAX_YAML_DEPTH:
            raise ManifestError([f"{source}: the YAML nests more than {MAX_YAML_DEPTH} levels deep; "
                                 f"a manifest nests 4 (job, graph, layer, value)"])
        if isinstance(node, yaml.SequenceNode):
            stack.extend((child, depth + 1) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                stack += [(key, depth + 1), (value, depth + 1)]


def _load_yaml(text: str, source: str):
    """Compose the YAML (aliases stay shared references, nothing is expanded), check its
    expanded size, then build it with the SafeLoader."""
    loader = _SAFE_LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node, source)
        return loader.construct_document(node)
    except ManifestError:
        raise
    except yaml.YAMLError as exc:
        raise ManifestError([_yaml_problem(exc, source)]) from None
    except RecursionError:  # the pure-Python composer on deep nesting (libyaml stops at 1000 levels)
        raise ManifestError([f"{source}: the YAML nests too deep to read; a manifest nests 4 levels"]) from None
    except Exception as exc:  # noqa: BLE001 - PyYAML's constructors fail in many ways on hostile input
        # e.g. ValueError for an integer of 5,000 digits, AttributeError for a bad !!timestamp
        raise ManifestError([f"{source}: YAML value cannot be built ({type(exc).__name__}): "
                             f"{excerpt(str(exc), 120)}"]) from None
    finally:
        loader.dispose()


_FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISSOCK, "a socket"))


def _read_bytes(path: Path) -> bytes:
    """The bytes of a regular file of at most MAX_MANIFEST_BYTES, never blocking.

    Opened with O_NONBLOCK (a FIFO opens at once instead of waiting for a writer) and
    checked with fstat on the open descriptor, so what is checked is what is read.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        why = getattr(exc, "strerror", None) or str(exc)
        raise ManifestError([f"{_shown(str(path))}: cannot read: {why}"]) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = next((k for test, k in _FILE_KINDS if test(st.st_mode)), "not a regular file")
            raise ManifestError([f"{path}: is {kind}, not a regular file; give the path of a YAML manifest"])
        if st.st_size > MAX_MANIFEST_BYTES:
            raise ManifestError([f"{path}: is {format_size(st.st_size)}; a manifest is at most "
                                 f"{format_size(MAX_MANIFEST_BYTES)} (the article's is a few hundred bytes)"])
        chunks, total = [], 0
        while total <= MAX_MANIFEST_BYTES:
            chunk = os.read(fd, MAX_MANIFEST_BYTES + 1 - total)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > MAX_MANIFEST_BYTES:  # it grew while being read
            raise ManifestError([f"{path}: grew past {format_size(MAX_MANIFEST_BYTES)} while being read"])
        return b"".join(chunks)
    except OSError as exc:
        raise ManifestError([f"{path}: cannot read: {exc.strerror or exc}"]) from None
    finally:
        os.close(fd)


_BOMS = ((b"\x00\x00\xfe\xff", "UTF-32 (big-endian)"), (b"\xff\xfe\x00\x00", "UTF-32 (little-endian)"),
         (b"\xfe\xff", "UTF-16 (big-endian)"), (b"\xff\xfe", "UTF-16 (little-endian)"))


def _decode(data: bytes, source: str) -> str:
    """UTF-8 text (a UTF-8 byte-order mark is dropped), or a ManifestError saying what it is."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            raise ManifestError([f"{source}: is {name} text (byte-order mark {bom.hex(' ').upper()}); "
                                 f"a manifest is UTF-8: save it as UTF-8"])
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise ManifestError([f"{source}: has a NUL byte at offset {nul} (line {line}): "
                             f"binary data, or UTF-16/32 without a byte-order mark; a manifest is UTF-8 text"])
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        bad = data[exc.start:exc.start + 1].hex().upper()
        raise ManifestError([f"{source}: is not UTF-8: byte 0x{bad} at offset {exc.start} (line {line}) "
                             f"({exc.reason}; latin-1 or cp1252 text?); save it as UTF-8"]) from None


def shipped_manifests() -> dict[str, Path]:
    """The manifests shipped in ``magnum_lib/data/manifests``, by short name (the file stem).

    ``article`` is the article's own manifest (claim C37), byte for byte as printed.
    """
    return {p.stem: p for p in sorted(data_path("manifests").glob("*.yaml"))}


def resolve_manifest(name_or_path) -> Path:
    """A path as given if something exists there, else the shipped manifest of that short
    name (``"article"`` or ``"article.yaml"``); ManifestError naming both otherwise."""
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise ManifestError([f"manifest: expected a path or a shipped name, got {type(name_or_path).__name__}"])
    text = os.fspath(name_or_path)
    p = Path(text)
    try:
        if os.path.lexists(p):
            return p
    except (OSError, ValueError):
        pass  # a name too long or with a NUL byte: not a file; reported below
    shipped = shipped_manifests()
    stem = text[:-5] if text.endswith(".yaml") else text
    if stem in shipped:
        return shipped[stem]
    raise ManifestError([f"{_shown(text)}: cannot read: no such file, nor a shipped manifest of that name "
                         f"(shipped: {', '.join(shipped)}; `faux-magnum reserve --list` shows their paths)"])


def _shown(path_text: str) -> str:
    """A path for a message: as is up to 200 characters, else an excerpt."""
    return path_text if len(path_text) <= 200 else excerpt(path_text, 200)


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
    """Read and validate a manifest file, or a shipped one by short name (``"article"``).

    The file must be a regular file of at most ``MAX_MANIFEST_BYTES``, in UTF-8; see the
    module docstring for what is refused and why (then :class:`ManifestError`, one line).
    """
    p = resolve_manifest(path)
    text = _decode(_read_bytes(p), str(p))
    return parse_manifest(text, device=device, catalog=catalog, source=str(p))
