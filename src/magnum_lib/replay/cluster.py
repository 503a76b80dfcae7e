"""The replayed cluster: nodes of G GPUs, each node of one GPU type.

GPUs are numbered node by node (node 0's GPUs first). Each GPU holds 1000 milli-GPU
of capacity; whole-GPU jobs take a GPU with all 1000 free, shared (Alibaba) pods take
``gpu_milli`` of one GPU.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from magnum_lib.base.validate import ParameterError, check_int
from magnum_lib.replay.jobs import ReplayJobs

__all__ = ["ReplayCluster"]


@dataclass(frozen=True, eq=False)
class ReplayCluster:
    """``node_gpus[k]`` GPUs of type ``type_names[node_type[k]]`` on node ``k``."""

    node_gpus: np.ndarray
    node_type: np.ndarray
    type_names: tuple
    name: str = ""

    def __post_init__(self):
        g = np.asarray(self.node_gpus, dtype=np.int64)
        t = np.asarray(self.node_type, dtype=np.int64)
        if g.ndim != 1 or g.size == 0 or g.min() < 1:
            raise ParameterError("nodes", "must be at least one node with >= 1 GPU")
        if t.shape != g.shape or t.min() < 0 or t.max() >= len(self.type_names):
            raise ParameterError("node_type", "must give a valid type for every node")
        object.__setattr__(self, "node_gpus", g)
        object.__setattr__(self, "node_type", t)
        object.__setattr__(self, "type_names", tuple(self.type_names))

    # ---------------------------------------------------------------- builders
    @classmethod
    def uniform(cls, nodes: int, gpus_per_node: int, gpu_type: str = "gpu", name: str = ""):
        nodes = check_int("nodes", nodes, 1, 1_000_000)
        gpus_per_node = check_int("gpus_per_node", gpus_per_node, 1, 1024)
        return cls(np.full(nodes, gpus_per_node), np.zeros(nodes, np.int64), (gpu_type,),
                   name or f"{nodes}x{gpus_per_node}")

    @classmethod
    def from_counts(cls, gpus_by_type: dict, gpus_per_node: int = 1, name: str = ""):
        """E.g. ``{"v100": 36, "p100": 36, "k80": 36}`` (Gavel's clusters), in that type order."""
        if not gpus_by_type:
            raise ParameterError("gpus_by_type", "must name at least one GPU type")
        gpus_per_node = check_int("gpus_per_node", gpus_per_node, 1, 1024)
        sizes, types = [], []
        for t, (tname, count) in enumerate(gpus_by_type.items()):
            count = check_int(f"gpus_by_type[{tname!r}]", count, 0, 10_000_000)
            full, rest = divmod(count, gpus_per_node)
            sizes += [gpus_per_node] * full + ([rest] if rest else [])
            types += [t] * (full + (1 if rest else 0))
        return cls(np.array(sizes), np.array(types), tuple(gpus_by_type), name or "hetero")

    @classmethod
    def philly_vc(cls, vc: str, gpus_per_node: int = 8, path=None, min_gpus: int = 1):
        """A Philly virtual cluster with its node count from Helios' ``philly_vc.csv``.

        VCs absent from that table (four with 18 jobs in all) get the fewest nodes
        holding ``min_gpus`` GPUs.
        """
        from magnum_lib.workload.jobtraces import load_philly_vc_sizes

        sizes = load_philly_vc_sizes(path)
        nodes = sizes.get(str(vc), max(1, math.ceil(min_gpus / gpus_per_node)))
        return cls.uniform(nodes, gpus_per_node, "philly", name=f"philly-{vc}")

    @classmethod
    def alibaba(cls, path=None):
        """The Alibaba openb GPU nodes (1,213 nodes, 6,212 GPUs of 7 models)."""
        from magnum_lib.workload.traces import load_alibaba_nodes

        n = load_alibaba_nodes(path)
        return cls(np.asarray(n.gpu), np.asarray(n.model_code), n.model_names, "alibaba-openb")

    def take(self, index, name: str = "") -> ReplayCluster:
        """The nodes at ``index`` (ints or a boolean mask), renumbered in that order, e.g.
        every 8th Alibaba node: ``c.take(np.arange(0, c.nodes, 8))``."""
        arr = np.asarray(index)
        idx = np.flatnonzero(arr) if arr.dtype == bool else arr.astype(np.int64).reshape(-1)
        if idx.size == 0 or idx.min() < 0 or idx.max() >= self.nodes:
            raise ParameterError("index", f"must pick at least one of the nodes 0..{self.nodes - 1}")
        return ReplayCluster(self.node_gpus[idx], self.node_type[idx], self.type_names,
                             name or f"{self.name}[{idx.size} nodes]")

    # ---------------------------------------------------------------- derived
    @property
    def nodes(self) -> int:
        return int(self.node_gpus.size)

    @property
    def total_gpus(self) -> int:
        return int(self.node_gpus.sum())

    @property
    def gpu_node(self) -> np.ndarray:
        """Node of every GPU."""
        return np.repeat(np.arange(self.nodes), self.node_gpus)

    @property
    def gpu_type(self) -> np.ndarray:
        """Type code of every GPU."""
        return self.node_type[self.gpu_node]

    def gpus_of_type(self, t: int) -> int:
        return int(self.node_gpus[self.node_type == t].sum())

    def __repr__(self) -> str:
        kinds = ", ".join(f"{self.gpus_of_type(t)} {n}" for t, n in enumerate(self.type_names))
        return f"ReplayCluster({self.name!r}, {self.nodes} nodes, {kinds})"


def check_replay_inputs(jobs, cluster) -> None:
    """``jobs`` must be :class:`ReplayJobs` and ``cluster`` a :class:`ReplayCluster` (ParameterError)."""
    if not isinstance(jobs, ReplayJobs):
        raise ParameterError("jobs", f"must be ReplayJobs (see make_jobs), got {type(jobs).__name__}")
    if not isinstance(cluster, ReplayCluster):
        raise ParameterError("cluster", f"must be a ReplayCluster, got {type(cluster).__name__}")
