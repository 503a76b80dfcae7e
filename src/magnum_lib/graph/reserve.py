"""Pre-reservation: reserve a whole graph on one device before it runs.

Timeline model (one job alone on the device):

* layers run back to back in manifest order, the first at t = 0;
* a layer with a ``transfer`` sends its output over its interconnect afterwards, and
  the next layer starts when the transfer ends (``bytes / per-direction bandwidth``);
  the link is the one the device really has: a fabric it lacks (``nvlink_3`` on an H100
  or an MTIA) is replaced by the device's link from the catalog, with a note;
* a layer with a bandwidth demand (``interconnect: 40GB/s``, the article's form) streams
  ``demand x runtime`` bytes while it computes; where the device's link carries less per
  direction, the layer is link-bound and holds the device ``runtime x demand / link``
  instead, with a note (so the timeline is what the device can do, not what was asked);
* memory held: under ``pre_reserve`` (static allocation) the whole graph's reservation,
  the sum of its layers, from t = 0 to the end; otherwise each layer's own memory from
  its start until the next layer starts (its output buffer lives until consumed).

``makespan`` is the end of the last layer (or of its transfer).

The two link rules live in :func:`layer_timing`, which
:func:`magnum_lib.graph.packing.jobs_from_manifests` uses too: a graph packed alone on a
device runs exactly as it is reserved there.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from magnum_lib.graph.manifest import Manifest
from magnum_lib.hardware import Catalog, default_catalog, device_link
from magnum_lib.units import format_bandwidth, format_duration, parse_interconnect

__all__ = ["Reservation", "reserve", "transfer_ns", "LayerTiming", "layer_timing"]


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
    link : str
        The device's link (hardware catalog), e.g. ``"pcie_5_x8"`` for an MTIA v2.
    declared_runtime_ns : int64 array
        Each layer's runtime as the manifest gave it (``end_ns - start_ns`` differs where
        the layer is link-bound).
    notes : tuple[str, ...]
        What the hardware really has where the manifest asked otherwise (a link the
        device lacks, a bandwidth above its link), one sentence each.
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
    link: str = ""
    declared_runtime_ns: np.ndarray | None = None
    notes: tuple = ()

    @property
    def makespan_s(self) -> float:
        return self.makespan_ns / 1e9

    def to_dict(self) -> dict:
        """JSON-ready summary: seconds for times, bytes for memory."""
        return {
            "job_id": self.job_id, "device": self.device, "pre_reserve": self.pre_reserve,
            "peak_memory_bytes": self.peak_memory_bytes, "device_memory_bytes": self.device_memory_bytes,
            "makespan_s": self.makespan_s, "link": self.link, "notes": list(self.notes),
            "layers": [{"layer": n, "start_s": int(s) / 1e9, "end_s": int(e) / 1e9,
                        "declared_runtime_s": int(d) / 1e9, "link_bound": bool(e - s > d)}
                       for n, s, e, d in zip(self.layer_names, self.start_ns, self.end_ns,
                                             self.declared_runtime_ns, strict=True)],
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
    declared = np.array([layer.runtime_ns for layer in layers], dtype=np.int64)
    timing = layer_timing(layers, acc)
    runtime, gap = timing.runtime_ns, timing.transfer_ns
    # Summed as Python ints: an int64 sum of huge layers would wrap before the comparison.
    if sum(map(int, runtime)) + sum(map(int, gap)) >= 2**62:  # reachable only with a bandwidth stretch on a slow link
        raise ValueError(f"device: on {acc.key} the graph would run past 2^62 ns; its link is too slow for it")
    step = runtime + gap
    start = np.concatenate(([0], np.cumsum(step)[:-1])).astype(np.int64)
    end = start + runtime
    makespan = int(start[-1] + step[-1])
    if manifest.pre_reserve:
        mem_t, mem = np.array([0], np.int64), np.array([peak], np.int64)
    else:
        mem_t, mem = start.copy(), np.array([layer.memory_bytes for layer in layers], np.int64)
    return Reservation(manifest.job_id, acc.key, tuple(layer.name for layer in layers), start, end,
                       mem_t, mem, int(mem.max()), makespan, acc.memory_bytes, manifest.pre_reserve,
                       acc.interconnect.name, declared, timing.notes)


@dataclass(frozen=True, eq=False)
class LayerTiming:
    """A chain of layers as one device runs it (see :func:`layer_timing`).

    Attributes
    ----------
    runtime_ns, transfer_ns : int64 arrays, one per layer
        How long each layer holds the device (its declared runtime, stretched where its
        bandwidth demand exceeds the device's link) and how long its output then takes to
        cross the link (0 without a transfer).
    links : tuple[str | None, ...]
        The link each layer's interconnect really is on the device (None: none).
    notes : tuple[str, ...]
        One sentence per difference between what was asked and what the device has.
    """

    runtime_ns: np.ndarray
    transfer_ns: np.ndarray
    links: tuple
    notes: tuple


def layer_timing(layers, acc) -> LayerTiming:
    """Each layer's time on accelerator ``acc`` (a catalog entry): the one rule that
    :func:`reserve` and :func:`magnum_lib.graph.packing.jobs_from_manifests` share, so a
    graph reserved alone and the same graph packed alone get the same timeline.

    * a bandwidth demand (``interconnect: 40GB/s``) above the link's per-direction rate
      makes the layer link-bound: it holds the device ``runtime x demand / link``
      (rounded up, never optimistic);
    * a transfer crosses the link the device has (:func:`magnum_lib.hardware.device_link`:
      a fabric it lacks is replaced by its own link) at that link's per-direction rate.

    Raises ValueError (``"device: ..."``) when one stretched layer would pass 2^62 ns.
    """
    have = acc.interconnect
    runtime, links, by_note = [], [], {}
    for i, layer in enumerate(layers):
        t = layer.runtime_ns
        if layer.bandwidth_Bps > have.per_direction_Bps:
            # demand x runtime bytes at the link's rate; ceil so the stretch is never optimistic
            stretched = math.ceil(t * layer.bandwidth_Bps / have.per_direction_Bps)
            if stretched >= 2**62:
                raise ValueError(f"device: on {acc.key} layer {layer.name} would run past 2^62 ns")
            by_note.setdefault(
                f"{layer.name} streams {format_bandwidth(layer.bandwidth_Bps)}, more than {acc.key}'s link "
                f"{have.name} carries ({format_bandwidth(have.per_direction_Bps)} per direction): link-bound, "
                f"{format_duration(t)} -> {format_duration(stretched)}", []).append(i)
            t = stretched
        runtime.append(t)
        link = None
        if layer.interconnect is not None:
            link, note = device_link(acc, layer.interconnect)
            link = link.name
            if note:
                by_note.setdefault(note, []).append(i)
        links.append(link)
    notes = tuple(f"job.graph[{', '.join(map(str, idx))}]: {note}" for note, idx in by_note.items())
    gap = transfer_ns([layer.transfer_bytes for layer in layers], links)
    return LayerTiming(np.array(runtime, dtype=np.int64), gap, tuple(links), notes)
