"""The node-side lease validator: a node checks a speculative lease against its true state.

:class:`NodeState` holds the truth for many nodes as arrays (free devices, device type,
memory per device, interconnect class, and a slot table of running jobs with priority,
devices, memory in use, lease expiry and start time). :func:`validate` checks one
:class:`~magnum_lib.regional.lease.Lease` and :meth:`NodeState.validate_arrays` a whole
batch with the compiled kernel (``_validator.pyx``; reference ``validator_ref.py``).

Per lease, atomically (nothing is changed unless the lease is accepted): unknown node,
expired, wrong device type, interconnect too weak, memory per device too small, then
devices. When too few devices are free and preemption is on, running jobs of strictly
lower priority are evicted, lowest priority first, if that frees enough; each victim is
checkpointed (cost = its memory in use per device / ``checkpoint_bandwidth``, devices in
parallel) and loses the work done
since its last periodic checkpoint (every ``checkpoint_interval``). Otherwise the lease
is refused with a reason from :data:`REASONS`.

Interconnect: a node satisfies a request for class X when it has X, or a faster class of
the same family (an ``nvlink_4`` node serves an ``nvlink_3`` lease; ``pcie_5`` serves
``pcie_4``); families never mix (NVLink does not stand in for Infinity Fabric).
"""
from __future__ import annotations

import numbers
from dataclasses import asdict, dataclass, field

import numpy as np

from magnum_lib import _backend
from magnum_lib.base.validate import ParameterError, check_int
from magnum_lib.hardware import Catalog, default_catalog
from magnum_lib.regional import validator_ref as _ref
from magnum_lib.units import INTERCONNECTS, parse_bandwidth, parse_interconnect

__all__ = ["REASONS", "Preemption", "ValidationResult", "NodeState", "validate", "kernels",
           "pack_rows", "DEFAULT_CHECKPOINT_BANDWIDTH"]

#: Result code -> reason name (codes as in validator_ref).
#: "released" is decided in Python (a released lease never reaches the kernel).
REASONS = ("accepted", "accepted_after_preemption", "insufficient_devices", "insufficient_memory",
           "interconnect_mismatch", "device_type_mismatch", "expired", "unknown_node", "released")

#: Default checkpoint bandwidth, device memory to host: 25 GB/s (10**9), a PCIe 5 x16 link
#: at ~40% of its 63 GB/s peak; NVMe-backed checkpoints are slower (a few GB/s per drive).
DEFAULT_CHECKPOINT_BANDWIDTH = "25GB/s"


def kernels():
    """The active backend's kernel module (compiled ``_validator`` or ``validator_ref``)."""
    return _backend.pick("magnum_lib.regional._validator", "magnum_lib.regional.validator_ref")


def pack_rows(name: str, columns) -> np.ndarray:
    """Stack equal-length 1-d columns into the int64 row array the kernels take."""
    cols = [np.asarray(c) for c in columns]
    r = len(cols[0])
    if any(c.shape != (r,) for c in cols):
        raise ParameterError(name, f"must be 1-d arrays of one length, got shapes {[c.shape for c in cols]}")
    rows = np.empty((r, len(cols)), dtype=np.int64)
    for k, c in enumerate(cols):
        rows[:, k] = c
    return rows


def _family(name: str) -> str:
    return name.split("_")[0]


def _ic_table(names) -> np.ndarray:
    """``ok[node, lease]``: same class, or same family and at least as fast."""
    bw = [parse_interconnect(n).per_direction_Bps for n in names]
    n = len(names)
    ok = np.zeros((n, n), dtype=np.uint8)
    for a in range(n):
        for b in range(n):
            ok[a, b] = a == b or (_family(names[a]) == _family(names[b]) and bw[a] >= bw[b])
    return ok.ravel()


@dataclass(frozen=True)
class Preemption:
    """One job evicted to make room: who, where, and what it cost.

    ``checkpoint_s`` = memory per device / checkpoint bandwidth (seconds; each device saves
    over its own link, in parallel);
    ``lost_work_s`` = time since its last periodic checkpoint, per device (seconds).
    """

    job_id: str
    node_id: int
    devices: int
    memory_bytes: int
    checkpoint_s: float
    lost_work_s: float
    by_lease: str

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ValidationResult:
    """What the node decided about one lease (``reason`` is one of :data:`REASONS`)."""

    lease_id: str
    node_id: int
    accepted: bool
    reason: str
    preempted: tuple = field(default_factory=tuple)

    def to_dict(self) -> dict:
        return {"lease_id": self.lease_id, "node_id": self.node_id, "accepted": self.accepted,
                "reason": self.reason, "preempted": [p.to_dict() for p in self.preempted]}


class NodeState:
    """The true state of N nodes (homogeneous within a node), as arrays.

    Parameters
    ----------
    device_types : sequence of str
        Per node, a catalog key or alias.
    devices : int or array of int
        Devices per node (>= 1).
    interconnects : sequence of str, optional
        Per node interconnect class; default each type's catalog interconnect.
    memory_bytes : array of int, optional
        Memory per device; default the catalog figure.
    checkpoint_bandwidth : str or float
        Bytes/s a preempted job's memory is saved at (default :data:`DEFAULT_CHECKPOINT_BANDWIDTH`).
    checkpoint_interval : float
        Seconds between a job's periodic checkpoints (default 60 s); preemption loses the
        work since the last one.
    """

    def __init__(self, device_types, devices=8, interconnects=None, memory_bytes=None,
                 checkpoint_bandwidth=DEFAULT_CHECKPOINT_BANDWIDTH, checkpoint_interval=60.0,
                 catalog: Catalog | None = None):
        catalog = catalog or default_catalog()
        if isinstance(device_types, str) or len(device_types) == 0:
            raise ParameterError("device_types", f"must be a non-empty sequence of catalog keys, "
                                 f"got {device_types!r}")
        keys = [catalog.resolve(t) for t in device_types]
        n = len(keys)
        self.catalog = catalog
        self.type_keys = tuple(dict.fromkeys(keys))
        node_type = [self.type_keys.index(k) for k in keys]
        if isinstance(devices, numbers.Integral):
            devices = [check_int("devices", devices, 1)] * n
        self.node_devices = np.asarray(devices, dtype=np.int64)
        if self.node_devices.shape != (n,) or self.node_devices.min() < 1:
            raise ParameterError("devices", f"must be >= 1 per node, one value or {n} values")
        ics = [catalog[k].interconnect.name for k in keys] if interconnects is None else \
            [parse_interconnect(x, field="interconnects").name for x in interconnects]
        if len(ics) != n:
            raise ParameterError("interconnects", f"must have {n} entries, got {len(ics)}")
        self.ic_names = tuple(dict.fromkeys(list(INTERCONNECTS) + ics))
        self.ic_ok = _ic_table(self.ic_names)
        mem = np.asarray([catalog[k].memory_bytes for k in keys] if memory_bytes is None
                         else memory_bytes, dtype=np.int64)
        if mem.shape != (n,) or mem.min() < 0:
            raise ParameterError("memory_bytes", f"must be {n} values >= 0")
        self.checkpoint_Bps = parse_bandwidth(checkpoint_bandwidth, field="checkpoint_bandwidth")
        if not self.checkpoint_Bps > 0:
            raise ParameterError("checkpoint_bandwidth", f"must be > 0, got {checkpoint_bandwidth!r}")
        if isinstance(checkpoint_interval, bool) or not isinstance(checkpoint_interval, numbers.Real) \
                or not 0 < checkpoint_interval < float("inf"):
            raise ParameterError("checkpoint_interval", f"must be seconds > 0, got {checkpoint_interval!r}")
        self.checkpoint_interval_ns = int(round(checkpoint_interval * 1e9))
        # One row per node and per slot (see validator_ref): a record is one contiguous run.
        self.nodes = np.zeros((n, _ref.NODE_COLS), dtype=np.int64)
        self.nodes[:, :4] = np.stack([node_type, [self.ic_names.index(x) for x in ics], mem,
                                      self.node_devices], axis=1)
        self.K = int(self.node_devices.max())  # every job holds >= 1 device
        if self.K > 63:
            raise ParameterError("devices", f"must be <= 63 per node (slot bitmask), got {self.K}")
        self.slots = np.zeros((n * self.K, 6), dtype=np.int64)
        self.slots[:, _ref.S_JOB] = -1
        self._summarise()
        self.job_names: list[str] = []  # job index -> job id (kernels see int64 indices)
        self._job_index: dict[str, int] = {}

    # -- construction helpers ------------------------------------------------
    @classmethod
    def uniform(cls, n_nodes: int, device_type: str = "h100_sxm", devices: int = 8, **kwargs):
        """``n_nodes`` identical nodes."""
        n = check_int("n_nodes", n_nodes, 1)
        return cls([device_type] * n, devices, **kwargs)

    @classmethod
    def from_cluster(cls, cluster, region: int | None = None, **kwargs):
        """The nodes of a :class:`magnum_lib.cluster.Cluster` (optionally one region), all free."""
        nodes = np.arange(cluster.n_nodes) if region is None else cluster.nodes_of_region(region)
        per_node = np.diff(cluster.node_device_offset)[nodes]
        types = [cluster.type_keys[c] for c in cluster.node_type[nodes]]
        return cls(types, per_node, **kwargs)

    @property
    def n_nodes(self) -> int:
        return len(self.nodes)

    # Named columns: views into the row arrays (writable, strided).
    node_type = property(lambda self: self.nodes[:, _ref.N_TYPE], doc="device type code per node")
    node_ic = property(lambda self: self.nodes[:, _ref.N_IC], doc="interconnect code per node")
    node_mem = property(lambda self: self.nodes[:, _ref.N_MEM], doc="bytes per device per node")
    free = property(lambda self: self.nodes[:, _ref.N_FREE], doc="free devices per node")
    slot_job = property(lambda self: self.slots[:, _ref.S_JOB], doc="job index per slot, -1 empty")
    slot_prio = property(lambda self: self.slots[:, _ref.S_PRIO])
    slot_count = property(lambda self: self.slots[:, _ref.S_COUNT])
    slot_mem = property(lambda self: self.slots[:, _ref.S_MEM])
    slot_expiry = property(lambda self: self.slots[:, _ref.S_EXPIRY])
    slot_start = property(lambda self: self.slots[:, _ref.S_START])

    def job_index(self, job_id: str) -> int:
        """The int index the kernels use for ``job_id`` (assigned on first use)."""
        idx = self._job_index.get(job_id)
        if idx is None:
            idx = self._job_index[job_id] = len(self.job_names)
            self.job_names.append(job_id)
        return idx

    def type_code(self, device_type) -> int:
        """Code of a device type present here, -1 if no node has it."""
        key = self.catalog.resolve(device_type)
        return self.type_keys.index(key) if key in self.type_keys else -1

    def ic_code(self, interconnect) -> int:
        """Code of an interconnect class, -1 if unknown here (then nothing matches)."""
        name = parse_interconnect(interconnect, field="interconnect").name
        return self.ic_names.index(name) if name in self.ic_names else -1

    # -- state ------------------------------------------------------------------
    def reap(self, now_ns: int) -> np.ndarray:
        """Free the devices of every lease expired at ``now_ns``; return their job indices."""
        mask = (self.slot_job >= 0) & (self.slot_expiry <= now_ns)
        jobs = self.slot_job[mask].copy()
        np.add.at(self.free, np.nonzero(mask)[0] // self.K, self.slot_count[mask])
        self.slot_job[mask] = -1
        if len(jobs):
            self._summarise()
        return jobs

    def _summarise(self) -> None:
        """Recompute each node's lowest running priority and occupied-slot bitmask."""
        occupied = (self.slot_job >= 0).reshape(-1, self.K)
        prio = np.where(occupied, self.slot_prio.reshape(-1, self.K), _ref.NO_JOB_PRIO)
        self.nodes[:, _ref.N_MINPRIO] = prio.min(axis=1)
        self.nodes[:, _ref.N_OCC] = occupied.astype(np.int64) @ (np.int64(1) << np.arange(self.K))

    def running(self) -> np.ndarray:
        """Job indices holding devices now (a job holds at most one slot)."""
        return self.slot_job[self.slot_job >= 0]

    def utilization(self) -> float:
        """Fraction of devices held."""
        return 1.0 - float(self.free.sum()) / float(self.node_devices.sum())

    def check(self) -> None:
        """Raise AssertionError unless the arrays are consistent (used by the tests)."""
        held = np.zeros(self.n_nodes, dtype=np.int64)
        occupied = self.slot_job >= 0
        np.add.at(held, np.nonzero(occupied)[0] // self.K, self.slot_count[occupied])
        assert (self.free >= 0).all(), "a node has negative free devices (over-committed)"
        assert (held + self.free == self.node_devices).all(), "held + free != devices"
        jobs = self.slot_job[occupied]
        assert len(np.unique(jobs)) == len(jobs), "a job holds two slots"
        summary = self.nodes[:, [_ref.N_MINPRIO, _ref.N_OCC]].copy()
        self._summarise()
        assert np.array_equal(summary, self.nodes[:, [_ref.N_MINPRIO, _ref.N_OCC]]), "stale summaries"

    def copy(self) -> NodeState:
        """An independent copy of the mutable state (the static tables are shared)."""
        new = object.__new__(NodeState)
        new.__dict__.update(self.__dict__)
        new.nodes, new.slots = self.nodes.copy(), self.slots.copy()
        new.job_names, new._job_index = list(self.job_names), dict(self._job_index)
        return new

    # -- validation ------------------------------------------------------------
    def validate_arrays(self, l_node, l_type, l_count, l_mem, l_ic, l_expiry, l_prio, l_job,
                        now_ns: int, preempt: bool = True, module=None) -> dict:
        """Validate a batch given as arrays (codes from :meth:`type_code`, :meth:`ic_code`).

        Returns a dict of arrays: ``code`` (int8, index into :data:`REASONS`), ``slot``, and
        for the preempted jobs ``pre_job``, ``pre_by`` (lease index), ``pre_count``,
        ``pre_mem``, ``pre_start`` (ns), ``checkpoint_s`` and ``lost_work_s``. ``module`` overrides the backend.
        """
        mod = module or kernels()
        leases = pack_rows("leases", (l_node, l_type, l_count, l_mem, l_ic, l_expiry, l_prio, l_job))
        r = len(leases)
        if r and (leases[:, _ref.L_COUNT].min() < 1 or leases[:, _ref.L_MEM].min() < 0
                  or leases[:, _ref.L_JOB].min() < 0 or leases[:, _ref.L_PRIO].min() < 0):
            raise ParameterError("leases", "count must be >= 1, memory, priority and job index >= 0")
        if r and (leases[:, _ref.L_TYPE].max() >= len(self.type_keys)
                  or leases[:, _ref.L_IC].max() >= len(self.ic_names)):
            raise ParameterError("leases", "device type / interconnect codes out of range")
        out = np.empty((r, 2), dtype=np.int64)
        cap = r * self.K
        if cap > 1 << 16:  # a huge batch: count the running jobs rather than allocate R*K
            cap = int(np.count_nonzero(self.slot_job >= 0)) + r
        pre = np.empty((max(cap, 1), 5), dtype=np.int64)
        n_pre = mod.validate_batch(leases, self.nodes, self.ic_ok, len(self.ic_names), self.slots,
                                   self.K, int(now_ns), bool(preempt), out, pre)
        pre = pre[:n_pre]
        lost = _ref.lost_work_ns(now_ns, pre[:, 1], self.checkpoint_interval_ns)  # the lease rule's
        return {"code": out[:, 0].astype(np.int8), "slot": out[:, 1], "pre_job": pre[:, 0],
                "pre_start": pre[:, 1], "pre_by": pre[:, 2], "pre_count": pre[:, 3],
                "pre_mem": pre[:, 4], "checkpoint_s": _ref.checkpoint_s(pre[:, 4], self.checkpoint_Bps),
                "lost_work_s": lost / 1e9}


def validate(lease, state: NodeState, now_ns: int, priority: int = 0,
             preempt: bool = True) -> ValidationResult:
    """Check one lease against the node's true state and commit it if accepted.

    Parameters
    ----------
    lease : Lease
    state : NodeState
        Updated in place only when the lease is accepted.
    now_ns : int
        The node's clock, nanoseconds.
    priority : int
        The job's priority (higher wins); only strictly lower-priority jobs are preempted.
    preempt : bool
        False: refuse instead of preempting.
    """
    from magnum_lib.regional.lease import Lease

    if not isinstance(lease, Lease):
        raise ParameterError("lease", f"must be a Lease, got {type(lease).__name__}")
    now_ns = check_int("now_ns", now_ns, 0)
    priority = check_int("priority", priority, 0, 2**31 - 1)
    if lease.released:
        return ValidationResult(lease.lease_id, lease.node_id, False, "released")
    type_code = state.type_code(lease.device_type)  # -1 (absent here) never matches a node
    ic = state.ic_code(lease.interconnect)
    job = state.job_index(lease.job_id)
    out = state.validate_arrays([lease.node_id], [type_code], [lease.count],
                                [lease.memory_per_device_bytes], [ic], [lease.expires_at_ns],
                                [priority], [job], now_ns, preempt)
    reason = REASONS[int(out["code"][0])]
    pre = tuple(Preemption(state.job_names[int(j)], lease.node_id, int(c), int(m), float(ck),
                           float(lw), lease.lease_id)
                for j, c, m, ck, lw in zip(out["pre_job"], out["pre_count"], out["pre_mem"],
                                           out["checkpoint_s"], out["lost_work_s"], strict=True))
    return ValidationResult(lease.lease_id, lease.node_id, reason.startswith("accepted"), reason, pre)

