"""What the Oracle sees every round: free devices per node, node groups, and pending jobs.

A :class:`Snapshot` is a structure of arrays (one entry per node, per group, per job), the
same shape as :class:`magnum_lib.cluster.Cluster`, so 50,000 nodes cost a few hundred KB.

The placement model every planner in this package shares (and the LP bound relaxes):

* Nodes are homogeneous servers: ``node_capacity`` devices of one type ``node_type``, of
  which ``node_free`` are free. Utilization is the busy share, ``1 - free / capacity``.
* A node belongs to one group (a rack or NVLink domain, a cell of ``build_cluster``).
  ``group_bandwidth[g]`` is the network bandwidth (GB/s, 10^9 bytes/s) a node of group
  ``g`` has to the rest of the fleet, where a job's peers (data, parameter servers,
  pipeline stages) live.
* A pending job needs ``job_demand`` devices of type ``job_type`` (``-1``: any type) on
  one node, and sends ``job_comm`` GB per step over its node's network.
  ``job_priority`` (>= 1) scales the penalty for leaving it unplaced.
* One pending job per node per round (the hint is a soft reservation of that node's
  free devices); multi-node gangs are not planned here: a job larger than every node is
  reported unplaceable with that reason.

NaN or infinite bandwidths and communication volumes are accepted (a real snapshot can
carry them); they make the cost of the affected placements non-finite and the planners
never use those. Negative values, bad shapes and out-of-range codes raise ``ValueError``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from magnum_lib.base.validate import ParameterError, check_int
from magnum_lib.cluster import build_cluster

__all__ = ["Snapshot", "make_snapshot", "draw_free", "ANY_TYPE", "BANDWIDTH_TIERS_GBPS", "COMM_LEVELS_GB",
           "NODE_STATE_SHARES", "MAX_SNAPSHOT_NODES", "MAX_SNAPSHOT_JOBS"]

ANY_TYPE = -1
# Network bandwidth per node out of its group, GB/s: 400 Gb/s Ethernet, 800 Gb/s
# InfiniBand, and an NVLink-switched domain reaching its peers over NVLink.
BANDWIDTH_TIERS_GBPS = (50.0, 100.0, 400.0)
COMM_LEVELS_GB = (0.0, 0.5, 2.0, 8.0)
# Shares of nodes that are idle, full, and partly used (binomial) in generated snapshots.
NODE_STATE_SHARES = (0.25, 0.25, 0.5)
#: The largest generated snapshot (:func:`make_snapshot`): a million nodes and a million
#: pending jobs, ten times the largest real clusters, a few hundred MB; checked before
#: anything is allocated.
MAX_SNAPSHOT_NODES = 1_000_000
MAX_SNAPSHOT_JOBS = 1_000_000


def _int_array(value, name: str, size: int | None, minimum: int) -> np.ndarray:
    a = np.asarray(value)
    if a.ndim != 1 or (size is not None and a.shape[0] != size):
        want = f"shape ({size},)" if size is not None else "a 1-D array"
        raise ParameterError(name, f"must be {want}, got shape {a.shape}")
    if a.size and (a.dtype.kind not in "iu" and not (a.dtype.kind == "f" and np.all(np.isfinite(a))
                                                      and np.all(a == np.round(a)))):
        raise ParameterError(name, f"must hold integers, got dtype {a.dtype}")
    a = a.astype(np.int64)
    if a.size and a.min() < minimum:
        raise ParameterError(name, f"must be >= {minimum} everywhere, got {int(a.min())}")
    return a


def _float_array(value, name: str, size: int | None) -> np.ndarray:
    a = np.asarray(value)
    if a.ndim != 1 or (size is not None and a.shape[0] != size):
        want = f"shape ({size},)" if size is not None else "a 1-D array"
        raise ParameterError(name, f"must be {want}, got shape {a.shape}")
    if a.size and a.dtype.kind not in "iuf":
        raise ParameterError(name, f"must hold numbers, got dtype {a.dtype}")
    a = a.astype(np.float64)
    if np.any(a < 0):  # NaN compares False: NaN and +inf pass, on purpose (see module doc)
        raise ParameterError(name, f"must be >= 0 (NaN and inf are allowed), got {float(a[a < 0][0])}")
    return a


@dataclass(frozen=True, eq=False)
class Snapshot:
    """Free devices, groups and pending jobs at ``time_s``; see the module docstring.

    Arrays are validated and copied to int64 / float64 on construction.
    """

    node_group: np.ndarray
    node_type: np.ndarray
    node_capacity: np.ndarray
    node_free: np.ndarray
    group_bandwidth: np.ndarray
    job_demand: np.ndarray
    job_type: np.ndarray
    job_comm: np.ndarray
    job_priority: np.ndarray
    type_keys: tuple = ()
    time_s: float = 0.0

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        group_bw = _float_array(self.group_bandwidth, "group_bandwidth", None)
        group = _int_array(self.node_group, "node_group", None, 0)
        n = group.shape[0]
        if n and group.max() >= group_bw.shape[0]:
            raise ParameterError("node_group", f"must be < len(group_bandwidth) = {group_bw.shape[0]}, "
                                               f"got {int(group.max())}")
        cap = _int_array(self.node_capacity, "node_capacity", n, 1)
        free = _int_array(self.node_free, "node_free", n, 0)
        if np.any(free > cap):
            i = int(np.flatnonzero(free > cap)[0])
            raise ParameterError("node_free", f"must be <= node_capacity, got {free[i]} > {cap[i]} at node {i}")
        ntype = _int_array(self.node_type, "node_type", n, 0)
        demand = _int_array(self.job_demand, "job_demand", None, 1)
        m = demand.shape[0]
        jtype = _int_array(self.job_type, "job_type", m, ANY_TYPE)
        comm = _float_array(self.job_comm, "job_comm", m)
        prio = _int_array(self.job_priority, "job_priority", m, 1)
        keys = tuple(str(k) for k in self.type_keys)
        n_types = max([len(keys), int(ntype.max()) + 1 if n else 0, int(jtype.max()) + 1 if m else 0])
        keys = keys + tuple(f"type{i}" for i in range(len(keys), n_types))
        if isinstance(self.time_s, bool) or not isinstance(self.time_s, (int, float)) or not math.isfinite(self.time_s):
            raise ParameterError("time_s", f"must be a finite number of seconds, got {self.time_s!r}")
        for name, value in [("node_group", group), ("node_type", ntype), ("node_capacity", cap),
                            ("node_free", free), ("group_bandwidth", group_bw), ("job_demand", demand),
                            ("job_type", jtype), ("job_comm", comm), ("job_priority", prio),
                            ("type_keys", keys), ("time_s", float(self.time_s))]:
            put(name, value)

    @property
    def n_nodes(self) -> int:
        return int(self.node_group.shape[0])

    @property
    def n_groups(self) -> int:
        return int(self.group_bandwidth.shape[0])

    @property
    def n_jobs(self) -> int:
        return int(self.job_demand.shape[0])

    @property
    def node_utilization(self) -> np.ndarray:
        """Busy share of each node's devices, ``1 - free / capacity`` (0..1)."""
        return 1.0 - self.node_free / self.node_capacity

    def with_jobs(self, demand, job_type=None, comm=None, priority=None) -> Snapshot:
        """The same nodes with other pending jobs (defaults: any type, no traffic, priority 1)."""
        demand = np.asarray(demand)
        m = demand.shape[0] if demand.ndim == 1 else -1
        return Snapshot(self.node_group, self.node_type, self.node_capacity, self.node_free,
                        self.group_bandwidth, demand,
                        np.full(max(m, 0), ANY_TYPE) if job_type is None else job_type,
                        np.zeros(max(m, 0)) if comm is None else comm,
                        np.ones(max(m, 0), dtype=np.int64) if priority is None else priority,
                        self.type_keys, self.time_s)

    def summary(self) -> dict:
        return {"nodes": self.n_nodes, "groups": self.n_groups, "jobs": self.n_jobs,
                "free_devices": int(self.node_free.sum()), "demand_devices": int(self.job_demand.sum()),
                "type_keys": list(self.type_keys), "time_s": self.time_s}


def draw_free(rng: np.random.Generator, capacity: np.ndarray, load: float) -> np.ndarray:
    """Free devices of nodes of ``capacity`` devices: idle, full or ``Binomial(capacity, load)`` busy.

    The three states have the shares :data:`NODE_STATE_SHARES`; used by
    :func:`make_snapshot` and by the churn model of :mod:`magnum_lib.planner.staleness`.
    """
    state = rng.choice(3, size=capacity.shape[0], p=list(NODE_STATE_SHARES))
    busy = np.where(state == 0, 0, np.where(state == 1, capacity, rng.binomial(capacity, load)))
    return capacity - busy


def make_snapshot(nodes: int, jobs: int, seed: int = 0, *, group_size: int = 32,
                  devices_per_node: int = 8, load: float = 0.5, any_type_share: float = 0.5,
                  mix=None, time_s: float = 0.0) -> Snapshot:
    """A seeded synthetic snapshot for the CLI, tests and notebooks.

    Parameters
    ----------
    nodes, jobs : int
        Nodes (1 .. :data:`MAX_SNAPSHOT_NODES`) and pending jobs (0 .. :data:`MAX_SNAPSHOT_JOBS`).
    seed : int
        Seeds both the topology (:func:`~magnum_lib.cluster.build_cluster`) and the draws.
    group_size : int
        Nodes per group (rack / NVLink domain); ``ceil(nodes / group_size)`` groups.
    devices_per_node : int
        Devices per node (default 8).
    load : float
        Mean busy share of the nodes that are neither idle nor full (0..1). A quarter of
        the nodes are fully free and a quarter fully busy, the rest binomial.
    any_type_share : float
        Share of jobs that accept any device type; the rest ask for one type.
    mix : Mapping[str, float], optional
        Device-type mix for ``build_cluster`` (default its ``DEFAULT_MIX``).

    Jobs need 1, 2, 4 or 8 devices (40/30/20/10 %), send 0, 0.5, 2 or 8 GB per step
    (40/30/20/10 %) and have priority 1, 2 or 3 (60/30/10 %); each group's bandwidth is one
    of :data:`BANDWIDTH_TIERS_GBPS` (40/40/20 %).
    """
    nodes = check_int("nodes", nodes, 1, MAX_SNAPSHOT_NODES)
    jobs = check_int("jobs", jobs, 0, MAX_SNAPSHOT_JOBS)
    seed = check_int("seed", seed, 0)
    group_size = check_int("group_size", group_size, 1)
    devices_per_node = check_int("devices_per_node", devices_per_node, 1, 1024)
    for name, v in (("load", load), ("any_type_share", any_type_share)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
            raise ParameterError(name, f"must be a number in [0, 1], got {v!r}")
    groups = -(-nodes // group_size)
    cluster = build_cluster(regions=1, cells_per_region=groups, total_devices=nodes * devices_per_node,
                            devices_per_node=devices_per_node, mix=mix, seed=seed)
    rng = np.random.default_rng(seed)
    cap = np.full(nodes, devices_per_node, dtype=np.int64)
    free = draw_free(rng, cap, load)
    bandwidth = rng.choice(np.array(BANDWIDTH_TIERS_GBPS), size=groups, p=[0.4, 0.4, 0.2])
    n_types = len(cluster.type_keys)
    demand = rng.choice(np.array([1, 2, 4, 8]), size=jobs, p=[0.4, 0.3, 0.2, 0.1])
    demand = np.minimum(demand, devices_per_node)
    jtype = np.where(rng.random(jobs) < any_type_share, ANY_TYPE, rng.integers(0, n_types, size=jobs))
    comm = rng.choice(np.array(COMM_LEVELS_GB), size=jobs, p=[0.4, 0.3, 0.2, 0.1])
    prio = rng.choice(np.array([1, 2, 3]), size=jobs, p=[0.6, 0.3, 0.1])
    return Snapshot(node_group=cluster.node_cell, node_type=cluster.node_type, node_capacity=cap,
                    node_free=free, group_bandwidth=bandwidth, job_demand=demand, job_type=jtype,
                    job_comm=comm, job_priority=prio, type_keys=cluster.type_keys, time_s=time_s)
