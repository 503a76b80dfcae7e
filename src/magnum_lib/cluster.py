"""Cluster topology as a structure of arrays: regions > cells > nodes > devices.

A fleet of 600,000 GPUs held as 600,000 Python objects costs hundreds of megabytes and
is slow to scan; held as a handful of numpy arrays of the narrowest safe dtype it costs
about 14 bytes per device. Layout (every level contiguous, so each parent owns a range
of children, CSR style):

========================  ================  ============================================
array                     dtype             meaning
========================  ================  ============================================
``device_node``           int32             node of each device
``device_type``           uint8             code into ``type_keys`` (catalog key)
``device_free_memory``    int64             free device memory, bytes (starts full)
``node_cell``             int32             cell of each node
``node_region``           uint8 (uint16)    region of each node (uint16 beyond 256)
``node_type``             uint8             nodes are homogeneous, like an 8-GPU server
``node_device_offset``    int32 (int64)     devices of node n: [off[n], off[n+1])
``cell_region``           uint8 (uint16)    region of each cell
``cell_node_offset``      int32             nodes of cell c: [off[c], off[c+1])
``region_cell_offset``    int32             cells of region r: [off[r], off[r+1])
========================  ================  ============================================

Node types are dealt out by the ``mix`` (fractions of devices) with largest-remainder
rounding, then shuffled over the fleet with ``numpy.random.default_rng(seed)``, so the
same arguments always give the same cluster.
"""
from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from magnum_lib.base.validate import check_int
from magnum_lib.hardware import Catalog, default_catalog

__all__ = ["Cluster", "build_cluster", "DEFAULT_MIX"]

DEFAULT_MIX = {"h100_sxm": 0.5, "mi300x": 0.3, "mtia_v2": 0.2}
_MIX_TOLERANCE = 1e-9


@dataclass
class Cluster:
    """A built topology; see the module docstring for the arrays.

    ``type_keys[code]`` is the catalog key of device type ``code``;
    ``type_memory_bytes[code]`` its memory in bytes.
    """

    type_keys: tuple[str, ...]
    type_memory_bytes: np.ndarray
    device_node: np.ndarray
    device_type: np.ndarray
    device_free_memory: np.ndarray
    node_cell: np.ndarray
    node_region: np.ndarray
    node_type: np.ndarray
    node_device_offset: np.ndarray
    cell_region: np.ndarray
    cell_node_offset: np.ndarray
    region_cell_offset: np.ndarray
    seed: int = 0

    _ARRAYS = ("type_memory_bytes", "device_node", "device_type", "device_free_memory", "node_cell",
               "node_region", "node_type", "node_device_offset", "cell_region", "cell_node_offset",
               "region_cell_offset")

    # -- sizes ---------------------------------------------------------------
    @property
    def n_devices(self) -> int:
        return int(self.device_node.shape[0])

    @property
    def n_nodes(self) -> int:
        return int(self.node_cell.shape[0])

    @property
    def n_cells(self) -> int:
        return int(self.cell_region.shape[0])

    @property
    def n_regions(self) -> int:
        return int(self.region_cell_offset.shape[0] - 1)

    @property
    def nbytes(self) -> int:
        """Bytes held by all the arrays (numpy buffers; object headers are a few KB more)."""
        return int(sum(getattr(self, a).nbytes for a in self._ARRAYS))

    @property
    def bytes_per_device(self) -> float:
        return self.nbytes / self.n_devices

    @property
    def device_memory_bytes(self) -> np.ndarray:
        """Total memory of each device, bytes (a computed int64 array)."""
        return self.type_memory_bytes[self.device_type]

    # -- navigation ----------------------------------------------------------
    @staticmethod
    def _range(offsets: np.ndarray, i, what: str, n: int) -> np.ndarray:
        if isinstance(i, bool) or not isinstance(i, numbers.Integral) or not 0 <= i < n:
            raise IndexError(f"{what} must be an integer in [0, {n}), got {i!r}")
        return np.arange(offsets[i], offsets[i + 1], dtype=np.int64)

    def devices_of_node(self, node: int) -> np.ndarray:
        """Device indices of ``node``."""
        return self._range(self.node_device_offset, node, "node", self.n_nodes)

    def nodes_of_cell(self, cell: int) -> np.ndarray:
        """Node indices of ``cell``."""
        return self._range(self.cell_node_offset, cell, "cell", self.n_cells)

    def cells_of_region(self, region: int) -> np.ndarray:
        """Cell indices of ``region``."""
        return self._range(self.region_cell_offset, region, "region", self.n_regions)

    def nodes_of_region(self, region: int) -> np.ndarray:
        """Node indices of ``region`` (its cells' nodes are one contiguous range)."""
        cells = self.cells_of_region(region)
        if cells.size == 0:
            return cells
        return np.arange(self.cell_node_offset[cells[0]], self.cell_node_offset[cells[-1] + 1], dtype=np.int64)

    def devices_of_region(self, region: int) -> np.ndarray:
        """Device indices of ``region``."""
        nodes = self.nodes_of_region(region)
        if nodes.size == 0:
            return nodes
        return np.arange(self.node_device_offset[nodes[0]], self.node_device_offset[nodes[-1] + 1],
                         dtype=np.int64)

    # -- summaries -----------------------------------------------------------
    def counts_by_type(self) -> dict[str, int]:
        """Devices per catalog key."""
        counts = np.bincount(self.device_type, minlength=len(self.type_keys))
        return {k: int(c) for k, c in zip(self.type_keys, counts, strict=True)}

    def summary(self) -> dict:
        """Sizes, devices and memory by type, and the arrays' footprint."""
        counts = self.counts_by_type()
        return {
            "regions": self.n_regions,
            "cells": self.n_cells,
            "nodes": self.n_nodes,
            "devices": self.n_devices,
            "devices_by_type": counts,
            "memory_bytes_by_type": {k: int(counts[k]) * int(m) for k, m in zip(self.type_keys, self.type_memory_bytes, strict=True)},
            "free_memory_bytes": int(self.device_free_memory.sum()),
            "nbytes": self.nbytes,
            "bytes_per_device": self.bytes_per_device,
            "seed": self.seed,
        }


# ---------------------------------------------------------------------------
# Building
# ---------------------------------------------------------------------------

def _resolve_mix(mix, catalog: Catalog) -> tuple[tuple[str, ...], np.ndarray]:
    if not isinstance(mix, Mapping) or not mix:
        raise ValueError(f"mix must be a non-empty mapping of accelerator -> fraction of devices, got {mix!r}")
    if len(mix) > 256:
        raise ValueError(f"mix has {len(mix)} types; at most 256 fit the uint8 type code")
    keys, fracs = [], []
    for name, frac in mix.items():
        try:
            key = catalog.resolve(name)
        except KeyError as exc:
            raise ValueError(f"mix: {exc}") from None
        if key in keys:
            raise ValueError(f"mix: {name!r} names {key}, which appears twice")
        if isinstance(frac, bool) or not isinstance(frac, numbers.Real) or not np.isfinite(frac) or frac < 0:
            raise ValueError(f"mix[{name!r}] must be a finite fraction >= 0, got {frac!r}")
        keys.append(key)
        fracs.append(float(frac))
    total = sum(fracs)
    if abs(total - 1.0) > _MIX_TOLERANCE:
        raise ValueError(f"mix fractions must sum to 1 (within {_MIX_TOLERANCE}), got {total!r} from {dict(mix)!r}")
    return tuple(keys), np.array(fracs)


def _apportion(total: int, fracs: np.ndarray) -> np.ndarray:
    """Largest-remainder rounding: integers summing to ``total``, each within 1 of its share."""
    shares = fracs * total
    counts = np.floor(shares).astype(np.int64)
    short = total - int(counts.sum())
    # Stable order: largest remainder first, ties to the earlier type.
    order = np.argsort(-(shares - counts), kind="stable")
    counts[order[:short]] += 1
    return counts


def _small_index_dtype(n: int):
    return np.uint8 if n <= 2**8 else np.uint16 if n <= 2**16 else np.int32


def _offsets(counts: np.ndarray) -> np.ndarray:
    total = int(counts.sum())
    out = np.zeros(counts.size + 1, dtype=np.int32 if total < 2**31 else np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def _nodes_per_cell(n_cells: int, nodes_per_cell, total_devices, devices_per_node: int, regions: int) -> np.ndarray:
    """Nodes in each of the ``n_cells`` cells: ``nodes_per_cell`` each, or ``total_devices`` spread evenly."""
    if total_devices is None:
        nodes_per_cell = check_int("nodes_per_cell", 16 if nodes_per_cell is None else nodes_per_cell, 1)
        return np.full(n_cells, nodes_per_cell, dtype=np.int64)
    if nodes_per_cell is not None:
        raise ValueError("give either total_devices or nodes_per_cell, not both")
    total_devices = check_int("total_devices", total_devices, 1)
    if total_devices % devices_per_node:
        raise ValueError(f"total_devices={total_devices} is not a multiple of "
                         f"devices_per_node={devices_per_node}")
    n_nodes = total_devices // devices_per_node
    if n_nodes < n_cells:
        raise ValueError(f"total_devices={total_devices} gives {n_nodes} nodes, fewer than the "
                         f"{n_cells} cells ({regions} regions x {n_cells // regions}); every cell needs a node")
    # Spread nodes evenly: the first (n_nodes % n_cells) cells get one more.
    per_cell = np.full(n_cells, n_nodes // n_cells, dtype=np.int64)
    per_cell[: n_nodes % n_cells] += 1
    return per_cell


def build_cluster(regions: int = 15, cells_per_region: int = 4, nodes_per_cell: int | None = None,
                  devices_per_node: int = 8, mix: Mapping[str, float] | None = None, seed: int = 0,
                  total_devices: int | None = None, catalog: Catalog | None = None) -> Cluster:
    """Build a cluster topology.

    Parameters
    ----------
    regions, cells_per_region : int
        Fleet layout. Default 15 regions of 4 cells.
    nodes_per_cell : int, optional
        Nodes in every cell (default 16). Not allowed with ``total_devices``.
    devices_per_node : int
        Devices in every node (default 8, an 8-GPU server).
    mix : Mapping[str, float]
        Fraction of devices of each accelerator type (catalog keys or aliases); must sum
        to 1 within 1e-9. Default :data:`DEFAULT_MIX`.
    seed : int
        Seed for dealing node types over the fleet.
    total_devices : int, optional
        Build this many devices instead (e.g. the article's 600,000 in 15 regions): a
        multiple of ``devices_per_node``, nodes spread as evenly as possible over cells.
    catalog : Catalog, optional
        Where types are looked up; default :func:`magnum_lib.hardware.default_catalog`.
    """
    regions = check_int("regions", regions, 1)
    cells_per_region = check_int("cells_per_region", cells_per_region, 1)
    devices_per_node = check_int("devices_per_node", devices_per_node, 1)
    seed = check_int("seed", seed, 0)
    catalog = catalog or default_catalog()
    keys, fracs = _resolve_mix(DEFAULT_MIX if mix is None else mix, catalog)

    n_cells = regions * cells_per_region
    per_cell = _nodes_per_cell(n_cells, nodes_per_cell, total_devices, devices_per_node, regions)
    n_nodes = int(per_cell.sum())
    n_devices = n_nodes * devices_per_node
    if n_devices >= 2**31:
        raise ValueError(f"{n_devices} devices exceed the int32 device index; at most {2**31 - 1}")

    region_dtype = _small_index_dtype(regions)
    cell_region = np.repeat(np.arange(regions, dtype=region_dtype), cells_per_region)
    cell_node_offset = _offsets(per_cell)
    node_cell = np.repeat(np.arange(n_cells, dtype=np.int32), per_cell)
    node_region = cell_region[node_cell]

    # Types are dealt per node (a server holds one kind of accelerator), shares by devices.
    node_counts = _apportion(n_nodes, fracs)
    node_type = np.repeat(np.arange(len(keys), dtype=np.uint8), node_counts)
    node_type = np.random.default_rng(seed).permutation(node_type)

    node_device_offset = _offsets(np.full(n_nodes, devices_per_node, dtype=np.int64))
    device_node = np.repeat(np.arange(n_nodes, dtype=np.int32), devices_per_node)
    device_type = np.repeat(node_type, devices_per_node)
    type_memory = np.array([catalog[k].memory_bytes for k in keys], dtype=np.int64)

    return Cluster(
        type_keys=keys,
        type_memory_bytes=type_memory,
        device_node=device_node,
        device_type=device_type,
        device_free_memory=type_memory[device_type],
        node_cell=node_cell,
        node_region=node_region,
        node_type=node_type,
        node_device_offset=node_device_offset,
        cell_region=cell_region,
        cell_node_offset=cell_node_offset,
        region_cell_offset=_offsets(np.full(regions, cells_per_region, dtype=np.int64)),
        seed=int(seed),
    )
