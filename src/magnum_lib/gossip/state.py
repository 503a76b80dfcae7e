"""What one node gossips about itself, as the article sketches it.

A :class:`NodeState` is an immutable record: the node's id, a generation counter the node
bumps on every change, a bitmap of busy GPUs (bit ``i`` set = GPU ``i`` busy; up to 256
GPUs, so 32 bytes on the wire) and the jobs waiting on the node with their priorities.
A *view* is what one node believes about the cluster: a mapping ``node_id -> NodeState``
(see :func:`view_of`). The merge rules in :mod:`magnum_lib.gossip.merge` combine views.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from magnum_lib.base.validate import ParameterError, check_int

MAX_GPUS = 256
MAX_ID_CHARS = 64          # node and job ids; keeps a full state inside one datagram
MAX_PENDING = 64           # jobs listed per node; a longer queue is a planner's business
MAX_GENERATION = 2**63 - 1  # int64 on the wire and in the simulator
PRIORITY_RANGE = (-2**31, 2**31 - 1)

View = Mapping[str, "NodeState"]


def _check_id(name: str, value) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_ID_CHARS or not value.isprintable():
        raise ParameterError(name, f"must be a non-empty printable string of at most {MAX_ID_CHARS} "
                                   f"characters, got {value!r}")
    return value


def _check_pending(value) -> tuple[tuple[str, int], ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ParameterError("pending", f"must be a sequence of (job_id, priority) pairs, got {value!r}")
    pairs = []
    for i, item in enumerate(value):
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise ParameterError(f"pending[{i}]", f"must be a (job_id, priority) pair, got {item!r}")
        pairs.append((_check_id(f"pending[{i}].job_id", item[0]),
                      check_int(f"pending[{i}].priority", item[1], *PRIORITY_RANGE)))
    if len(pairs) > MAX_PENDING:
        raise ParameterError("pending", f"must list at most {MAX_PENDING} jobs, got {len(pairs)}")
    ids = [job for job, _ in pairs]
    if len(set(ids)) != len(ids):
        raise ParameterError("pending", f"job ids must be unique, got {ids!r}")
    return tuple(pairs)


@dataclass(frozen=True)
class NodeState:
    """One node's gossiped state (immutable; build changes with :meth:`updated`).

    Parameters
    ----------
    node_id : str
        Non-empty printable id, at most 64 characters.
    generation : int
        Version counter in [0, 2**63 - 1]; the owner bumps it on every change.
    busy : int
        Utilization bitmap: bit ``i`` set means GPU ``i`` is busy. Must fit in ``gpus`` bits.
    gpus : int
        GPUs on the node, 1..256 (default 8).
    pending : sequence of (job_id, priority)
        Jobs waiting on the node, at most 64, unique ids, priorities in int32 range.
    """

    node_id: str
    generation: int = 0
    busy: int = 0
    gpus: int = 8
    pending: tuple[tuple[str, int], ...] = ()

    def __post_init__(self):
        _check_id("node_id", self.node_id)
        check_int("generation", self.generation, 0, MAX_GENERATION)
        gpus = check_int("gpus", self.gpus, 1, MAX_GPUS)
        busy = check_int("busy", self.busy, 0, 2**MAX_GPUS - 1)
        if busy >> gpus:
            raise ParameterError("busy", f"sets GPU {busy.bit_length() - 1} but the node has "
                                         f"gpus={gpus} (valid GPU indexes 0..{gpus - 1})")
        object.__setattr__(self, "pending", _check_pending(self.pending))

    # -- reading ------------------------------------------------------------------------
    def is_busy(self, gpu: int) -> bool:
        """Whether GPU ``gpu`` (0-based) is busy."""
        return bool(self.busy >> self._gpu_index(gpu) & 1)

    def busy_gpus(self) -> tuple[int, ...]:
        """Indexes of the busy GPUs, ascending."""
        return tuple(i for i in range(self.gpus) if self.busy >> i & 1)

    @property
    def free_count(self) -> int:
        """Number of free GPUs."""
        return self.gpus - self.busy.bit_count()

    def bitmap_bytes(self) -> bytes:
        """The bitmap as the fixed 32-byte little-endian value the wire carries (bit i = GPU i)."""
        return self.busy.to_bytes(MAX_GPUS // 8, "little")

    def sort_key(self) -> tuple:
        """A total order on states of one node: generation first, then content.

        Last-writer-wins uses it so two different states with the same generation are
        resolved the same way on every node, whatever the order of arrival.
        """
        return (self.generation, self.busy, self.gpus, self.pending)

    # -- changing (returns new states) --------------------------------------------------
    def updated(self, *, busy=None, busy_gpus: Iterable[int] | None = None, pending=None) -> NodeState:
        """The next version: generation + 1 with a new bitmap and/or pending list.

        ``busy`` is a whole bitmap; ``busy_gpus`` lists busy GPU indexes instead (give one).
        """
        if busy is not None and busy_gpus is not None:
            raise ParameterError("busy_gpus", "cannot be given together with busy")
        if busy_gpus is not None:
            busy = bitmap_of(busy_gpus, self.gpus)
        return replace(self, generation=self.generation + 1,
                       busy=self.busy if busy is None else busy,
                       pending=self.pending if pending is None else pending)

    def to_dict(self) -> dict:
        """Plain JSON-ready fields (``pending`` as a list of [job_id, priority])."""
        return {"node_id": self.node_id, "generation": self.generation, "busy": self.busy,
                "gpus": self.gpus, "pending": [list(p) for p in self.pending]}

    @classmethod
    def from_dict(cls, data: Mapping) -> NodeState:
        """Inverse of :meth:`to_dict`; unknown or missing keys raise ParameterError."""
        if not isinstance(data, Mapping):
            raise ParameterError("state", f"must be a mapping, got {type(data).__name__}")
        fields = {"node_id", "generation", "busy", "gpus", "pending"}
        if set(data) != fields:
            raise ParameterError("state", f"must have exactly the keys {sorted(fields)}, got {sorted(data)}")
        return cls(**data)

    def _gpu_index(self, gpu) -> int:
        return check_int("gpu", gpu, 0, self.gpus - 1)


def bitmap_of(gpus_busy: Iterable[int], gpus: int = MAX_GPUS) -> int:
    """The bitmap with exactly the listed GPU indexes set (each in ``0..gpus-1``)."""
    gpus = check_int("gpus", gpus, 1, MAX_GPUS)
    bitmap = 0
    for i in gpus_busy:
        bitmap |= 1 << check_int("gpu", i, 0, gpus - 1)
    return bitmap


def view_of(*states: NodeState) -> dict[str, NodeState]:
    """A view from states of distinct nodes: ``{state.node_id: state}``."""
    view: dict[str, NodeState] = {}
    for s in states:
        if not isinstance(s, NodeState):
            raise ParameterError("states", f"must be NodeState objects, got {type(s).__name__}")
        if s.node_id in view:
            raise ParameterError("states", f"list node {s.node_id!r} twice")
        view[s.node_id] = s
    return view


def check_view(view, name: str = "view") -> Mapping[str, NodeState]:
    """Return ``view`` if it maps each node id to a NodeState with that id, else raise."""
    if type(view) is not dict and not isinstance(view, Mapping):  # the ABC check is slow
        raise ParameterError(name, f"must be a mapping node_id -> NodeState, got {type(view).__name__}")
    for key, s in view.items():
        if (type(s) is not NodeState and not isinstance(s, NodeState)) or s.node_id != key:
            raise ParameterError(name, f"entry {key!r} must be a NodeState with that node_id, got {s!r}")
    return view
