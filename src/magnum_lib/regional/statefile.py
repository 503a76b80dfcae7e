"""A region's leases kept in a JSON file between ``faux-magnum lease`` calls.

Two parts:

* :class:`RegionState`, plain data and logic: the nodes, the active leases, and
  :meth:`RegionState.lease` (validate a request, place it first-fit, record the lease),
  :meth:`RegionState.release` and :meth:`RegionState.prune` (expired leases free their
  devices). Times are int nanoseconds passed in by the caller, so it is testable and
  deterministic; the CLI passes ``time.time_ns()``.
* :class:`StateFile`, the file: :meth:`StateFile.transaction` holds an exclusive lock
  (``filelock``: ``flock`` on POSIX, ``msvcrt.locking`` on Windows) on a sidecar
  ``<file>.lock`` across read-modify-write, so concurrent
  calls serialise; it writes only when the state changed and the block did not raise,
  through a temporary file in the same directory that is fsync'd, ``os.replace``'d over
  the old one and followed by an fsync of the directory. A call killed at any moment
  therefore leaves either the old file or the new one, never a mixture. Temporary files
  left by a killed call are removed by the next call (under the lock, so no live writer
  owns them). The lock file is never deleted: deleting it would let two callers lock two
  different inodes. ``flock`` is advisory and local: every writer must go through this
  class, and the file should not live on NFS. The lock is waited for at most
  :data:`LOCK_WAIT_S` seconds (a holder that is stopped or hung gives one clean error
  naming the lock file, never a hang).

The file is checked with ``fstat`` after an ``O_NONBLOCK`` open: a FIFO, a directory or a
device is refused without blocking, and so is a file past :data:`MAX_STATE_BYTES`.

Symlinks are followed: if the state file is a symlink, its target is read and replaced
(atomically, through a temporary file in the target's own directory) and the lock is
``<target>.lock``, so every link to one file shares one lock and the link itself stays a
link. A new state file gets the caller's umask (``0o666 & ~umask``, like any file the user
creates); a replaced one keeps the permissions it had.

Hand-edited values are checked on load against the ranges the compiled validator takes
(for example ``nodes[0].devices`` at most 63, memory at most 1 PB per device, times
within int64 nanoseconds); a value outside is refused with the field's path.

Placement is first fit in node order, each try decided by the node-side validator
(:func:`magnum_lib.regional.validator.validate`, no preemption) against the true state
rebuilt from the recorded leases. Devices are leased whole: a lease of ``count`` devices
takes that many devices of one node, and ``memory_per_device_bytes`` is a requirement on
each (it may not exceed the device). The interconnect is a minimum class
(:func:`~magnum_lib.regional.default_region.interconnect_satisfies`).

File format (``schema`` and ``version`` are checked on load; any other shape is refused
with :class:`StateFileError` and the file is left as it is)::

    {"schema": "faux-magnum/regional-state", "version": 1, "region": "default",
     "next_seq": 2, "counters": {"issued": 2, "released": 0, "expired": 1},
     "nodes": [NodeSpec.to_dict(), ...], "leases": [Lease.to_dict(), ...]}
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import filelock

from magnum_lib.base.validate import ParameterError, check_int, excerpt, parse_param
from magnum_lib.hardware import Catalog, default_catalog
from magnum_lib.regional.default_region import DEFAULT_REGION_NAME, NodeSpec, default_region, interconnect_satisfies
from magnum_lib.regional.lease import Lease, LeaseIds
from magnum_lib.regional.validator import NodeState, validate
from magnum_lib.units import format_duration, format_size, parse_duration, parse_interconnect, parse_size

__all__ = ["SCHEMA", "SCHEMA_VERSION", "MAX_TIMEOUT_NS", "MIN_TIMEOUT_NS", "MIN_MEMORY_BYTES", "MAX_MEMORY_BYTES",
           "MAX_DEVICES_PER_NODE", "MAX_STATE_BYTES", "LOCK_WAIT_S", "PAUSE_ENV", "StateFileError", "CapacityError",
           "LeaseNotFoundError", "LeaseRequest", "parse_request", "RegionState", "StateFile", "atomic_write",
           "iso_utc"]

SCHEMA = "faux-magnum/regional-state"
SCHEMA_VERSION = 1
MAX_TIMEOUT_NS = 24 * 3600 * 10**9  # a lease longer than a day is a typo, not a lease
MIN_TIMEOUT_NS = 10**6  # 1 ms: a shorter lease expires before the call that issued it returns
MIN_MEMORY_BYTES = 10**6  # 1 MB per device: less is a typo (a unit left out), not a requirement
MAX_MEMORY_BYTES = 10**15  # 1 PB per device, far above any accelerator, far inside int64
MAX_DEVICES_PER_NODE = 63  # the node-side validator keeps a node's devices in a 63-bit mask
MAX_NODES = 100_000
MAX_STATE_BYTES = 16 * 2**20  # a region of 10 nodes and its leases is a few kB
LOCK_WAIT_S = 2.0  # a call holds the lock for milliseconds; a longer wait means a stuck holder
_INT64_MAX = 2**63 - 1
_MAX_TEXT = 200
PAUSE_ENV = "MAGNUM_STATEFILE_TEST_PAUSE"  # tests: seconds to sleep between temp write and replace
_JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/@+-]{0,199}")
_COUNTERS = ("issued", "released", "expired")


class StateFileError(ValueError):
    """The state file is unreadable, corrupt or of another schema/version."""


class CapacityError(RuntimeError):
    """Every node able to hold the request is busy right now (retry later)."""


class LeaseNotFoundError(LookupError):
    """No active lease has this id (never issued, released, or expired and pruned)."""

    def __str__(self) -> str:  # LookupError would quote the message
        return str(self.args[0])


def iso_utc(ns: int) -> str:
    """A wall-clock time in ns as ISO-8601 UTC with nanoseconds: ``2026-11-29T12:00:00.100000000Z``."""
    seconds, frac = divmod(int(ns), 10**9)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{frac:09d}Z"


@dataclass(frozen=True)
class LeaseRequest:
    """A checked lease request (see :func:`parse_request`); ``memory``/``interconnect`` None mean any."""

    job_id: str
    device_type: str
    count: int
    memory: int | None          # bytes per device; None: the whole device
    interconnect: str | None    # minimum class; None: any
    timeout_ns: int

    def fits(self, node: NodeSpec) -> bool:
        """Could ``node`` hold this request when empty?"""
        return (node.device_type == self.device_type and node.devices >= self.count
                and (self.memory is None or node.memory_per_device_bytes >= self.memory)
                and (self.interconnect is None or interconnect_satisfies(node.interconnect, self.interconnect)))


def _validate(lease: Lease, truth: NodeState, now_ns: int):
    # The validator counts one holding per job id; here every lease is its own holding
    # (a job may hold several leases), so the lease id stands in for the job.
    return validate(replace(lease, job_id=lease.lease_id), truth, now_ns, preempt=False)


def parse_request(job_id, gpu_type, count=1, memory=None, interconnect=None, lease_timeout="30s",
                  catalog: Catalog | None = None) -> LeaseRequest:
    """Check each field of a request on its own (no region needed), as :meth:`RegionState.lease` does.

    Raises ParameterError naming the first bad field (``job_id``, ``gpu_type``, ``count``,
    ``memory``, ``interconnect``, ``lease_timeout``).
    """
    catalog = catalog or default_catalog()
    if not isinstance(job_id, str) or not _JOB_ID.fullmatch(job_id):
        raise ParameterError("job_id", f"must be 1-200 characters of letters, digits and _ . : / @ + - "
                                       f"starting with a letter or digit, got {excerpt(job_id)}")
    try:
        key = catalog.resolve(gpu_type)
    except (KeyError, ValueError) as exc:
        raise ParameterError("gpu_type", str(exc)) from None
    count = check_int("count", count, 1, MAX_DEVICES_PER_NODE)
    if memory is not None:
        memory = parse_param("memory", parse_size, memory)
        if not MIN_MEMORY_BYTES <= memory <= MAX_MEMORY_BYTES:
            raise ParameterError("memory", f"must be {format_size(MIN_MEMORY_BYTES)} to "
                                           f"{format_size(MAX_MEMORY_BYTES)} per device, "
                                           f"got {excerpt(memory)} bytes")
    if interconnect is not None:
        interconnect = parse_param("interconnect", parse_interconnect, interconnect).name
    timeout_ns = parse_param("lease_timeout", parse_duration, lease_timeout)
    if not MIN_TIMEOUT_NS <= timeout_ns <= MAX_TIMEOUT_NS:
        raise ParameterError("lease_timeout", f"must be at least {format_duration(MIN_TIMEOUT_NS)} and at most "
                                              f"{format_duration(MAX_TIMEOUT_NS)}, got {excerpt(lease_timeout)}")
    return LeaseRequest(job_id, key, count, memory, interconnect, timeout_ns)


@dataclass
class RegionState:
    """Nodes and active leases of one region.

    Attributes
    ----------
    nodes : tuple of NodeSpec
        In ``node_id`` order (``nodes[i].node_id == i``).
    leases : list of Lease
        Leases issued and neither released nor pruned, in issue order. Some may have
        expired since the last :meth:`prune`.
    region : str
        Name used in lease ids (``"L-<region>-<seq>"``).
    next_seq : int
        Sequence number of the next lease id.
    counters : dict
        ``issued``, ``released``, ``expired`` (pruned) lease totals.
    """

    nodes: tuple[NodeSpec, ...]
    leases: list[Lease] = field(default_factory=list)
    region: str = DEFAULT_REGION_NAME
    next_seq: int = 0
    counters: dict = field(default_factory=lambda: dict.fromkeys(_COUNTERS, 0))

    @classmethod
    def fresh(cls, nodes=None, region: str = DEFAULT_REGION_NAME) -> RegionState:
        """An empty region; default nodes: :func:`~magnum_lib.regional.default_region.default_region`."""
        return cls(tuple(default_region() if nodes is None else nodes), region=region)

    # -- occupancy -----------------------------------------------------------
    def used_devices(self) -> list[int]:
        """Devices held by the recorded leases, per node."""
        used = [0] * len(self.nodes)
        for lease in self.leases:
            used[lease.node_id] += lease.count
        return used

    def free_devices(self) -> list[int]:
        """Devices not held by any recorded lease, per node (prune first to free expired ones)."""
        return [node.devices - u for node, u in zip(self.nodes, self.used_devices(), strict=True)]

    def prune(self, now_ns: int) -> list[Lease]:
        """Drop leases expired at ``now_ns`` (their devices become free); return them."""
        now_ns = check_int("now_ns", now_ns, 0)
        expired = [lease for lease in self.leases if lease.is_expired(now_ns)]
        if expired:
            self.leases = [lease for lease in self.leases if not lease.is_expired(now_ns)]
            self.counters["expired"] += len(expired)
        return expired

    # -- requests ------------------------------------------------------------
    def _check_possible(self, req: LeaseRequest) -> None:
        """Refuse (ParameterError) a request no node of this region could hold even when empty."""
        typed = [n for n in self.nodes if n.device_type == req.device_type]
        if not typed:
            have = ", ".join(sorted({n.device_type for n in self.nodes}))
            raise ParameterError("gpu_type", f"{req.device_type} has no node in region {self.region!r} "
                                             f"(it has: {have})")
        most = max(n.devices for n in typed)
        if req.count > most:
            raise ParameterError("count", f"{req.count} exceeds the largest {req.device_type} node "
                                          f"({most} devices)")
        mem = max(n.memory_per_device_bytes for n in typed)
        if req.memory is not None and req.memory > mem:
            raise ParameterError("memory", f"{format_size(req.memory)} per device exceeds {req.device_type} "
                                           f"memory ({format_size(mem)})")
        links = sorted({n.interconnect for n in typed})
        if req.interconnect is not None and not any(interconnect_satisfies(x, req.interconnect) for x in links):
            raise ParameterError("interconnect", f"{req.interconnect} is not met by any {req.device_type} node "
                                                 f"(they have: {', '.join(links)}; a faster link of the same "
                                                 f"family counts)")
        if not any(req.fits(n) for n in typed):
            raise ParameterError("count", f"no single {req.device_type} node meets count, memory and "
                                          f"interconnect together")

    def lease(self, job_id: str, gpu_type: str, count=1, memory=None, interconnect=None,
              lease_timeout="30s", *, now_ns: int, catalog: Catalog | None = None) -> Lease:
        """Validate a request, place it on the first node that can hold it now, record and return the lease.

        Parameters
        ----------
        job_id : str
            Letters, digits and ``_ . : / @ + -`` (1-200 characters).
        gpu_type : str
            Catalog key or alias (``"h100"`` -> ``"h100_sxm"``).
        count : int
            Devices, all on one node.
        memory : str or int, optional
            Memory needed per device, ``"80GB"`` (10**9) or bytes; default the whole device.
        interconnect : str, optional
            Minimum link class, e.g. ``"nvlink_3"``; default any. The lease records the
            class asked for, or the node's own when none was asked for.
        lease_timeout : str or float
            ``"100ms"``, or seconds; > 0 and at most a day.
        now_ns : int
            Issue time (the CLI uses ``time.time_ns()``). Expired leases are pruned first.

        Raises
        ------
        ParameterError
            A malformed field, or a request no node of the region could ever hold;
            ``.name`` is the parameter. Nothing is changed.
        CapacityError
            Every node that could hold it is busy now. Nothing is changed but the pruning.
        """
        req = parse_request(job_id, gpu_type, count, memory, interconnect, lease_timeout, catalog)
        now_ns = check_int("now_ns", now_ns, 0)
        self._check_possible(req)
        self.prune(now_ns)
        truth = self._node_state(now_ns)
        capable = [n for n in self.nodes if req.fits(n)]
        # First fit in node order (deterministic; keeps later nodes whole for big gangs). The
        # node-side validator decides each try, as a real node would, and commits if it accepts.
        for node in capable:
            lease = Lease("pending", req.job_id, node.node_id, node.device_type, req.count,
                          node.memory_per_device_bytes if req.memory is None else req.memory,
                          req.interconnect or node.interconnect, now_ns, req.timeout_ns, now_ns + req.timeout_ns)
            if _validate(lease, truth, now_ns).accepted:
                break
        else:
            free = self.free_devices()
            listing = ", ".join(f"{n.name}={free[n.node_id]}" for n in capable)
            raise CapacityError(f"all {len(capable)} {req.device_type} node(s) able to hold {req.count} device(s) "
                                f"are busy (free devices: {listing}); retry after a lease expires or is released")
        ids = LeaseIds(self.region, start=self.next_seq)
        lease = replace(lease, lease_id=ids())  # an id is spent only on a granted lease
        self.next_seq = ids.next_seq
        self.leases.append(lease)
        self.counters["issued"] += 1
        return lease

    def _node_state(self, now_ns: int) -> NodeState:
        """The validator's true state of the nodes with every recorded lease committed."""
        truth = NodeState([n.device_type for n in self.nodes], [n.devices for n in self.nodes],
                          [n.interconnect for n in self.nodes], [n.memory_per_device_bytes for n in self.nodes])
        for lease in self.leases:
            result = _validate(lease, truth, now_ns)
            if not result.accepted:
                raise StateFileError(f"recorded lease {lease.lease_id} fails node validation ({result.reason})")
        return truth

    def release(self, lease_id: str, *, now_ns: int) -> Lease:
        """Give back an active lease (after pruning expired ones); return it marked released."""
        self.prune(now_ns)
        for i, lease in enumerate(self.leases):
            if lease.lease_id == lease_id:
                del self.leases[i]
                self.counters["released"] += 1
                return lease.release()
        raise LeaseNotFoundError(f"no active lease {excerpt(lease_id)} in region {self.region!r} "
                                 f"(expired leases are pruned; see --list)")

    def node_table(self) -> list[dict]:
        """One row per node: its spec plus ``used`` and ``free`` devices."""
        return [dict(n.to_dict(), used=u, free=n.devices - u) for n, u in zip(self.nodes, self.used_devices(), strict=True)]

    # -- serialisation -------------------------------------------------------
    def to_dict(self) -> dict:
        """The state file's JSON document."""
        return {"schema": SCHEMA, "version": SCHEMA_VERSION, "region": self.region, "next_seq": self.next_seq,
                "counters": dict(self.counters), "nodes": [n.to_dict() for n in self.nodes],
                "leases": [lease.to_dict() for lease in self.leases]}

    def to_json(self) -> bytes:
        """Deterministic bytes of :meth:`to_dict` (so an unchanged state is not rewritten)."""
        return (json.dumps(self.to_dict(), indent=1) + "\n").encode("utf-8")

    @classmethod
    def from_dict(cls, doc) -> RegionState:
        """Inverse of :meth:`to_dict`, checking shape and invariants; StateFileError if anything is off."""
        try:
            return cls._from_dict(doc)
        except StateFileError:
            raise
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise StateFileError(f"invalid state: {exc}") from None

    @classmethod
    def _from_dict(cls, doc) -> RegionState:
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            raise StateFileError(f"not a {SCHEMA} document")
        if doc.get("version") != SCHEMA_VERSION:
            raise StateFileError(f"schema version {excerpt(doc.get('version'))} is not supported (this is version "
                                 f"{SCHEMA_VERSION})")
        expected = {"schema", "version", "region", "next_seq", "counters", "nodes", "leases"}
        if set(doc) != expected:
            raise StateFileError(f"keys must be {', '.join(sorted(expected))}, got {', '.join(sorted(doc))}")
        for key in ("nodes", "leases"):
            if not isinstance(doc[key], list):
                raise StateFileError(f"{key}: must be a list, got {type(doc[key]).__name__}")
        if len(doc["nodes"]) > MAX_NODES:
            raise StateFileError(f"nodes: at most {MAX_NODES:,} nodes, got {len(doc['nodes']):,}")
        # Every number is range-checked (with its path) before it reaches the int64 validator.
        for i, n in enumerate(doc["nodes"]):
            _check_fields(f"nodes[{i}]", n, _NODE_INTS)
        for i, d in enumerate(doc["leases"]):
            _check_fields(f"leases[{i}]", d, _LEASE_INTS)
        nodes = tuple(NodeSpec(**n) for n in doc["nodes"])
        if not nodes or [n.node_id for n in nodes] != list(range(len(nodes))):
            raise StateFileError("nodes must be non-empty with node_id 0, 1, 2, ... in order")
        leases = [Lease.from_dict(d) for d in doc["leases"]]
        counters = doc["counters"]
        if not isinstance(counters, dict) or set(counters) != set(_COUNTERS):
            raise StateFileError(f"counters must have keys {', '.join(_COUNTERS)}")
        _check_fields("counters", counters, dict.fromkeys(_COUNTERS, (0, _INT64_MAX)))
        _check_fields("", doc, {"next_seq": (0, _INT64_MAX)})
        region = doc["region"]
        if not isinstance(region, str) or not _JOB_ID.fullmatch(region) or len(region) > 64:
            raise StateFileError(f"region: must be 1-64 letters, digits and _ . : / @ + -, got {excerpt(region)}")
        state = cls(nodes, leases, region, doc["next_seq"], dict(counters))
        state._check_invariants()
        return state

    def _check_invariants(self) -> None:
        ids = [lease.lease_id for lease in self.leases]
        if len(set(ids)) != len(ids):
            raise StateFileError("duplicate lease ids")
        prefix = f"L-{self.region}-"
        seqs = [int(i[len(prefix):]) for i in ids if i.startswith(prefix) and i[len(prefix):].isdigit()]
        if seqs and max(seqs) >= self.next_seq:
            raise StateFileError(f"next_seq {self.next_seq} would reissue lease id {prefix}{max(seqs):06d}")
        for lease in self.leases:
            if lease.released:
                raise StateFileError(f"lease {lease.lease_id} is marked released but still recorded")
            if not 0 <= lease.node_id < len(self.nodes):
                raise StateFileError(f"lease {lease.lease_id} names node {lease.node_id}, not in the region")
            if lease.device_type != self.nodes[lease.node_id].device_type:
                raise StateFileError(f"lease {lease.lease_id} device type differs from node {lease.node_id}'s")
            if lease.memory_per_device_bytes > self.nodes[lease.node_id].memory_per_device_bytes:
                raise StateFileError(f"lease {lease.lease_id} books {lease.memory_per_device_bytes:,} bytes per device; "
                                     f"node {lease.node_id}'s devices have {self.nodes[lease.node_id].memory_per_device_bytes:,}")
            if not _JOB_ID.fullmatch(lease.job_id):
                raise StateFileError(f"lease {lease.lease_id} job_id: must be 1-200 letters, digits and _ . : / @ + -, "
                                     f"got {excerpt(lease.job_id)}")
        c = self.counters
        if c["issued"] - c["released"] - c["expired"] != len(self.leases):
            raise StateFileError(f"counters: issued {c['issued']} - released {c['released']} - expired {c['expired']} "
                                 f"!= the {len(self.leases)} lease(s) recorded")
        for node, free in zip(self.nodes, self.free_devices(), strict=True):
            if free < 0:
                raise StateFileError(f"node {node.node_id} is over-committed by {-free} device(s)")


_NODE_INTS = {"node_id": (0, MAX_NODES - 1), "devices": (1, MAX_DEVICES_PER_NODE),
              "memory_per_device_bytes": (1, MAX_MEMORY_BYTES)}
_LEASE_INTS = {"node_id": (0, MAX_NODES - 1), "count": (1, MAX_DEVICES_PER_NODE),
               "memory_per_device_bytes": (0, MAX_MEMORY_BYTES), "issue_time_ns": (0, _INT64_MAX // 2),
               "timeout_ns": (0, MAX_TIMEOUT_NS), "expires_at_ns": (0, _INT64_MAX)}


def _check_fields(where: str, record, ints: dict) -> None:
    """Refuse (StateFileError naming ``where.field``) an integer field outside its range, or a
    string field that is not a short string; other keys are checked by the record's class."""
    if not isinstance(record, dict):
        raise StateFileError(f"{where or 'document'}: must be an object, got {type(record).__name__}")
    prefix = f"{where}." if where else ""
    for key, value in record.items():
        path = f"{prefix}{key}"
        if key in ints:
            lo, hi = ints[key]
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                raise StateFileError(f"{path}: must be an integer from {lo:,} to {hi:,}, got {excerpt(value)}")
        elif isinstance(value, str) and len(value) > _MAX_TEXT:
            raise StateFileError(f"{path}: at most {_MAX_TEXT} characters, got {excerpt(value)}")


# ---------------------------------------------------------------------------
# The file
# ---------------------------------------------------------------------------

# O_NONBLOCK (POSIX only): opening a FIFO planted at the path must not wait for a writer.
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def _fsync_dir(directory: Path) -> None:
    if os.name != "posix":   # Windows cannot open a directory; NTFS journals the rename itself
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _umask() -> int:
    """The process umask, read without changing it where Linux allows (/proc), else set and restored."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _resolve(path) -> Path:
    """``path``, or the file a symlink at ``path`` points to (followed to the end; may not exist yet)."""
    path = Path(path)
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def atomic_write(path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that readers and crashes see the old or the new bytes only.

    A symlink is followed: its target is replaced and the link stays. Writes a unique
    ``.<name>.tmp.<random>`` beside the target, fsyncs it, ``os.replace``-s it over the
    target and fsyncs the directory (so the rename itself survives a power cut). The new
    file keeps the old one's permissions, or gets ``0o666 & ~umask`` if there was none.
    """
    path = _resolve(path)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.tmp.", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as f:
            if hasattr(os, "fchmod"):   # mkstemp makes 0600; a state file is like any other of the user's
                os.fchmod(f.fileno(), mode)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        pause = os.environ.get(PAUSE_ENV)
        if pause:  # test hook: a window in which to kill the writer between write and replace
            time.sleep(float(pause))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(path.parent)


class StateFile:
    """A region state kept in a JSON file, safe under concurrent callers.

    Parameters
    ----------
    path : path-like
        The state file. A missing file is initialised from ``nodes`` (default: the
        built-in region) by the first transaction that changes something; its directory
        must exist.
    nodes : sequence of NodeSpec, optional
        Region for a new file.
    """

    def __init__(self, path, nodes=None):
        self.link = Path(path)
        self.path = _resolve(path)  # a symlink is followed: read, replace and lock its target
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self._nodes = nodes

    def _load(self) -> tuple[RegionState, bytes | None]:
        try:
            # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
            fd = os.open(self.path, os.O_RDONLY | _O_NONBLOCK | getattr(os, "O_BINARY", 0))
        except FileNotFoundError:
            return RegionState.fresh(self._nodes), None
        except OSError as exc:
            raise StateFileError(f"{self.path}: cannot read state file ({exc.strerror})") from None
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise StateFileError(f"{self.path}: not a regular file")
            if st.st_size > MAX_STATE_BYTES:
                raise StateFileError(f"{self.path}: {st.st_size:,} bytes, more than the {MAX_STATE_BYTES:,} a "
                                     f"state file may be")
            try:
                raw = f.read(MAX_STATE_BYTES + 1)
            except OSError as exc:
                raise StateFileError(f"{self.path}: cannot read state file ({exc.strerror})") from None
        try:
            doc = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise StateFileError(f"{self.path}: corrupt state file (not JSON: {excerpt(str(exc), 120)})") from None
        except RecursionError:
            raise StateFileError(f"{self.path}: corrupt state file (JSON nested too deeply)") from None
        try:
            return RegionState.from_dict(doc), raw
        except StateFileError as exc:
            raise StateFileError(f"{self.path}: corrupt state file ({exc})") from None

    def _remove_stale_temps(self) -> None:
        # Only lock holders write temp files, so any found now belong to a killed call.
        prefix = f".{self.path.name}.tmp."
        for name in os.listdir(self.path.parent):
            if name.startswith(prefix):
                with contextlib.suppress(OSError):
                    (self.path.parent / name).unlink()

    @contextlib.contextmanager
    def transaction(self):
        """Lock, load (or initialise), yield the :class:`RegionState`, and write it back if changed.

        If the block raises, nothing is written. The exclusive lock is held from before the
        read until after the replace, so concurrent transactions see each other's writes.
        """
        if not self.path.parent.is_dir():
            raise StateFileError(f"{self.path}: directory {self.path.parent} does not exist")
        try:   # refuse a FIFO, directory or device planted at the lock path before opening it
            st = os.stat(self.lock_path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StateFileError(f"{self.lock_path}: cannot open lock file ({exc.strerror})") from None
        else:
            if not stat.S_ISREG(st.st_mode):
                raise StateFileError(f"{self.lock_path}: lock file is not a regular file")
        # Default mode: 0o666 less the umask, as for the state file. The lock file is never deleted.
        lock = filelock.FileLock(self.lock_path, timeout=LOCK_WAIT_S, thread_local=False)
        try:
            lock.acquire(poll_interval=0.01)
        except filelock.Timeout:
            raise StateFileError(f"{self.lock_path}: still locked by another process after "
                                 f"{LOCK_WAIT_S:g} s (a stopped or hung call?); nothing was changed") from None
        except OSError as exc:
            raise StateFileError(f"{self.lock_path}: cannot open lock file ({exc.strerror})") from None
        try:
            self._remove_stale_temps()
            state, before = self._load()
            yield state
            after = state.to_json()
            if after != before:
                try:
                    atomic_write(self.path, after)
                except OSError as exc:  # e.g. a read-only directory or a full disk; the old file stands
                    raise StateFileError(f"{self.path}: cannot write state file ({exc.strerror})") from None
        finally:
            lock.release()

    def read(self) -> RegionState:
        """A consistent snapshot (readers need no lock: replacement is atomic)."""
        return self._load()[0]
