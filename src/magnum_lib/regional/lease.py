"""Speculative leases: what a regional scheduler hands a node, before anyone has checked.

A :class:`Lease` says "job J may use ``count`` devices of type T with M bytes each on node
N, over interconnect class I, until ``expires_at_ns``". The scheduler issues it from its
possibly stale view; the node's validator (:mod:`magnum_lib.regional.validator`) decides.

Times are int nanoseconds (``issue_time_ns``, ``timeout_ns``, ``expires_at_ns``) on the
caller's clock; memory is int bytes (``"80GB"`` = 80 * 10**9). Leases are immutable:
:meth:`Lease.renew` and :meth:`Lease.release` return new ones. Ids come from a
:class:`LeaseIds` counter per scheduler (``"L-<region>-<seq>"``): unique within a region,
and the same on every run.
"""
from __future__ import annotations

import numbers
from dataclasses import asdict, dataclass, replace

from magnum_lib.base.validate import ParameterError, check_int, excerpt, parse_param
from magnum_lib.hardware import Catalog, default_catalog
from magnum_lib.units import parse_duration, parse_interconnect, parse_size

__all__ = ["Lease", "LeaseIds", "issue_lease", "as_ns"]

INT64_MAX = 2**63 - 1  # times, sizes: int64 in the compiled validator
_INT32_MAX = 2**31 - 1
MAX_TEXT = 200  # characters in an id, type or class name
_FIELDS = ("lease_id", "job_id", "node_id", "device_type", "count", "memory_per_device_bytes",
           "interconnect", "issue_time_ns", "timeout_ns", "expires_at_ns", "released")


def as_ns(name: str, value) -> int:
    """A duration or timestamp as int nanoseconds: a float/int in seconds or ``"100ms"``."""
    return parse_param(name, parse_duration, value)


@dataclass(frozen=True)
class Lease:
    """One speculative lease.

    Attributes
    ----------
    lease_id : str
        Unique id, e.g. ``"L-0-000042"``.
    job_id : str
        The job the lease is for.
    node_id : int
        Node the scheduler chose (index into the cluster's node arrays).
    device_type : str
        Catalog key of the accelerator, e.g. ``"h100_sxm"``.
    count : int
        Devices requested (>= 1).
    memory_per_device_bytes : int
        Memory needed on each device, bytes.
    interconnect : str
        Interconnect class name, e.g. ``"nvlink_3"`` (see :data:`magnum_lib.units.INTERCONNECTS`).
    issue_time_ns, timeout_ns, expires_at_ns : int
        When it was issued, how long it lasts, and ``issue_time_ns + timeout_ns``.
    released : bool
        True once the holder gave it back (a released lease holds nothing).
    """

    lease_id: str
    job_id: str
    node_id: int
    device_type: str
    count: int
    memory_per_device_bytes: int
    interconnect: str
    issue_time_ns: int
    timeout_ns: int
    expires_at_ns: int
    released: bool = False

    def __post_init__(self):
        for name in ("lease_id", "job_id", "device_type", "interconnect"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ParameterError(name, f"must be a non-empty string, got {excerpt(value)}")
            if len(value) > MAX_TEXT:
                raise ParameterError(name, f"must be at most {MAX_TEXT} characters, got {excerpt(value)}")
        # Every field is an int64 in the compiled validator: bounded here, before it gets there.
        check_int("node_id", self.node_id, 0, _INT32_MAX)
        check_int("count", self.count, 1, _INT32_MAX)
        check_int("memory_per_device_bytes", self.memory_per_device_bytes, 0, INT64_MAX)
        check_int("issue_time_ns", self.issue_time_ns, 0, INT64_MAX)
        check_int("timeout_ns", self.timeout_ns, 0, INT64_MAX)
        check_int("expires_at_ns", self.expires_at_ns, 0, INT64_MAX)
        if self.expires_at_ns != self.issue_time_ns + self.timeout_ns:
            raise ParameterError("expires_at_ns", f"must equal issue_time_ns + timeout_ns "
                                 f"({self.issue_time_ns + self.timeout_ns}), got {self.expires_at_ns}")
        if not isinstance(self.released, bool):
            raise ParameterError("released", f"must be True or False, got {excerpt(self.released)}")

    def is_expired(self, now_ns: int) -> bool:
        """True when ``now_ns`` is at or past the expiry (a lease is valid on ``[issue, expiry)``)."""
        return now_ns >= self.expires_at_ns

    def is_active(self, now_ns: int) -> bool:
        """True when the lease still holds devices at ``now_ns``: not released, not expired."""
        return not self.released and not self.is_expired(now_ns)

    def renew(self, now_ns: int, timeout=None) -> Lease:
        """A new lease, same id, valid from ``now_ns`` for ``timeout`` (default: the same timeout).

        ``timeout`` is seconds or a string like ``"100ms"``. Renewing a released or
        expired lease is refused: its devices may already belong to someone else.
        """
        now_ns = check_int("now_ns", now_ns, 0)
        if self.released:
            raise ParameterError("lease", f"{self.lease_id} was released and cannot be renewed")
        if self.is_expired(now_ns):
            raise ParameterError("lease", f"{self.lease_id} expired at {self.expires_at_ns} ns, "
                                 f"before now_ns={now_ns}; request a new lease")
        t = self.timeout_ns if timeout is None else as_ns("timeout", timeout)
        return replace(self, issue_time_ns=now_ns, timeout_ns=t, expires_at_ns=now_ns + t)

    def release(self) -> Lease:
        """The same lease marked released (idempotent)."""
        return self if self.released else replace(self, released=True)

    def to_dict(self) -> dict:
        """Plain JSON-able dict (ints, strings, a bool)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data) -> Lease:
        """Inverse of :meth:`to_dict`; unknown or missing keys raise ``ValueError``."""
        if not isinstance(data, dict):
            raise ParameterError("lease", f"must be a dict, got {type(data).__name__}")
        unknown = sorted(set(data) - set(_FIELDS))
        missing = [k for k in _FIELDS[:-1] if k not in data]
        if unknown or missing:
            raise ParameterError("lease", f"keys must be {', '.join(_FIELDS)}; "
                                 f"unknown {unknown}, missing {missing}")
        return cls(**data)


class LeaseIds:
    """Deterministic lease-id generator for one scheduler: ``"L-<region>-<seq:06d>"``.

    Parameters
    ----------
    region : int or str
        Names the issuing scheduler, so two regions never clash.
    start : int
        First sequence number (a state file passes the saved :attr:`next_seq`).
    """

    def __init__(self, region=0, start: int = 0):
        if not isinstance(region, (int, str)) or isinstance(region, bool) or region == "":
            raise ParameterError("region", f"must be an int or non-empty string, got {excerpt(region)}")
        self.region = region
        self.next_seq = check_int("start", start, 0)

    def __call__(self) -> str:
        lease_id = f"L-{self.region}-{self.next_seq:06d}"
        self.next_seq += 1
        return lease_id

    def __repr__(self) -> str:
        return f"LeaseIds(region={self.region!r}, start={self.next_seq})"


def issue_lease(ids: LeaseIds, job_id: str, node_id: int, device_type: str, count: int,
                memory, interconnect, timeout, now=0.0, catalog: Catalog | None = None) -> Lease:
    """Issue a lease from person-friendly values (the scheduler issues it without checking).

    Parameters
    ----------
    ids : LeaseIds
        The issuing scheduler's id generator.
    device_type : str
        Catalog key or alias (``"h100"`` -> ``"h100_sxm"``).
    memory : int or str
        Bytes per device, or ``"80GB"`` (10**9) / ``"80GiB"`` (2**30).
    interconnect : str
        Class name, e.g. ``"nvlink_3"``; normalised by :func:`magnum_lib.units.parse_interconnect`.
    timeout, now : float or str
        Seconds or strings like ``"100ms"``; ``now`` is the issue time.
    """
    if not isinstance(ids, LeaseIds):
        raise ParameterError("ids", f"must be a LeaseIds, got {type(ids).__name__}")
    catalog = catalog or default_catalog()
    try:
        key = catalog.resolve(device_type)
    except (KeyError, ValueError) as exc:
        raise ParameterError("device_type", str(exc).strip("'\"")) from None
    mem = memory if isinstance(memory, numbers.Integral) and not isinstance(memory, bool) \
        else parse_param("memory", parse_size, memory)
    ic = parse_param("interconnect", parse_interconnect, interconnect).name
    timeout_ns, now_ns = as_ns("timeout", timeout), as_ns("now", now)
    # Build with a placeholder id first so a bad field never consumes a sequence number.
    lease = Lease("pending", str(job_id), node_id, key, count, int(mem), ic, now_ns, timeout_ns,
                  now_ns + timeout_ns)
    return replace(lease, lease_id=ids())
