"""``faux-magnum lease``: the article's speculative lease, against a built-in or file-backed region.

The state file (``--cluster FILE``) is a regular JSON file; a FIFO, a directory or a device
is refused without being opened for long. A symlink is followed: its target is read,
locked (``<target>.lock``) and replaced atomically in the target's directory, and the link
stays a link. A new state file gets the user's umask; a replaced one keeps its mode. The
lock is waited for at most a few seconds (see
:data:`magnum_lib.regional.statefile.LOCK_WAIT_S`), then the call fails in one line naming
the lock file.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

from magnum_lib.base.validate import ParameterError
from magnum_lib.commands._common import (
    NAME,
    PROG,
    Duration,
    Int,
    Size,
    StateFile,
    Text,
    UsageError,
    flag_name,
    json_text,
)
from magnum_lib.regional.statefile import (
    LOCK_WAIT_S,
    MAX_DEVICES_PER_NODE,
    MAX_MEMORY_BYTES,
    MAX_STATE_BYTES,
    MAX_TIMEOUT_NS,
    MIN_MEMORY_BYTES,
    MIN_TIMEOUT_NS,
)

EXIT_BUSY = 1
_REQUEST_FLAGS = ("job_id", "gpu_type", "count", "memory", "interconnect", "lease_timeout")
# The article spells this flag with an underscore; errors quote it the same way.
_FLAGS = dict({name: flag_name(name) for name in _REQUEST_FLAGS}, lease_timeout="--lease_timeout")
_DEFAULT_TIMEOUT = "30s"

_EPILOG = f"""\
examples:
  {PROG} lease --job-id=reels_infer_v4 --gpu-type=h100 --count=8 --memory=80GB \\
      --interconnect=nvlink_3 --lease_timeout=100ms
  {PROG} lease --cluster region.json --job-id=j1 --gpu-type=mi300x --count=2 --lease_timeout=10m
  {PROG} lease --cluster region.json --list
  {PROG} lease --cluster region.json --release L-default-000000

rules:
  Devices are leased whole, all on one node; --memory is a per-device minimum (GB = 10^9
  bytes, GiB = 2^30) and may not exceed the device. --interconnect is a minimum class: a
  faster link of the same family satisfies it (nvlink_4 meets nvlink_3; no NVLink node
  meets pcie_5). Placement is first fit in node order, each try checked by the node-side
  validator against the recorded leases. Issue and expiry use the wall clock; expires_at is
  an ISO-8601 UTC timestamp with nanoseconds (e.g. 2026-01-01T12:00:00.100000000Z): the
  optimistic expiry, until which the lease is presumed held with no further check unless
  released. Expired leases are pruned (their devices freed) by the next call on the same file.
  Without --cluster each call sees a fresh built-in region of 10 nodes (4 x h100_sxm nvlink_4,
  2 x a100_sxm nvlink_3, 2 x mi300x infinity_fabric, 2 x mtia_v2 pcie_5_x8; 8 devices each),
  and nothing is saved. With --cluster FILE leases persist in FILE (created from the built-in
  region on first use), which is locked during each call and replaced atomically. A
  symlinked FILE is followed: the lock is TARGET.lock and TARGET is replaced in its own
  directory, and the link stays. A new FILE gets your umask; a replaced one keeps its mode.
  A lock held for more than {LOCK_WAIT_S:g} s (a stopped or hung call) fails in one line.

exit status:
  0 done; 1 every node able to hold the request is busy, or --release names no active lease
  (state unchanged; retry later); 2 bad input or unreadable/corrupt state file (one-line error
  naming the flag; state unchanged)."""


def add(subparsers) -> None:
    p = subparsers.add_parser(
        "lease", help="issue, list or release speculative GPU leases in a region",
        description="Issue a speculative lease for COUNT devices of one type on one node and print the "
                    "lease id, the node id and the optimistic expiry; or list or release leases.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--job-id", metavar="ID",
                   type=Text(r"[A-Za-z0-9][A-Za-z0-9_.:/@+-]*", "letters, digits and _ . : / @ + - starting "
                             "with a letter or digit", max_chars=200, example="j1"),
                   help="job the lease is for (letters, digits, _ . : / @ + -)")
    p.add_argument("--gpu-type", metavar="TYPE", type=Text(NAME, "a catalog key or alias such as h100",
                                                          example="h100"),
                   help="accelerator, catalog key or alias: h100, a100, mi300x, mtia, ...")
    p.add_argument("--count", metavar="N", type=Int(1, MAX_DEVICES_PER_NODE),
                   help="devices, all on one node (default: 1)")
    p.add_argument("--memory", metavar="SIZE", type=Size(MIN_MEMORY_BYTES, MAX_MEMORY_BYTES),
                   help="memory needed per device, e.g. 80GB (10^9) or 64GiB (default: the whole device)")
    p.add_argument("--interconnect", metavar="CLASS",
                   type=Text(r"[A-Za-z0-9][A-Za-z0-9_ -]*", "a link class such as nvlink_3", max_chars=32,
                             example="nvlink_3"),
                   help="minimum link class, e.g. nvlink_3 (nvlink_4 also meets it; default: any)")
    p.add_argument("--lease_timeout", "--lease-timeout", dest="lease_timeout", metavar="DURATION",
                   type=Duration(MIN_TIMEOUT_NS, MAX_TIMEOUT_NS, bare_seconds=False),
                   help=f"lease lifetime, e.g. 100ms, 30s, 10m (default: {_DEFAULT_TIMEOUT})")
    p.add_argument("--cluster", metavar="FILE", type=StateFile("lease state file", MAX_STATE_BYTES),
                   help="JSON state file that keeps leases between calls (created on first use; "
                        "a symlink is followed)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--list", action="store_true", help="list active leases and node occupancy")
    mode.add_argument("--release", metavar="LEASE_ID",
                      type=Text(r"L-[A-Za-z0-9_.:/@+-]+-[0-9]+", "a lease id such as L-default-000000",
                                max_chars=80, example="L-default-000000"),
                      help="give back an active lease")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object (a lease: lease_id, node_id, expires_at as ISO-8601 UTC, "
                        "expires_at_ns, issued_at, job_id, device_type, count, memory_per_device_bytes, ...)")
    p.set_defaults(handler=_run_lease)


def _fail(flag: str, detail: str) -> UsageError:
    # One line, whatever the underlying message held.
    return UsageError(f"{PROG} lease: error: {flag} {' '.join(str(detail).split())}")


def _lease_row(lease) -> dict:
    from magnum_lib.regional.statefile import iso_utc

    return dict(lease.to_dict(), issued_at=iso_utc(lease.issue_time_ns), expires_at=iso_utc(lease.expires_at_ns))


def _request_kwargs(args) -> dict:
    given = [name for name in _REQUEST_FLAGS if getattr(args, name) is not None]
    if args.list or args.release is not None:
        if given:
            mode = "--list" if args.list else "--release"
            raise _fail(mode, f"takes no request flags, got {', '.join(_FLAGS[n] for n in given)}")
        return {}
    for name in ("job_id", "gpu_type"):
        if getattr(args, name) is None:
            raise _fail(_FLAGS[name], "is required to request a lease (or use --list / --release LEASE_ID)")
    return dict(job_id=args.job_id, gpu_type=args.gpu_type,
                count=1 if args.count is None else args.count, memory=args.memory,
                interconnect=args.interconnect,
                lease_timeout=_DEFAULT_TIMEOUT if args.lease_timeout is None else args.lease_timeout)


def _run_lease(args) -> int:
    from magnum_lib.regional.statefile import (
        CapacityError,
        LeaseNotFoundError,
        RegionState,
        StateFile,
        StateFileError,
        parse_request,
    )

    try:
        kwargs = _request_kwargs(args)
        if kwargs:
            parse_request(**kwargs)  # every malformed flag fails here, before the file is touched
        if args.cluster is None:
            out, text = _act(args, kwargs, RegionState.fresh(), None)
        else:
            store = StateFile(args.cluster)
            with store.transaction() as state:
                out, text = _act(args, kwargs, state, str(store.path))
    except ParameterError as exc:
        raise _fail(_FLAGS.get(exc.name, flag_name(exc.name)), exc.detail) from None
    except StateFileError as exc:
        raise _fail("--cluster", exc) from None
    except (CapacityError, LeaseNotFoundError) as exc:
        print(f"{PROG} lease: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_BUSY
    # Printed after the commit: a lease shown to the caller must exist in the file.
    try:
        print(json_text(out) if args.json else "\n".join(text), flush=True)
    except BrokenPipeError:  # e.g. `| head -1`; the state is saved, the reader left early
        sys.stdout = open(os.devnull, "w", encoding="utf-8")
    return 0


def _act(args, kwargs: dict, state, where: str | None) -> tuple[dict, list[str]]:
    """Do the one thing asked on ``state`` (inside the file's transaction); raise to change nothing.

    Returns the JSON object and the readable lines to print.
    """
    now_ns = time.time_ns()
    pruned = state.prune(now_ns)
    saved = where or "built-in region (not saved; use --cluster FILE to keep leases)"
    if args.list:
        return _list(state, pruned, where, saved, now_ns)
    if args.release is not None:
        lease = state.release(args.release, now_ns=now_ns)
        out = dict(released=_lease_row(lease), state=where, pruned_expired=[x.lease_id for x in pruned])
        text = [f"released {lease.lease_id} ({lease.count} x {lease.device_type} freed on node "
                f"{lease.node_id} {state.nodes[lease.node_id].name})"]
        return out, text
    lease = state.lease(**kwargs, now_ns=now_ns)
    node = state.nodes[lease.node_id]
    out = dict(_lease_row(lease), node_name=node.name, state=where, pruned_expired=[x.lease_id for x in pruned])
    from magnum_lib.hardware import device_link
    from magnum_lib.units import format_duration, format_size

    text = [f"lease_id    {lease.lease_id}",
            f"node_id     {lease.node_id} ({node.name}: {node.devices} x {node.device_type}, {node.interconnect})",
            f"expires_at  {out['expires_at']} (optimistic: issued + {format_duration(lease.timeout_ns)})",
            f"job         {lease.job_id}: {lease.count} x {lease.device_type}, "
            f"{format_size(lease.memory_per_device_bytes)} each, {lease.interconnect} or better",
            f"state       {saved}"]
    # Teach, do not silently accept: the article asks nvlink_3 of an H100, which has NVLink 4.
    out["notes"] = [] if kwargs.get("interconnect") is None else \
        [n for n in [device_link(lease.device_type, kwargs["interconnect"])[1]] if n]
    text += [f"note        {n}" for n in out["notes"]]
    return out, text


def _list(state, pruned, where: str | None, saved: str, now_ns: int) -> tuple[dict, list[str]]:
    from magnum_lib.regional.statefile import iso_utc

    out = dict(region=state.region, state=where, now=iso_utc(now_ns),
               leases=[_lease_row(x) for x in state.leases], nodes=state.node_table(),
               pruned_expired=[x.lease_id for x in pruned], counters=dict(state.counters))
    text = [f"region {state.region}: {len(state.leases)} active lease(s), {len(pruned)} expired one(s) pruned now; "
            f"state: {saved}"]
    if state.leases:
        text.append(f"{'LEASE_ID':<20} {'JOB':<20} {'NODE':>4} {'COUNT':>5}  EXPIRES_AT")
        text += [f"{x['lease_id']:<20} {x['job_id']:<20} {x['node_id']:>4} {x['count']:>5}  {x['expires_at']}"
                 for x in out["leases"]]
    text.append(f"{'NODE':>4} {'NAME':<10} {'TYPE':<9} {'USED':>4}/{'DEV':<3} LINK")
    text += [f"{n['node_id']:>4} {n['name']:<10} {n['device_type']:<9} {n['used']:>4}/{n['devices']:<3} "
             f"{n['interconnect']}" for n in out["nodes"]]
    return out, text
