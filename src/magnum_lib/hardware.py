"""Accelerator catalog and roofline cost model.

The catalog is ``magnum_lib/data/hardware.yaml``, shipped inside the package (package
data, found with importlib.resources: ``_resources.data_path``), so a source checkout, the
editable install and a plain wheel read the same file. Which file is read:
``load_catalog(path)`` if a path is given, else the environment variable
``MAGNUM_HARDWARE_YAML``, else the shipped one. One file, one place: no second copy to
drift out of step.

Cost model (roofline): a request needing ``flops`` operations and moving ``bytes_moved``
bytes through device memory takes::

    time = max(flops / (peak[precision] * efficiency), bytes_moved / mem_bandwidth)

It is *compute-bound* when the first term is the larger (ties count as compute-bound),
*memory-bound* otherwise. Energy is ``power * time`` with ``power`` the TDP by default:
the assumption is that a device draws its TDP while busy, an upper bound (real draw is
lower, and idle draw, which this model leaves out, is paid whether or not a request runs).
Pass ``power_w`` to model another draw.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt
import yaml

from magnum_lib._resources import data_path
from magnum_lib.units import Interconnect, parse_bandwidth, parse_interconnect, parse_size

__all__ = [
    "PRECISIONS",
    "Accelerator",
    "Catalog",
    "Cost",
    "CostMatrix",
    "UnknownAcceleratorError",
    "default_catalog",
    "load_catalog",
    "request_cost",
    "cost_matrix",
    "DEFAULT_CATALOG_PATH",
]

PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8")
DEFAULT_CATALOG_PATH = data_path("hardware.yaml")
_ENV_PATH = "MAGNUM_HARDWARE_YAML"
_REFERENCE_DEVICE = "h100_sxm"  # the article states MTIA power and MI300X bandwidth relative to H100

_REQUIRED = ("name", "vendor", "memory", "memory_type", "mem_bandwidth", "peak_tflops", "tdp",
             "interconnect", "sources")
_OPTIONAL = ("aliases", "note", "article_claim", "cuda_cores", "cuda_cores_full_die")
_FIGURES = ("memory", "mem_bandwidth", "peak_tflops", "tdp", "interconnect", "cuda_cores",
            "cuda_cores_full_die")


class UnknownAcceleratorError(KeyError, ValueError):
    """An accelerator name not in the catalog (both a KeyError and a ValueError)."""

    def __str__(self) -> str:  # KeyError would print the message inside quotes
        return str(self.args[0])


@dataclass(frozen=True)
class Accelerator:
    """One accelerator type, all figures in base units.

    Attributes
    ----------
    key : str
        Canonical catalog key, e.g. ``"h100_sxm"``.
    name, vendor, memory_type : str
    memory_bytes : int
        Device memory in bytes (decimal: 80 GB = 80e9).
    mem_bandwidth_Bps : float
        Peak memory bandwidth in bytes/s.
    peak_flops : Mapping[str, float]
        Dense peak operations/s per precision; precisions the device lacks are absent.
    tdp_w : float
        Thermal design power in watts.
    interconnect : Interconnect
    sources : Mapping[str, str]
        Figure name -> public source (citation with URL).
    article_claim : Mapping or None
        The article's own figures for this device, if it gave any.
    facts : Mapping[str, int]
        Further sourced counts (``cuda_cores``, ``cuda_cores_full_die``).
    """

    key: str
    name: str
    vendor: str
    memory_bytes: int
    memory_type: str
    mem_bandwidth_Bps: float
    peak_flops: Mapping[str, float]
    tdp_w: float
    interconnect: Interconnect
    sources: Mapping[str, str]
    article_claim: Mapping[str, Any] | None = None
    aliases: tuple[str, ...] = ()
    facts: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    note: str = ""

    def __hash__(self) -> int:  # the mappings are not hashable; the key identifies a type
        return hash(self.key)

    def peak(self, precision: str) -> float:
        """Dense peak operations/s at ``precision``; ValueError naming both if absent."""
        p = _check_precision(precision)
        try:
            return self.peak_flops[p]
        except KeyError:
            raise ValueError(
                f"precision {p!r} is not available on {self.key} ({self.name}); "
                f"it has: {', '.join(self.peak_flops) or 'none'}") from None

    def ridge_point(self, precision: str = "bf16") -> float:
        """Arithmetic intensity (FLOP/byte) where compute and memory time are equal."""
        return self.peak(precision) / self.mem_bandwidth_Bps


def _check_precision(precision: object) -> str:
    p = precision.strip().lower() if isinstance(precision, str) else precision
    if not isinstance(p, str) or p not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; expected one of {', '.join(PRECISIONS)}")
    return p


# ---------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------

def _parse_accelerator(key: str, spec: object, references: Mapping[str, str]) -> Accelerator:
    where = f"hardware catalog: accelerators.{key}"
    if not isinstance(spec, dict):
        raise ValueError(f"{where}: expected a mapping of fields, got {type(spec).__name__}")
    missing = [f for f in _REQUIRED if f not in spec]
    unknown = [f for f in spec if f not in _REQUIRED + _OPTIONAL]
    if missing or unknown:
        raise ValueError(f"{where}: missing fields {missing}, unknown fields {unknown}; "
                         f"accepted: {', '.join(_REQUIRED + _OPTIONAL)}")
    peaks = spec["peak_tflops"]
    if not isinstance(peaks, dict) or set(peaks) != set(PRECISIONS):
        raise ValueError(f"{where}.peak_tflops: give every precision of {', '.join(PRECISIONS)} "
                         f"(null where the device has none), got {peaks!r}")
    peak_flops = {}
    for p in PRECISIONS:
        v = peaks[p]
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0 or not np.isfinite(v):
            raise ValueError(f"{where}.peak_tflops.{p}: expected a positive number of TFLOPS or null, got {v!r}")
        peak_flops[p] = float(v) * 1e12
    tdp = spec["tdp"]
    if isinstance(tdp, bool) or not isinstance(tdp, (int, float)) or not tdp > 0:
        raise ValueError(f"{where}.tdp: expected a positive number of watts, got {tdp!r}")
    sources = {}
    for fig in _FIGURES:
        if fig not in spec:
            continue
        ref = spec["sources"].get(fig)
        if ref not in references:
            raise ValueError(f"{where}.sources.{fig}: every figure needs a source from `references` "
                             f"({', '.join(references)}), got {ref!r}")
        sources[fig] = references[ref]
    claim = spec.get("article_claim")
    return Accelerator(
        key=key,
        name=str(spec["name"]),
        vendor=str(spec["vendor"]),
        memory_bytes=parse_size(spec["memory"], field=f"{where}.memory"),
        memory_type=str(spec["memory_type"]),
        mem_bandwidth_Bps=parse_bandwidth(spec["mem_bandwidth"], field=f"{where}.mem_bandwidth"),
        peak_flops=MappingProxyType(peak_flops),
        tdp_w=float(tdp),
        interconnect=parse_interconnect(spec["interconnect"], field=f"{where}.interconnect"),
        sources=MappingProxyType(sources),
        article_claim=MappingProxyType(dict(claim)) if claim else None,
        aliases=tuple(str(a).lower() for a in spec.get("aliases", ())),
        facts=MappingProxyType({f: int(spec[f]) for f in ("cuda_cores", "cuda_cores_full_die") if f in spec}),
        note=str(spec.get("note", "")),
    )


def load_catalog(path: str | os.PathLike[str] | None = None) -> Catalog:
    """Read the accelerator catalog.

    Parameters
    ----------
    path : path-like, optional
        A YAML file of the same form as ``data/hardware.yaml``. Default: the environment
        variable ``MAGNUM_HARDWARE_YAML``, else the shipped ``magnum_lib/data/hardware.yaml``.
    """
    path = Path(path or os.environ.get(_ENV_PATH) or DEFAULT_CATALOG_PATH)
    if not path.is_file():
        raise FileNotFoundError(
            f"hardware catalog not found at {path}; pass load_catalog(path=...) or set {_ENV_PATH} "
            "(unset, the catalog shipped in the package is read)")
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(doc, dict) or not isinstance(doc.get("accelerators"), dict) \
            or not isinstance(doc.get("references"), dict):
        raise ValueError(f"{path}: expected top-level mappings `references` and `accelerators`")
    accs = {str(k).lower(): _parse_accelerator(str(k).lower(), v, doc["references"])
            for k, v in doc["accelerators"].items()}
    return Catalog(accs, source_path=path)


@functools.lru_cache(maxsize=1)
def _cached_default(env_path: str | None) -> Catalog:
    return load_catalog(env_path)


def default_catalog() -> Catalog:
    """The default catalog, read once and cached (re-read if ``MAGNUM_HARDWARE_YAML`` changes)."""
    return _cached_default(os.environ.get(_ENV_PATH))


# ---------------------------------------------------------------------------
# Catalog
# ---------------------------------------------------------------------------

class Catalog(Mapping[str, Accelerator]):
    """Accelerators by canonical key, looked up case-insensitively, aliases included.

    ``catalog["H100"] is catalog["h100_sxm"]``; iteration yields canonical keys in file
    order; an unknown name raises :class:`UnknownAcceleratorError` listing the known ones.
    """

    def __init__(self, accelerators: Mapping[str, Accelerator], source_path: Path | None = None) -> None:
        self._accs = dict(accelerators)
        self.source_path = source_path
        self._names: dict[str, str] = {}
        for key, acc in self._accs.items():
            for name in (key, *acc.aliases):
                other = self._names.setdefault(name, key)
                if other != key:
                    raise ValueError(f"hardware catalog: name {name!r} is used by both {other} and {key}")

    def resolve(self, name: object) -> str:
        """Canonical key for a key or alias (any case)."""
        if isinstance(name, Accelerator):
            name = name.key
        key = self._names.get(str(name).strip().lower()) if isinstance(name, str) else None
        if key is None:
            known = ", ".join(f"{k} ({', '.join(a.aliases)})" if a.aliases else k for k, a in self._accs.items())
            raise UnknownAcceleratorError(f"unknown accelerator {name!r}; known: {known}")
        return key

    def __getitem__(self, name: object) -> Accelerator:
        return self._accs[self.resolve(name)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._accs)

    def __len__(self) -> int:
        return len(self._accs)

    def __repr__(self) -> str:
        return f"Catalog({', '.join(self._accs)})"

    def table(self) -> list[dict[str, Any]]:
        """One row per accelerator, in display units, for notebooks (``pandas.DataFrame(rows)``).

        Peaks are dense, in TFLOPS (``fp32_TFLOPS`` ... ``fp8_TFLOPS``) and, for integer
        arithmetic, in TOPS (``int8_TOPS``: operations, not floating-point ones); ``None``
        where the device has none.
        """
        rows = []
        for acc in self._accs.values():
            row: dict[str, Any] = {
                "key": acc.key, "name": acc.name, "vendor": acc.vendor,
                "memory_GB": acc.memory_bytes / 1e9, "memory_type": acc.memory_type,
                "bandwidth_GBps": acc.mem_bandwidth_Bps / 1e9,
            }
            for p in PRECISIONS:
                unit = "TOPS" if p.startswith("int") else "TFLOPS"
                row[f"{p}_{unit}"] = acc.peak_flops[p] / 1e12 if p in acc.peak_flops else None
            row["tdp_W"] = acc.tdp_w
            row["interconnect"] = acc.interconnect.name
            row["ridge_bf16_flop_per_byte"] = acc.ridge_point("bf16") if "bf16" in acc.peak_flops else None
            rows.append(row)
        return rows

    def claims(self) -> list[dict[str, Any]]:
        """The article's figures beside the public ones.

        Rows: ``device, claim, article, public, ratio (public / article or None), unit, basis,
        precision``. ``precision`` names the peak a ``peak_tflops`` row compares with (dense
        ``"bf16"``, the one precision every compared device has; None on other rows): say it
        wherever the ratio is shown, since the H100's dense FP8 peak is twice its BF16 one.
        ``fleet_cuda_cores`` compares the article's product with the article's own two
        inputs multiplied out (18,432 x 200,000).
        """
        ref = self[_REFERENCE_DEVICE] if _REFERENCE_DEVICE in self._names else None

        def needs_ref() -> Accelerator:
            if ref is None:
                raise ValueError(f"claims relative to H100 need {_REFERENCE_DEVICE!r} in the catalog")
            return ref

        rows = []
        for acc in self._accs.values():
            claim = acc.article_claim or {}
            for name, article in claim.items():
                public: Any
                if name == "peak_tflops":
                    public, unit, basis = acc.peak_flops.get("bf16", float("nan")) / 1e12, "TFLOPS", \
                        "dense BF16 peak, " + acc.sources["peak_tflops"]
                elif name == "cuda_cores":
                    public, unit, basis = acc.facts["cuda_cores"], "cores", \
                        f"{acc.name}; {acc.facts.get('cuda_cores_full_die')} is the full die, " \
                        + acc.sources["cuda_cores"]
                elif name == "fleet_cuda_cores":
                    public, unit, basis = claim["cuda_cores"] * claim["fleet_gpus"], "cores", \
                        f"{claim['cuda_cores']:,} x {claim['fleet_gpus']:,} multiplied out"
                elif name == "bandwidth_vs_h100":
                    public, unit, basis = acc.mem_bandwidth_Bps / needs_ref().mem_bandwidth_Bps, "x H100", \
                        "memory bandwidth ratio of the datasheets"
                elif name == "power_vs_h100":
                    public, unit, basis = acc.tdp_w / needs_ref().tdp_w, "x H100", "TDP ratio of the datasheets"
                elif name == "memory":
                    article = parse_size(article) / 1e9
                    public, unit, basis = acc.memory_bytes / 1e9, "GB", acc.sources["memory"]
                elif name == "memory_type":
                    public, unit, basis = acc.memory_type, "", acc.sources["memory"]
                else:
                    continue  # an input to another claim (fleet_gpus), not a claim itself
                ratio = (public / article if isinstance(public, (int, float)) and article else None)
                rows.append({"device": acc.key, "claim": name, "article": article, "public": public,
                             "ratio": ratio, "unit": unit, "basis": basis,
                             "precision": "bf16" if name == "peak_tflops" else None})
        return rows


# ---------------------------------------------------------------------------
# Roofline cost model
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Cost:
    """Time and energy of request(s) on one device.

    ``time_s``/``energy_j`` are floats for scalar inputs, arrays for array inputs;
    ``bound`` is ``"compute"`` or ``"memory"`` (an array of those for array inputs).
    """

    time_s: float | np.ndarray
    energy_j: float | np.ndarray
    bound: str | np.ndarray


@dataclass(frozen=True)
class CostMatrix:
    """Costs of many requests on many device types.

    Attributes
    ----------
    device_keys : tuple[str, ...]
        Column order.
    time_s, energy_j : ndarray, shape (n_requests, n_devices)
        ``inf`` where the device lacks the precision and ``missing="inf"``.
    compute_bound : ndarray of bool, same shape
    """

    device_keys: tuple[str, ...]
    time_s: np.ndarray
    energy_j: np.ndarray
    compute_bound: np.ndarray


def _nonneg_array(values: npt.ArrayLike, name: str) -> npt.NDArray[np.float64]:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number or an array of numbers, got {values!r}") from None
    bad = ~np.isfinite(arr) | (arr < 0)
    if bad.any():
        idx = np.argwhere(bad)[0]
        where = f" at index {tuple(int(i) for i in idx)}" if arr.ndim else ""
        raise ValueError(f"{name} must be finite and >= 0; got {float(arr[tuple(idx)])!r}{where}")
    return arr


def _check_efficiency(eff: object, name: str = "efficiency") -> float:
    if isinstance(eff, bool) or not isinstance(eff, (int, float, np.floating, np.integer)) \
            or not (0.0 < float(eff) <= 1.0):
        raise ValueError(f"{name} must be a number in (0, 1], got {eff!r}")
    return float(eff)


def _device(device: Accelerator | str, catalog: Catalog | None) -> Accelerator:
    if isinstance(device, Accelerator):
        return device
    return (catalog or default_catalog())[device]


def request_cost(device: Accelerator | str, flops: npt.ArrayLike, bytes_moved: npt.ArrayLike, precision: str = "bf16", efficiency: float = 1.0,
                 power_w: float | None = None, catalog: Catalog | None = None) -> Cost:
    """Roofline time and energy of request(s) on one device.

    Parameters
    ----------
    device : Accelerator or str
        An accelerator or a catalog key / alias (``"h100"``).
    flops : float or array_like
        Operations each request needs (>= 0).
    bytes_moved : float or array_like
        Bytes each request reads and writes in device memory (>= 0); broadcast with ``flops``.
    precision : str
        One of :data:`PRECISIONS` the device supports.
    efficiency : float in (0, 1]
        Fraction of peak compute achieved (memory bandwidth is taken at peak).
    power_w : float, optional
        Draw while busy, in watts; default the TDP.
    catalog : Catalog, optional
        Where to look ``device`` up; default :func:`default_catalog`.

    Returns
    -------
    Cost
        ``time_s = max(flops / (peak * efficiency), bytes_moved / bandwidth)``,
        ``energy_j = power_w * time_s``, and which bound is active.
    """
    acc = _device(device, catalog)
    peak = acc.peak(precision)
    eff = _check_efficiency(efficiency)
    power = acc.tdp_w if power_w is None else float(_nonneg_array(power_w, "power_w"))
    f = _nonneg_array(flops, "flops")
    b = _nonneg_array(bytes_moved, "bytes_moved")
    t_compute = f / (peak * eff)
    t_memory = b / acc.mem_bandwidth_Bps
    time = np.maximum(t_compute, t_memory)
    bound = np.where(t_compute >= t_memory, "compute", "memory")
    if time.ndim == 0:
        return Cost(float(time), float(time * power), str(bound))
    return Cost(time, time * power, bound)


def cost_matrix(devices: Catalog | Iterable[Accelerator | str], flops: npt.ArrayLike, bytes_moved: npt.ArrayLike,
                precision: str = "bf16", efficiency: float | Mapping[str, float] = 1.0,
                missing: str = "raise", catalog: Catalog | None = None) -> CostMatrix:
    """Roofline cost of every request on every device type (the dispatcher's table).

    Parameters
    ----------
    devices : Catalog or iterable of (Accelerator or str)
        Column order of the result.
    flops, bytes_moved : array_like, shape (n_requests,)
    precision : str
    efficiency : float or Mapping[str, float]
        One value for all, or per device key / alias.
    missing : {"raise", "inf"}
        When a device lacks ``precision``: raise, or give it infinite time and energy.
    """
    if missing not in ("raise", "inf"):
        raise ValueError(f"missing must be 'raise' or 'inf', got {missing!r}")
    if isinstance(devices, Catalog):
        catalog, devices = devices, list(devices.values())
    if isinstance(devices, (str, Accelerator)) or not isinstance(devices, Iterable):
        raise TypeError(f"devices must be a Catalog or a list of accelerators/keys, got {devices!r}")
    accs = [_device(d, catalog) for d in devices]
    if not accs:
        raise ValueError("devices is empty; give at least one accelerator")
    p = _check_precision(precision)
    f = np.atleast_1d(_nonneg_array(flops, "flops"))
    b = np.atleast_1d(_nonneg_array(bytes_moved, "bytes_moved"))
    if f.ndim != 1 or b.ndim != 1:
        raise ValueError(f"flops and bytes_moved must be 1-D, got shapes {f.shape} and {b.shape}")
    f, b = np.broadcast_arrays(f, b)
    if isinstance(efficiency, Mapping):
        cat = catalog or default_catalog()
        effs = {cat.resolve(k): _check_efficiency(v, f"efficiency[{k!r}]") for k, v in efficiency.items()}
        eff = np.array([effs.get(a.key, 1.0) for a in accs])
    else:
        eff = np.full(len(accs), _check_efficiency(efficiency))
    has = np.array([p in a.peak_flops for a in accs])
    if missing == "raise" and not has.all():
        accs[int(np.argmin(has))].peak(p)  # raises the error naming device and precision
    peak = np.array([a.peak_flops.get(p, np.nan) for a in accs])
    bw = np.array([a.mem_bandwidth_Bps for a in accs])
    tdp = np.array([a.tdp_w for a in accs])
    with np.errstate(invalid="ignore"):
        t_compute = f[:, None] / (peak * eff)[None, :]
    t_memory = b[:, None] / bw[None, :]
    time = np.where(has[None, :], np.maximum(t_compute, t_memory), np.inf)
    compute_bound = has[None, :] & (t_compute >= t_memory)
    return CostMatrix(tuple(a.key for a in accs), time, time * tdp[None, :], compute_bound)


# Device fabrics (a device either has one of these links or not); PCIe, Ethernet and
# InfiniBand are node-level links any host can carry, so they are taken as written.
_FABRICS = {"nvlink": "NVLink", "infinity_fabric": "Infinity Fabric"}


def _fabric(link_name: str) -> str | None:
    return next((f for f in _FABRICS if link_name.startswith(f)), None)


def device_link(device: Accelerator | str, requested: object, catalog: Catalog | None = None) -> tuple[Interconnect, str | None]:
    """The link a request for ``requested`` really gets on ``device``, and a note if it differs.

    The article asks for ``nvlink_3`` on an H100 (which has NVLink 4) and on an MTIA (which
    attaches over PCIe, no NVLink). A device fabric (NVLink, Infinity Fabric) the device
    lacks is replaced by the link the catalog says it has, and the note says so; node-level
    links (PCIe, Ethernet, InfiniBand) are returned as asked, without a note.

    Returns ``(link, note)``: ``note`` is None when the device has what was asked.
    """
    from magnum_lib.units import format_bandwidth

    acc = _device(device, catalog)
    want, have = parse_interconnect(requested), acc.interconnect
    fabric = _fabric(want.name)
    if want.name == have.name or fabric is None:
        return want, None
    bw = f"{format_bandwidth(have.per_direction_Bps)} per direction"
    gen, _, whose = want.description.split(":")[0].partition(" (")
    asked = f"{want.name} ({gen}, the {whose.rstrip(')')}'s)" if whose else want.name
    if _fabric(have.name) == fabric:
        note = f"{acc.key} has {have.name} ({bw}), not {asked}; {have.name} is used"
    else:
        note = f"{acc.key} has no {_FABRICS[fabric]}: its link is {have.name} ({bw}), not {asked}; {have.name} is used"
    return have, note
