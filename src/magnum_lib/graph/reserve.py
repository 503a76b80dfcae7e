"""Pre-reservation: reserve a whole graph on one device before it runs.

Timeline model (one job alone on the device):

* layers run back to back in manifest order, the first at t = 0;
* a layer with a ``transfer`` sends its output over its interconnect afterwards, and
  the next layer starts when the transfer ends (``bytes / per-direction bandwidth``);
* memory held: under ``pre_reserve`` (static allocation) the whole graph's reservation,
  the sum of its layers, from t = 0 to the end; otherwise each layer's own memory from
  its start until the next layer starts (its output buffer lives until consumed).

``makespan`` is the end of the last layer (or of its transfer).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from magnum_lib.graph.manifest import Manifest
from magnum_lib.hardware import Catalog, default_catalog
from magnum_lib.units import parse_interconnect

__all__ = ["Reservation", "reserve", "transfer_ns"]


def transfer_ns(nbytes, interconnect) -> np.ndarray:
    """Nanoseconds to send ``nbytes`` over ``interconnect`` (rounded up; 0 bytes take 0 ns).

    ``interconnect`` is one link name (or None for no link, only valid with 0 bytes) or a
    sequence of them aligned with ``nbytes``.
    """
    nbytes = np.asarray(nbytes, dtype=np.int64)
    names = [interconnect] * nbytes.size if interconnect is None or isinstance(interconnect, str) \
        else list(interconnect)
    bw = np.array([parse_interconnect(n).per_direction_Bps if n else np.inf for n in names], dtype=np.float64)
    return np.ceil(nbytes.reshape(-1) / bw * 1e9).astype(np.int64).reshape(nbytes.shape)


@dataclass(frozen=True, eq=False)
class Reservation:
    """A graph reserved on one device, with its timeline.

    Attributes
    ----------
    job_id, device : str
        Job name and canonical device key.
    layer_names : tuple[str, ...]
    start_ns, end_ns : int64 arrays, one per layer
        When each layer computes (a Gantt chart draws ``start_ns`` and ``end_ns - start_ns``).
    memory_t_ns, memory_bytes : int64 arrays
        Memory held as a step function: ``memory_bytes[i]`` from ``memory_t_ns[i]`` to
        ``memory_t_ns[i + 1]`` (the last value holds until the makespan, then 0).
    peak_memory_bytes, makespan_ns, device_memory_bytes : int
    pre_reserve : bool
    """

    job_id: str
    device: str
    layer_names: tuple
    start_ns: np.ndarray
    end_ns: np.ndarray
    memory_t_ns: np.ndarray
    memory_bytes: np.ndarray
    peak_memory_bytes: int
    makespan_ns: int
    device_memory_bytes: int
    pre_reserve: bool

    @property
    def makespan_s(self) -> float:
        return self.makespan_ns / 1e9

    def to_dict(self) -> dict:
        """JSON-ready summary: seconds for times, bytes for memory."""
        return {
            "job_id": self.job_id, "device": self.device, "pre_reserve": self.pre_reserve,
            "peak_memory_bytes": self.peak_memory_bytes, "device_memory_bytes": self.device_memory_bytes,
            "makespan_s": self.makespan_s,
            "layers": [{"layer": n, "start_s": int(s) / 1e9, "end_s": int(e) / 1e9}
                       for n, s, e in zip(self.layer_names, self.start_ns, self.end_ns)],
        }


def reserve(manifest: Manifest, device=None, catalog: Catalog | None = None) -> Reservation:
    """Reserve ``manifest``'s whole graph on ``device`` (default its ``gpu_type``).

    Raises ValueError naming the device when the graph's peak memory does not fit (a
    manifest validated for its own ``gpu_type`` may not fit a smaller override).
    """
    if not isinstance(manifest, Manifest):
        raise TypeError(f"manifest must be a Manifest (see parse_manifest), got {type(manifest).__name__}")
    acc = (catalog or default_catalog())[device or manifest.gpu_type]
    layers = manifest.layers
    peak = manifest.peak_memory_bytes
    if peak > acc.memory_bytes:
        raise ValueError(f"device: {acc.key} has {acc.memory_bytes} bytes, the graph needs {peak}")
    runtime = np.array([layer.runtime_ns for layer in layers], dtype=np.int64)
    gap = transfer_ns([layer.transfer_bytes for layer in layers], [layer.interconnect for layer in layers])
    step = runtime + gap
    start = np.concatenate(([0], np.cumsum(step)[:-1])).astype(np.int64)
    end = start + runtime
    makespan = int(start[-1] + step[-1])
    if manifest.pre_reserve:
        mem_t, mem = np.array([0], np.int64), np.array([peak], np.int64)
    else:
        mem_t, mem = start.copy(), np.array([layer.memory_bytes for layer in layers], np.int64)
    return Reservation(manifest.job_id, acc.key, tuple(layer.name for layer in layers), start, end,
                       mem_t, mem, int(mem.max()), makespan, acc.memory_bytes, manifest.pre_reserve)
