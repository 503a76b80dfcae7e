"""Vector clocks: which of two versions is newer, or whether neither is.

A generation counter orders the versions written by *one* writer. When two writers can
change the same record (a node and a regional scheduler reserving its GPUs, or a node that
restarted and lost its counter), a single number silently picks a winner. A vector clock
keeps one counter per writer, so it can say "concurrent": neither saw the other.
"""
from __future__ import annotations

import enum
import numbers
from collections.abc import Iterator, Mapping

from magnum_lib.base.validate import ParameterError
from magnum_lib.gossip.state import MAX_GENERATION, _check_id


class Order(enum.Enum):
    """How clock ``a`` relates to clock ``b`` in ``a.compare(b)``."""

    BEFORE = "before"          # a happened before b (b has seen everything a has)
    AFTER = "after"            # a happened after b
    EQUAL = "equal"
    CONCURRENT = "concurrent"  # neither has seen all of the other's updates


class VectorClock(Mapping[str, int]):
    """An immutable mapping ``writer id -> counter`` (counters >= 1; absent means 0).

    Hashable and comparable for equality; zero entries are dropped so equal clocks have
    one representation.
    """

    __slots__ = ("_items", "_hash")

    def __init__(self, counters: Mapping[str, int] | None = None):
        items = {}
        for node, count in dict(counters or {}).items():
            _check_id("clock node id", node)
            if isinstance(count, bool) or not isinstance(count, numbers.Integral) \
                    or not 0 <= count <= MAX_GENERATION:
                raise ParameterError("clock counter",
                                     f"for {node!r} must be an integer in [0, {MAX_GENERATION}], got {count!r}")
            if count:
                items[node] = int(count)
        self._items = tuple(sorted(items.items()))
        self._hash = hash(self._items)

    def __getitem__(self, node: str) -> int:
        return dict(self._items)[node]

    def get(self, node, default=0):
        for k, v in self._items:
            if k == node:
                return v
        return default

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        if isinstance(other, VectorClock):
            return self._items == other._items
        return NotImplemented

    def __repr__(self) -> str:
        return f"VectorClock({dict(self._items)!r})"

    def increment(self, node: str) -> VectorClock:
        """The clock after ``node`` writes once more."""
        counters = dict(self._items)
        counters[node] = counters.get(node, 0) + 1
        return VectorClock(counters)

    def merge(self, other: VectorClock) -> VectorClock:
        """Pointwise maximum: the clock of a version that has seen both."""
        counters = dict(self._items)
        for node, count in other._items:
            counters[node] = max(counters.get(node, 0), count)
        return VectorClock(counters)

    def compare(self, other: VectorClock) -> Order:
        """:class:`Order` of this clock relative to ``other``."""
        if not isinstance(other, VectorClock):
            raise ParameterError("other", f"must be a VectorClock, got {type(other).__name__}")
        nodes = set(self) | set(other)
        less = any(self.get(n) < other.get(n) for n in nodes)
        more = any(self.get(n) > other.get(n) for n in nodes)
        if less and more:
            return Order.CONCURRENT
        if less:
            return Order.BEFORE
        if more:
            return Order.AFTER
        return Order.EQUAL

    def sort_key(self) -> tuple:
        """A total order consistent with happened-before (used only to break ties)."""
        return (sum(c for _, c in self._items), self._items)

    def to_dict(self) -> dict:
        return dict(self._items)
