"""Loaders for the real public traces (formats: ../shared/data/README.md).

Where a file is looked for, in order: the ``path`` argument; else
``$MAGNUM_SHARED_DATA/<relative path>`` when that variable is set; else
``<dir>/shared/data/<relative path>`` for the current directory and each of its parents
(so ``shared/data`` beside a checkout is found from anywhere inside it); else beside the
source checkout the package was imported from, if it was (an installed wheel has none).
A missing file raises ``TraceNotFound`` (a ``FileNotFoundError``) with a one-line message naming the file, the
places tried and the public source to download it from. A malformed row raises
``ValueError`` naming the file, the line and the column.
"""
from __future__ import annotations

import ast
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from magnum_lib.base.validate import excerpt
from magnum_lib.workload._csvcols import read_columns
from magnum_lib.workload._validate import MAX_GPUS, MAX_SECONDS
from magnum_lib.workload.jobs import Workload

__all__ = [
    "SOURCES",
    "shared_data_dir",
    "traces_missing",
    "trace_path",
    "require_traces",
    "TraceNotFound",
    "PhillyJobs",
    "AlibabaPods",
    "AlibabaNodes",
    "GavelThroughputs",
    "load_philly",
    "load_alibaba_pods",
    "load_alibaba_nodes",
    "load_gavel_throughputs",
]

ENV_VAR = "MAGNUM_SHARED_DATA"
SHARED_SUBDIR = Path("shared", "data")


def _source_checkout() -> Path | None:
    """The repository root when the package runs from its source tree (src layout), else None."""
    root = Path(__file__).resolve().parents[3]
    return root if (root / "pyproject.toml").is_file() and (root / "src" / "magnum_lib").is_dir() else None


_CHECKOUT = _source_checkout()

#: Where each file comes from (repository@commit:path), as in shared/data/MANIFEST.tsv.
SOURCES = {
    "philly/philly_jobs.csv": "https://github.com/petuum/adaptdl (commit c793c7089bd3) simulator/traces/philly.csv",
    "alibaba/openb_pod_list_default.csv": "https://github.com/alibaba/clusterdata (commit 7a6c496e4f4b) "
    "cluster-trace-gpu-v2023/csv/openb_pod_list_default.csv",
    "alibaba/openb_node_list_gpu_node.csv": "https://github.com/alibaba/clusterdata (commit 7a6c496e4f4b) "
    "cluster-trace-gpu-v2023/csv/openb_node_list_gpu_node.csv",
    "gavel/simulation_throughputs.json": "https://github.com/stanford-futuredata/gavel (commit c4fa40097339) "
    "scheduler/simulation_throughputs.json",
    "azure_llm/AzureLLMInferenceTrace_code.csv": "https://github.com/Azure/AzurePublicDataset (commit b469a113cedc) "
    "data/AzureLLMInferenceTrace_code.csv",
    "azure_llm/AzureLLMInferenceTrace_conv.csv": "https://github.com/Azure/AzurePublicDataset (commit b469a113cedc) "
    "data/AzureLLMInferenceTrace_conv.csv",
    "mooncake/conversation_trace.jsonl": "https://github.com/kvcache-ai/Mooncake (commit 3b5a59413395) "
    "FAST25-release/traces/conversation_trace.jsonl",
    "mooncake/synthetic_trace.jsonl": "https://github.com/kvcache-ai/Mooncake (commit 3b5a59413395) "
    "FAST25-release/traces/synthetic_trace.jsonl",
}


def _candidates() -> list[Path]:
    """The shared data folders to try, in order (see the module docstring)."""
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        return [Path(env)]
    cwd = Path.cwd()
    found = [d / SHARED_SUBDIR for d in (cwd, *cwd.parents)]
    if _CHECKOUT is not None:
        found.append(_CHECKOUT.parent / SHARED_SUBDIR)
    return list(dict.fromkeys(found))  # de-duplicated, order kept


def shared_data_dir() -> Path:
    """The shared data folder: the first candidate holding ``MANIFEST.tsv``, else the first tried."""
    candidates = _candidates()
    return next((d for d in candidates if (d / "MANIFEST.tsv").is_file()), candidates[0])


def traces_missing() -> str | None:
    """None when a shared data folder (one holding ``MANIFEST.tsv``) is found, else one line
    saying where it was looked for (the test suite skips, and ``make notebooks`` leaves out,
    what needs the traces on that line)."""
    candidates = _candidates()
    if any((d / "MANIFEST.tsv").is_file() for d in candidates):
        return None
    return f"real traces not found (looked in {_where(candidates)}); set {ENV_VAR} to their folder"


class TraceNotFound(FileNotFoundError):
    """A trace file is missing. A notebook shows it as its one-line message, not a traceback."""

    def _render_traceback_(self) -> list[str]:
        # IPython's hook: the lines shown instead of the traceback (the cause is not a bug to debug)
        return [f"{type(self).__name__}: {self}"]


def require_traces(*relative: str) -> None:
    """Raise :class:`TraceNotFound` naming every one of ``relative`` that is missing, in one line."""
    missing = []
    for rel in relative:
        try:
            trace_path(rel)
        except TraceNotFound:
            missing.append(rel)
    if len(missing) == 1:
        trace_path(missing[0])  # its own message names the source
    if missing:
        raise TraceNotFound(f"{len(missing)} trace files ({', '.join(missing)}) not found in "
                            f"{_where(_candidates())}; get them with `faux-magnum data fetch`, "
                            f"or set {ENV_VAR} to their folder")


def trace_path(relative: str, path=None) -> Path:
    """Resolve a trace file (see the module docstring); raise FileNotFoundError if absent."""
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(f"trace file not found: {p}")
        return p
    candidates = _candidates()
    for base in candidates:
        p = base / relative
        if p.is_file():
            return p
    # Short enough for the CLI's 400-character line even from a deep folder: the full sources
    # are in the shipped manifest (`faux-magnum data list`), the fetch is one command.
    source = SOURCES.get(relative, "")
    repo = source.split()[0].removeprefix("https://github.com/") if source else ""
    commit = source.split("(commit ")[1].split(")")[0] if "(commit " in source else ""
    origin = f"{repo}@{commit}" if repo and commit else "`faux-magnum data list`"
    raise TraceNotFound(
        f"trace file {relative} not found in {_where(candidates)}; get it with `faux-magnum data fetch` "
        f"(source: {origin}), or set {ENV_VAR} to its folder"
    )


def _short_path(p: Path, limit: int = 120) -> str:
    """``p``, or ``.../<its last folders>`` when longer than ``limit`` (a message stays one line)."""
    text = str(p)
    return text if len(text) <= limit else f"...{os.sep}{os.sep.join(p.parts[-3:])}"


def _where(candidates: list[Path]) -> str:
    """The folders tried, said briefly (the cwd walk is named by its first folder)."""
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        return f"{ENV_VAR}={candidates[0]}"
    text = f"{_short_path(candidates[0])} (and its parents')"
    if _CHECKOUT is not None and candidates[-1] == _CHECKOUT.parent / SHARED_SUBDIR:
        text += f" or {_short_path(candidates[-1])}"
    return text


# --------------------------------------------------------------------------- Philly

@dataclass(frozen=True, eq=False)
class PhillyJobs:
    """The Philly job list (Jeon et al., ATC 2019), sorted by submit time.

    Attributes
    ----------
    submit_s : float64 array
        Submit time in seconds after the first job's (so ``submit_s[0] == 0``).
    duration_s, gpu_time_s : float64 arrays
        Run time and GPU-seconds (``duration_s * num_gpus`` in this file).
    num_gpus : int64 array
    vc_code : int32 array
        Index into ``vc_names`` (the virtual cluster ids, sorted).
    start : numpy.datetime64
        Wall-clock submit time of the first job (the trace's own clock, no time zone).
    """

    submit_s: np.ndarray
    duration_s: np.ndarray
    num_gpus: np.ndarray
    gpu_time_s: np.ndarray
    vc_code: np.ndarray
    vc_names: tuple
    start: np.datetime64
    path: Path = field(repr=False)

    def __len__(self) -> int:
        return int(self.submit_s.size)

    @property
    def vc(self) -> np.ndarray:
        """Virtual-cluster id of every job, as strings."""
        return np.asarray(self.vc_names, dtype=object)[self.vc_code]

    def to_workload(self) -> Workload:
        """The jobs as a :class:`Workload` (durations of 0 s are raised to 1 s)."""
        return Workload(self.submit_s, np.maximum(self.duration_s, 1.0), self.num_gpus, name="philly")


_PHILLY = "philly/philly_jobs.csv"


def load_philly(path=None, keep=None, max_rows: int | None = None) -> PhillyJobs:
    """Load the Philly job list (``timestamp,duration,num_gpus,gpu_time,cluster``).

    82,247 rows in the public file, not sorted; returned sorted by submit time
    (stable, so ties keep file order). Loads in about 0.2 s. ``keep(row)`` (the row's
    five strings) and ``max_rows``: only the rows kept are read, and reading stops after
    ``max_rows`` of them (in file order), so only those are checked.
    """
    p = trace_path(_PHILLY, path)
    c = read_columns(p, ["timestamp", "duration", "num_gpus", "gpu_time", "cluster"], keep, max_rows)
    ts = c.timestamps("timestamp")
    duration = c.floats("duration", maximum=MAX_SECONDS)
    gpus = c.ints("num_gpus", minimum=1, maximum=MAX_GPUS)
    gpu_time = c.floats("gpu_time", maximum=MAX_SECONDS * MAX_GPUS)
    vc_code, vc_names = c.codes("cluster")
    if len(c) == 0 and keep is None:
        raise ValueError(f"{p}: no job rows after the header")
    if len(c) == 0:  # rows were read, none kept: an empty list
        return PhillyJobs(ts.astype(np.float64), duration, gpus, gpu_time, vc_code, vc_names,
                          np.datetime64("NaT", "s"), p)
    order = np.argsort(ts, kind="stable")
    ts = ts[order]
    submit = (ts - ts[0]).astype(np.float64)
    return PhillyJobs(submit, duration[order], gpus[order], gpu_time[order], vc_code[order],
                      vc_names, ts[0], p)


# --------------------------------------------------------------------------- Alibaba

@dataclass(frozen=True, eq=False)
class AlibabaPods:
    """Alibaba GPU-sharing pods (Weng et al., ATC 2023), in file order.

    ``gpu_milli`` is thousandths of one GPU per GPU requested (< 1000 means a shared
    fraction). Times are seconds on the trace clock; ``scheduled_s`` is NaN for pods
    never scheduled. Categorical columns are codes into the matching ``*_names``.
    """

    name: tuple
    cpu_milli: np.ndarray
    memory_mib: np.ndarray
    num_gpu: np.ndarray
    gpu_milli: np.ndarray
    gpu_spec_code: np.ndarray
    gpu_spec_names: tuple
    qos_code: np.ndarray
    qos_names: tuple
    phase_code: np.ndarray
    phase_names: tuple
    creation_s: np.ndarray
    deletion_s: np.ndarray
    scheduled_s: np.ndarray
    path: Path = field(repr=False)

    def __len__(self) -> int:
        return len(self.name)

    @property
    def gpus_requested(self) -> np.ndarray:
        """GPUs requested as a real number: ``num_gpu * gpu_milli / 1000``."""
        return self.num_gpu * self.gpu_milli / 1000.0

    def take(self, index) -> AlibabaPods:
        """The pods at ``index`` (ints, repeats allowed), in that order; a repeated pod's
        later copies are named ``"<name>-tuned-<k>"`` (k = 1, 2, ...)."""
        idx = np.asarray(index, dtype=np.int64).reshape(-1)
        if idx.size and (idx.min() < 0 or idx.max() >= len(self)):
            raise ValueError(f"pod index out of range 0..{len(self) - 1}")
        seen: dict = {}
        names = []
        for i in idx.tolist():
            k = seen.get(i, 0)
            seen[i] = k + 1
            names.append(self.name[i] if k == 0 else f"{self.name[i]}-tuned-{k}")
        cols = {f: getattr(self, f)[idx] for f in ("cpu_milli", "memory_mib", "num_gpu", "gpu_milli",
                                                     "gpu_spec_code", "qos_code", "phase_code",
                                                     "creation_s", "deletion_s", "scheduled_s")}
        return AlibabaPods(tuple(names), gpu_spec_names=self.gpu_spec_names, qos_names=self.qos_names,
                           phase_names=self.phase_names, path=self.path, **cols)


_PODS = "alibaba/openb_pod_list_default.csv"
_MAX_CPU_MILLI = 10**7  # 10,000 cores on one pod or node
_MAX_MIB = 2**30  # 1 PiB of memory
_POD_COLS = ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos",
             "pod_phase", "creation_time", "deletion_time", "scheduled_time"]


def load_alibaba_pods(path=None) -> AlibabaPods:
    """Load ``openb_pod_list_default.csv`` (8,152 pods)."""
    p = trace_path(_PODS, path)
    c = read_columns(p, _POD_COLS)
    gpu_milli = c.ints("gpu_milli")
    c.check("gpu_milli", gpu_milli <= 1000, "expected gpu_milli in [0, 1000]")
    spec, spec_names = c.codes("gpu_spec")
    qos, qos_names = c.codes("qos")
    phase, phase_names = c.codes("pod_phase")
    created = c.floats("creation_time", maximum=MAX_SECONDS)
    deleted = c.floats("deletion_time", maximum=MAX_SECONDS)
    scheduled = c.floats("scheduled_time", allow_empty=True, maximum=MAX_SECONDS)
    # A pod is created before it is scheduled and before it is deleted.
    c.check("deletion_time", deleted >= created, "expected deletion_time >= creation_time")
    c.check("scheduled_time", np.isnan(scheduled) | (scheduled >= created), "expected scheduled_time >= creation_time")
    return AlibabaPods(
        tuple(c.raw("name")), c.ints("cpu_milli", maximum=_MAX_CPU_MILLI), c.ints("memory_mib", maximum=_MAX_MIB),
        c.ints("num_gpu", maximum=MAX_GPUS), gpu_milli, spec, spec_names, qos, qos_names, phase, phase_names,
        created, deleted, scheduled, p,
    )


@dataclass(frozen=True, eq=False)
class AlibabaNodes:
    """Alibaba GPU nodes: serial, CPU (milli-cores), memory (MiB), GPU count and model code."""

    sn: tuple
    cpu_milli: np.ndarray
    memory_mib: np.ndarray
    gpu: np.ndarray
    model_code: np.ndarray
    model_names: tuple
    path: Path = field(repr=False)

    def __len__(self) -> int:
        return len(self.sn)

    def gpus_by_model(self) -> dict[str, int]:
        """Total GPUs of each model."""
        totals = np.bincount(self.model_code, weights=self.gpu, minlength=len(self.model_names))
        return {m: int(t) for m, t in zip(self.model_names, totals, strict=True)}


_NODES = "alibaba/openb_node_list_gpu_node.csv"


def load_alibaba_nodes(path=None) -> AlibabaNodes:
    """Load ``openb_node_list_gpu_node.csv`` (1,213 nodes, 6,212 GPUs)."""
    p = trace_path(_NODES, path)
    c = read_columns(p, ["sn", "cpu_milli", "memory_mib", "gpu", "model"])
    model, model_names = c.codes("model")
    return AlibabaNodes(tuple(c.raw("sn")), c.ints("cpu_milli", maximum=_MAX_CPU_MILLI),
                        c.ints("memory_mib", maximum=_MAX_MIB), c.ints("gpu", maximum=MAX_GPUS), model, model_names, p)


# --------------------------------------------------------------------------- Gavel

Job = tuple  # (model name, number of GPUs)


@dataclass(frozen=True, eq=False)
class GavelThroughputs:
    """Gavel's measured training throughputs (Narayanan et al., OSDI 2020), steps/s.

    Attributes
    ----------
    isolated : dict
        ``(model, num_gpus, gpu_type) -> steps/s`` for the job alone.
    packed : dict
        ``(gpu_type, (model_a, n_a), (model_b, n_b)) -> (steps/s of a, steps/s of b)``
        when the two jobs share the GPUs (space sharing).
    gpu_types : tuple
        In file order, e.g. ``("k80", "p100", "v100", "v100_unconsolidated", ...)``.
    """

    isolated: dict
    packed: dict
    gpu_types: tuple
    path: Path = field(repr=False)

    @property
    def models(self) -> tuple:
        return tuple(sorted({k[0] for k in self.isolated}))

    def throughput(self, model: str, gpu_type: str, num_gpus: int = 1) -> float:
        """Isolated steps/s; KeyError naming what exists when the combination is absent."""
        try:
            return self.isolated[(model, num_gpus, gpu_type)]
        except KeyError:
            raise KeyError(
                f"no throughput for model={model!r}, num_gpus={num_gpus}, gpu_type={gpu_type!r}; "
                f"gpu types: {', '.join(self.gpu_types)}; models: {len(self.models)} (see .models)"
            ) from None

    def matrix(self, num_gpus: int = 1, gpu_types=None):
        """``(models, gpu_types, array)`` of isolated steps/s; NaN where not measured."""
        gpu_types = tuple(gpu_types or self.gpu_types)
        models = self.models
        out = np.full((len(models), len(gpu_types)), np.nan)
        for i, m in enumerate(models):
            for j, g in enumerate(gpu_types):
                out[i, j] = self.isolated.get((m, num_gpus, g), np.nan)
        return models, gpu_types, out


_GAVEL = "gavel/simulation_throughputs.json"
_MAX_GAVEL_BYTES = 64 * 2**20  # the public file is 1.2 MB
_MAX_KEY_CHARS = 200
_MAX_RATE = 1e6  # steps/s; the public file's fastest is about 700


def _job_key(p: Path, where: str, key: str) -> Job:
    job = None
    if len(key) <= _MAX_KEY_CHARS:  # literal_eval of a huge or deeply nested key is costly
        try:
            job = ast.literal_eval(key)  # literal_eval, never eval: the file is data
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            job = None
    if not (isinstance(job, tuple) and len(job) == 2 and isinstance(job[0], str)
            and isinstance(job[1], int) and not isinstance(job[1], bool) and 1 <= job[1] <= MAX_GPUS):
        raise ValueError(f"{p}: {where}: key {excerpt(key)} is not \"('<model>', <num_gpus>)\" with "
                         f"1 <= num_gpus <= {MAX_GPUS:,}")
    return job


def _rate(p: Path, where: str, value) -> float:
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value < 0
            or value > _MAX_RATE):
        raise ValueError(f"{p}: {where}: expected a throughput >= 0 and <= {_MAX_RATE:g} (steps/s), "
                         f"got {excerpt(value)}")
    return float(value)


def read_regular_file(p, max_bytes: int) -> bytes:
    """The bytes of ``p``, a regular file of at most ``max_bytes``; ValueError naming the file
    otherwise (a FIFO, a directory, a device, too large). Never blocks on a FIFO."""
    import stat

    try:
        # O_NONBLOCK (POSIX only; Windows has no FIFOs to wait on), O_BINARY (Windows only).
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        raise ValueError(f"{p}: cannot read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{p}: not a regular file")
        if st.st_size > max_bytes:
            raise ValueError(f"{p}: {st.st_size:,} bytes, more than the {max_bytes:,} this file may be")
        return f.read(max_bytes + 1)


def _read_json(p: Path, max_bytes: int):
    """The JSON document in ``p``: a regular file of at most ``max_bytes``, UTF-8, not nested past
    the interpreter's recursion limit; ValueError naming the file otherwise (never blocks on a FIFO)."""
    raw = read_regular_file(p, max_bytes)

    def no_duplicates(pairs):  # json keeps the last copy of a key silently
        obj = {}
        for k, v in pairs:
            if k in obj:
                raise ValueError(f"{p}: key {excerpt(k)} appears twice in one object")
            obj[k] = v
        return obj

    try:
        return json.loads(raw.decode("utf-8"), object_pairs_hook=no_duplicates)
    except UnicodeDecodeError as e:
        raise ValueError(f"{p}: byte {e.start}: not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{p}: line {e.lineno}, column {e.colno}: invalid JSON: {e.msg}") from None
    except RecursionError:
        raise ValueError(f"{p}: JSON nested too deeply") from None


def load_gavel_throughputs(path=None) -> GavelThroughputs:
    """Load Gavel's ``simulation_throughputs.json``.

    Layout: ``{gpu_type: {"('<model>', <n>)": {"null": isolated, "('<other>', <m>)": [self, other]}}}``.
    Keys are parsed with ``ast.literal_eval``.
    """
    p = trace_path(_GAVEL, path)
    data = _read_json(p, _MAX_GAVEL_BYTES)
    if not isinstance(data, dict):
        raise ValueError(f"{p}: top level must be an object {{gpu_type: ...}}, got {type(data).__name__}")
    isolated, packed = {}, {}
    for gpu_type, jobs in data.items():
        if not isinstance(jobs, dict):
            raise ValueError(f"{p}: [{excerpt(gpu_type)}]: expected an object of jobs, got {type(jobs).__name__}")
        for key, entry in jobs.items():
            where = f"[{excerpt(gpu_type)}][{excerpt(key)}]"
            model, n = _job_key(p, where, key)
            if not isinstance(entry, dict) or "null" not in entry:
                raise ValueError(f"{p}: {where}: expected an object with a \"null\" (isolated) entry")
            isolated[(model, n, gpu_type)] = _rate(p, where + "['null']", entry["null"])
            for other_key, pair in entry.items():
                if other_key == "null":
                    continue
                w = f"{where}[{excerpt(other_key)}]"
                other = _job_key(p, w, other_key)
                if not isinstance(pair, list) or len(pair) != 2:
                    raise ValueError(f"{p}: {w}: expected [self steps/s, other steps/s], got {excerpt(pair)}")
                packed[(gpu_type, (model, n), other)] = (_rate(p, w, pair[0]), _rate(p, w, pair[1]))
    return GavelThroughputs(isolated, packed, tuple(data), p)
