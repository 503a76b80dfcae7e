"""Model behind the catalog explorer (notebook 00): public figures, the article's, a roofline.

No widget code: the explorer, notebook 00 and the tests call :func:`evaluate`.
Units in the results: seconds, joules, FLOP/s, bytes, FLOP/byte.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from magnum_lib import hardware


def roofline(acc: hardware.Accelerator, precision: str, intensity) -> np.ndarray:
    """Attainable FLOP/s at arithmetic ``intensity`` (FLOP/byte): min(peak, intensity x bandwidth)."""
    i = np.asarray(intensity, dtype=float)
    return np.minimum(acc.peak(precision), i * acc.mem_bandwidth_Bps)


def spec_rows(acc: hardware.Accelerator) -> list[tuple[str, str]]:
    """The device's public figures in display units, (label, value) pairs."""
    rows = [("memory", f"{acc.memory_bytes / 1e9:g} GB {acc.memory_type}"),
            ("memory bandwidth", f"{acc.mem_bandwidth_Bps / 1e9:,.0f} GB/s")]
    for p in ("bf16", "fp8", "int8"):
        if p in acc.peak_flops:
            unit = "TOPS" if p == "int8" else "TFLOPS"
            rows.append((f"dense {p.upper()} peak", f"{acc.peak_flops[p] / 1e12:,.1f} {unit}"))
    rows.append(("TDP", f"{acc.tdp_w:g} W"))
    return rows


def claim_rows(catalog: hardware.Catalog, key: str) -> list[dict]:
    """The article's claims about device ``key`` beside the public figures (``Catalog.claims`` rows)."""
    key = catalog.resolve(key)
    return [row for row in catalog.claims() if row["device"] == key]


@dataclass(frozen=True)
class RequestScenario:
    """One request (``flops``, ``bytes_moved``, ``precision``) on one device.

    ``cost`` is the roofline :class:`magnum_lib.hardware.Cost`, or None with ``error``
    set when the device lacks the precision. ``others`` maps every device key that has
    the precision to its time in seconds, so the fastest type is visible.
    """

    device: str
    flops: float
    bytes_moved: float
    precision: str
    intensity: float
    ridge: float
    cost: hardware.Cost | None
    error: str
    others: dict

    @property
    def achieved_flops(self) -> float:
        """Delivered FLOP/s = flops / time (NaN without a cost)."""
        if self.cost is None or self.cost.time_s == 0:
            return math.nan
        return self.flops / self.cost.time_s


def evaluate(catalog: hardware.Catalog, device: str, flops: float, bytes_moved: float,
             precision: str = "bf16") -> RequestScenario:
    """Cost one request on ``device`` with the roofline model, and on every other device.

    Parameters
    ----------
    catalog : Catalog
    device : str
        Catalog key or alias.
    flops : float
        Operations the request needs (> 0).
    bytes_moved : float
        Bytes it moves through device memory (> 0).
    precision : str
        One of ``hardware.PRECISIONS``.
    """
    for name, value in (("flops", flops), ("bytes_moved", bytes_moved)):
        if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool) \
                or not math.isfinite(value) or value <= 0:
            raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    acc = catalog[device]
    intensity = float(flops) / float(bytes_moved)
    others = {}
    for key, other in catalog.items():
        if precision in other.peak_flops:
            others[key] = hardware.request_cost(other, flops, bytes_moved, precision).time_s
    try:
        cost = hardware.request_cost(acc, flops, bytes_moved, precision)
        ridge, error = acc.ridge_point(precision), ""
    except ValueError as exc:
        cost, ridge, error = None, math.nan, str(exc)
    return RequestScenario(acc.key, float(flops), float(bytes_moved), precision, intensity, ridge,
                           cost, error, others)
