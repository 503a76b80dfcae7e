"""The datagram format of the live gossip mode: a checked header, then JSON records.

Layout (network byte order)::

    offset 0  4 bytes  magic b"FMGS"
    offset 4  1 byte   format version (1)
    offset 5  1 byte   kind: 1 = plain states (lww, article), 2 = versioned (vc)
    offset 6  2 bytes  payload length in bytes (must equal what follows)
    offset 8  payload  UTF-8 JSON lines: {"from": node_id}, then one record per line

A record is ``NodeState.to_dict()`` (kind 1) or ``{"state": ..., "clock": {...}}`` (kind 2).
One record per line lets a receiver recognise a record it has already checked by its bytes
(see ``_RECORDS``) instead of parsing and validating it again: most of what gossip carries
is repeated, and this is what keeps 50 Python endpoints on one core within their budget.
A datagram is at most :data:`MAX_DATAGRAM` bytes. Anything else - short, wrong magic or
version, a length that does not match, too big, bad JSON, a bad field - raises
:class:`WireError` with a short ``reason`` the endpoint counts; nothing else escapes.
"""
from __future__ import annotations

import json
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from magnum_lib.base.validate import ParameterError
from magnum_lib.gossip.merge import Versioned, maximal
from magnum_lib.gossip.state import NodeState, _check_id
from magnum_lib.gossip.vclock import VectorClock

MAGIC = b"FMGS"
VERSION = 1
KIND_STATES = 1
KIND_VERSIONED = 2
HEADER = struct.Struct("!4sBBH")
MAX_DATAGRAM = 16384  # bytes; far below the 65,507-byte UDP limit, one loopback read
REASONS = ("short", "magic", "version", "kind", "length", "oversized", "json", "fields")


class WireError(ValueError):
    """A datagram that must be dropped; ``reason`` is one of :data:`REASONS`."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


@dataclass(frozen=True)
class Message:
    """A decoded datagram: the sender and its (partial) view in merge-ready form."""

    sender: str
    kind: int
    view: dict


# -- encoding ---------------------------------------------------------------------------
def entry_bytes(entry) -> bytes:
    """The record lines of one view entry, each preceded by a newline.

    ``entry`` is a NodeState, or a vector-clock entry (frozenset of Versioned) whose
    siblings are written in a stable order.
    """
    if isinstance(entry, NodeState):
        return b"\n" + json.dumps(entry.to_dict(), separators=(",", ":")).encode()
    return b"".join(sorted(b"\n" + json.dumps(v.to_dict(), separators=(",", ":")).encode()
                           for v in entry))


def pack(sender: str, kind: int, entries: Sequence[bytes], *, max_bytes: int = MAX_DATAGRAM) -> tuple[bytes, int]:
    """One datagram from encoded entries (see :func:`entry_bytes`), taken in order while they fit.

    Returns ``(datagram, entries_included)``; an entry that does not fit is skipped whole.
    """
    head = json.dumps({"from": _check_id("sender", sender)}, separators=(",", ":")).encode()
    budget = max_bytes - HEADER.size - len(head)
    chosen = []
    for e in entries:
        if len(e) <= budget:
            chosen.append(e)
            budget -= len(e)
    if entries and not chosen:
        raise ParameterError("max_bytes", f"must leave room for at least one entry, got {max_bytes}")
    payload = head + b"".join(chosen)
    return HEADER.pack(MAGIC, VERSION, kind, len(payload)) + payload, len(chosen)


def view_kind(view: Mapping) -> int:
    """KIND_STATES for a plain view, KIND_VERSIONED for a vector-clock view."""
    return KIND_VERSIONED if any(not isinstance(e, NodeState) for e in view.values()) else KIND_STATES


def encode_view(sender: str, view: Mapping, *, order: Sequence[str] | None = None,
                max_bytes: int = MAX_DATAGRAM) -> tuple[bytes, int]:
    """One datagram carrying as much of ``view`` as fits in ``max_bytes``.

    Parameters
    ----------
    sender : str
        The sending node's id.
    view : mapping
        ``node_id -> NodeState`` (kind 1) or ``node_id -> frozenset[Versioned]`` (kind 2).
    order : sequence of node ids, optional
        Which entries to include first when the whole view does not fit (default: the
        sender's own entry, then the view's order). Entries left out are skipped whole.
    max_bytes : int
        Datagram size limit, at least the header plus one entry.

    Returns
    -------
    (datagram, entries_included)
    """
    if order is None:
        order = [sender] + [n for n in view if n != sender]
    entries = [entry_bytes(view[n]) for n in order if n in view]
    return pack(sender, view_kind(view), entries, max_bytes=max_bytes)


# -- decoding ---------------------------------------------------------------------------
def _state_from(record) -> NodeState:
    if not isinstance(record, dict) or set(record) != {"node_id", "generation", "busy", "gpus", "pending"}:
        raise WireError("fields", f"state record must have node_id, generation, busy, gpus, pending: {record!r:.80}")
    pending = record["pending"]
    # Exact types: JSON true or 1.0 is not an integer field.
    if not all(type(record[k]) is int for k in ("generation", "busy", "gpus")) \
            or type(pending) is not list \
            or not all(type(p) is list and len(p) == 2 and type(p[0]) is str and type(p[1]) is int
                       for p in pending):
        raise WireError("fields", f"state record has a field of the wrong type: {record!r:.80}")
    try:
        return NodeState(record["node_id"], record["generation"], record["busy"], record["gpus"],
                         tuple(tuple(p) for p in pending))
    except (ValueError, TypeError) as exc:
        raise WireError("fields", str(exc)) from None


def _versioned_from(record) -> Versioned:
    if not isinstance(record, dict) or set(record) != {"state", "clock"} or not isinstance(record["clock"], dict):
        raise WireError("fields", f"versioned record must be {{state, clock}}: {record!r:.80}")
    try:
        clock = VectorClock(record["clock"])
    except ValueError as exc:
        raise WireError("fields", str(exc)) from None
    return Versioned(_state_from(record["state"]), clock)


_RECORDS: dict[tuple[int, bytes], object] = {}  # (kind, record line) -> checked record
_RECORDS_MAX = 65536           # entries, and
_RECORDS_MAX_BYTES = 16 << 20  # bytes of record lines: a flood of big records stays bounded
_records_bytes = 0


def _record(kind: int, line: bytes):
    global _records_bytes
    key = (kind, line)
    rec = _RECORDS.get(key)
    if rec is None:
        try:
            raw = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise WireError("json", str(exc)[:80]) from None
        rec = _state_from(raw) if kind == KIND_STATES else _versioned_from(raw)
        if len(_RECORDS) >= _RECORDS_MAX or _records_bytes + len(line) > _RECORDS_MAX_BYTES:
            _RECORDS.clear()  # crude but bounded; hits come back within a round
            _records_bytes = 0
        _RECORDS[key] = rec
        _records_bytes += len(line)
    return rec


def decode(data: bytes, *, max_bytes: int = MAX_DATAGRAM) -> Message:
    """Check and parse one datagram; raise :class:`WireError` for anything malformed."""
    if len(data) > max_bytes:
        raise WireError("oversized", f"{len(data)} bytes > {max_bytes}")
    if len(data) < HEADER.size:
        raise WireError("short", f"{len(data)} bytes < header {HEADER.size}")
    magic, version, kind, length = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise WireError("magic", f"{magic!r} != {MAGIC!r}")
    if version != VERSION:
        raise WireError("version", f"{version} != {VERSION}")
    if kind not in (KIND_STATES, KIND_VERSIONED):
        raise WireError("kind", f"unknown kind {kind}")
    if length != len(data) - HEADER.size:
        raise WireError("length", f"header says {length} bytes, {len(data) - HEADER.size} follow")
    head, *lines = bytes(data[HEADER.size:]).split(b"\n")
    try:
        body = json.loads(head.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise WireError("json", str(exc)[:80]) from None
    if not isinstance(body, dict) or set(body) != {"from"}:
        raise WireError("fields", 'first line must be {"from": node_id}')
    try:
        sender = _check_id("from", body["from"])
    except ValueError as exc:
        raise WireError("fields", str(exc)) from None
    if kind == KIND_STATES:
        view: dict = {}
        for line in lines:
            s = _record(kind, line)
            if s.node_id in view:
                raise WireError("fields", f"node {s.node_id!r} listed twice")
            view[s.node_id] = s
    else:
        groups: dict[str, set] = {}
        for line in lines:
            v = _record(kind, line)
            groups.setdefault(v.state.node_id, set()).add(v)
        view = {n: maximal(vs) for n, vs in groups.items()}
    return Message(sender, kind, view)
