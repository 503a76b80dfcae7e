"""Three ways to merge what another node believes into what this node believes.

Every merge is a pure function of two views and returns a new dict; inputs are never
changed. The live UDP mode (:mod:`magnum_lib.gossip.live`) calls these same functions.

* :func:`merge_article` - the article's ``merge_state`` (C32), exactly as shown: when the
  remote generation is newer, OR the remote busy bitmap into the local one; nothing else is
  copied (not the generation, not the pending jobs), although its comment says "Overwrite
  local state with remote's view". **Flawed**: a GPU once seen busy never reads free again
  (see :func:`phantom_busy`), the local generation never catches up (so every later round
  merges again), and the result depends on the order of arrival (not commutative).
* :func:`merge_lww` - per-node last-writer-wins by generation, as in Scuttlebutt: the state
  with the higher generation replaces the other whole. Equal generations with different
  content are resolved by :meth:`NodeState.sort_key`, a total order, so every node picks
  the same winner: the merge is commutative, associative and idempotent.
* :func:`merge_vc` - vector clocks. Each node's entry is a set of *siblings*
  (:class:`Versioned`: a state and its clock). The merge keeps the siblings no other
  sibling has seen (the maximal ones); concurrent writes survive side by side instead of
  one silently winning, and :func:`resolve` picks a reader's answer deterministically and
  says that there was a conflict. Keeping maximal elements of a union is a lattice join,
  so it is commutative, associative and idempotent too.
"""
from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, replace

from magnum_lib.base.validate import ParameterError, check_choice, check_int, check_positive
from magnum_lib.gossip.state import MAX_GPUS, NodeState, View, check_view
from magnum_lib.gossip.vclock import Order, VectorClock


# -- the article's rule ---------------------------------------------------------------------
def merge_state_article(local: NodeState, remote: NodeState) -> NodeState:
    """The article's per-node ``merge_state`` (C32), exactly as shown (flawed on purpose).

    Newer remote generation: ``local.gpu_util_mask |= remote.gpu_util_mask``, and that is
    all; the local generation and pending jobs stay as they were. Otherwise keep the local
    state. The OR is the bug: once any version said a GPU was busy, every later merge keeps
    it busy, although the owner freed it long ago; and since the generation is not copied,
    the local record never looks up to date, so the next round merges (and ORs) again.
    """
    if remote.generation > local.generation:
        # gpus=max only so a bitmap from a bigger node record still validates.
        return replace(local, busy=local.busy | remote.busy, gpus=max(local.gpus, remote.gpus))
    return local


def _merge_views(local, remote, pick: Callable, check: Callable = check_view) -> dict:
    """Per node: copy what one side alone knows, ``pick(mine, theirs)`` what both know."""
    check(local, "local")
    check(remote, "remote")
    out = dict(local)
    for node, theirs in remote.items():
        mine = out.get(node)
        if mine is None:
            out[node] = theirs
        elif mine is not theirs:  # every rule leaves an entry merged with itself unchanged
            out[node] = pick(mine, theirs)
    return out


def merge_article(local: View, remote: View) -> dict[str, NodeState]:
    """Merge two views with the article's rule (:func:`merge_state_article`) per node.

    Nodes known to one side only are copied. Kept to demonstrate its flaw: stale busy bits
    persist, and ``merge_article(a, b) != merge_article(b, a)`` in general.
    """
    return _merge_views(local, remote, merge_state_article)


# -- last-writer-wins -----------------------------------------------------------------------
def merge_state_lww(a: NodeState, b: NodeState) -> NodeState:
    """The state with the higher generation; equal generations by the content order."""
    return b if b.sort_key() > a.sort_key() else a


def merge_lww(local: View, remote: View) -> dict[str, NodeState]:
    """Per-node last-writer-wins by generation (commutative, associative, idempotent)."""
    return _merge_views(local, remote, merge_state_lww)


# -- vector clocks --------------------------------------------------------------------------
@dataclass(frozen=True)
class Versioned:
    """A state tagged with the vector clock of the write that produced it."""

    state: NodeState
    clock: VectorClock

    def __post_init__(self):
        if not isinstance(self.state, NodeState):
            raise ParameterError("state", f"must be a NodeState, got {type(self.state).__name__}")
        if not isinstance(self.clock, VectorClock):
            raise ParameterError("clock", f"must be a VectorClock, got {type(self.clock).__name__}")

    def below(self, other: Versioned) -> bool:
        """Whether ``other`` supersedes this version.

        True when ``other``'s clock is strictly after ours, or the clocks are equal and
        ``other`` is larger in the content order (two different states under one clock
        cannot both be kept without breaking idempotence, so the order decides).
        """
        order = self.clock.compare(other.clock)
        return order is Order.BEFORE or (order is Order.EQUAL and self.state.sort_key() < other.state.sort_key())

    def to_dict(self) -> dict:
        return {"state": self.state.to_dict(), "clock": self.clock.to_dict()}


VCView = Mapping[str, frozenset]  # node_id -> frozenset[Versioned], never empty


def maximal(versions: Iterable[Versioned]) -> frozenset:
    """The versions no other version supersedes (the siblings to keep)."""
    vs = frozenset(versions)
    if len(vs) <= 1:  # the common case: one writer, no siblings
        return vs
    return frozenset(v for v in vs if not any(v.below(w) for w in vs if w is not v))


def check_vc_view(view, name: str = "view") -> VCView:
    """Return ``view`` if it maps node ids to non-empty sets of Versioned of that node."""
    if type(view) is not dict and not isinstance(view, Mapping):
        raise ParameterError(name, f"must be a mapping node_id -> frozenset[Versioned], got {type(view).__name__}")
    for node, siblings in view.items():
        if not isinstance(siblings, frozenset) or not siblings or not all(
                isinstance(v, Versioned) and v.state.node_id == node for v in siblings):
            raise ParameterError(name, f"entry {node!r} must be a non-empty frozenset of Versioned "
                                       f"states of that node, got {siblings!r}")
        if len(siblings) > 1 and maximal(siblings) != siblings:
            raise ParameterError(name, f"entry {node!r} holds a sibling another one supersedes "
                                       "(keep only maximal(siblings))")
    return view


def merge_vc(local: VCView, remote: VCView) -> dict[str, frozenset]:
    """Merge two vector-clock views: per node, the maximal siblings of the union.

    Concurrent versions are all kept (see :func:`conflicts`, :func:`resolve`).
    """
    return _merge_views(local, remote, _join_siblings, check_vc_view)


def _join_siblings(mine: frozenset, theirs: frozenset) -> frozenset:
    return mine if mine == theirs else maximal(mine | theirs)


def vc_view(view: View) -> dict[str, frozenset]:
    """Lift a plain view: each state gets the clock ``{node_id: generation}`` (sole writer)."""
    check_view(view)
    return {n: frozenset({Versioned(s, VectorClock({n: s.generation}))}) for n, s in view.items()}


def write_vc(view: VCView, writer: str, state: NodeState) -> dict[str, frozenset]:
    """``writer`` stores ``state`` after reading every sibling: they are all superseded.

    The new clock is the merge of the siblings' clocks, incremented at ``writer``.
    """
    check_vc_view(view)
    clock = VectorClock()
    for v in view.get(state.node_id, ()):
        clock = clock.merge(v.clock)
    out = dict(view)
    out[state.node_id] = frozenset({Versioned(state, clock.increment(writer))})
    return out


def resolve(siblings: Iterable[Versioned]) -> tuple[NodeState, bool]:
    """A reader's answer from a node's siblings: ``(state, conflict)``.

    Picks the sibling with the highest generation, then the content order, then the clock
    order - the same choice on every node. ``conflict`` is True when there was more than one
    sibling, i.e. concurrent writes were detected and one was chosen.
    """
    siblings = list(siblings)
    if not siblings:
        raise ParameterError("siblings", "must not be empty")
    best = max(siblings, key=lambda v: (v.state.sort_key(), v.clock.sort_key()))
    return best.state, len(siblings) > 1


def conflicts(view: VCView) -> tuple[str, ...]:
    """Node ids whose entry holds concurrent siblings, sorted."""
    return tuple(sorted(n for n, s in check_vc_view(view).items() if len(s) > 1))


# -- what the article's flaw costs ----------------------------------------------------------
def phantom_busy(view: View, truth: View) -> dict[str, tuple[int, ...]]:
    """GPUs that ``view`` reads busy but the owner's own (``truth``) state says are free.

    Call it once ``view`` has received the owner's newest state (right after merging it,
    or at the end of a run): a correct merge then reads the owner's bitmap, so whatever is
    reported is a wrong bitmap, not staleness. Every node the view knows is compared,
    whatever generation it records, because the article's merge (C32) never copies the
    generation: its records stay at the old one while their bitmaps go wrong.
    """
    check_view(view, "view")
    check_view(truth, "truth")
    out = {}
    for node, mine in view.items():
        real = truth.get(node)
        if real is not None:
            phantom = mine.busy & ~real.busy
            if phantom:
                out[node] = tuple(i for i in range(MAX_GPUS) if phantom >> i & 1)
    return out


# -- speed --------------------------------------------------------------------------------
RULES = {"article": merge_article, "lww": merge_lww, "vc": merge_vc}


@dataclass(frozen=True)
class MergeRate:
    """How fast a merge rule runs. ``state_merges_per_s`` counts one node entry merged."""

    rule: str
    nodes: int
    view_merges: int
    seconds: float
    view_merges_per_s: float
    state_merges_per_s: float

    def to_dict(self) -> dict:
        return asdict(self)


def _random_views(rule: str, nodes: int, seed: int) -> tuple[dict, dict]:
    rng = random.Random(seed)

    def view():
        v = {f"n{i}": NodeState(f"n{i}", rng.randrange(1000), rng.getrandbits(8), 8,
                                ((f"j{i}", rng.randrange(10)),)) for i in range(nodes)}
        return vc_view(v) if rule == "vc" else v

    return view(), view()


def measure_merges(rule: str = "lww", nodes: int = 256, min_time: float = 0.2, seed: int = 0) -> MergeRate:
    """Merge two random full views of ``nodes`` nodes repeatedly for at least ``min_time`` s.

    Parameters
    ----------
    rule : {"lww", "article", "vc"}
    nodes : int
        Nodes in each view (1..100000).
    min_time : float
        Seconds to keep merging (timed with ``time.perf_counter``), 0 < min_time <= 60.
    seed : int
        Seed for the random views.
    """
    check_choice("rule", rule, tuple(RULES))
    nodes = check_int("nodes", nodes, 1, 100_000)
    min_time = check_positive("min_time", min_time, 60.0)
    seed = check_int("seed", seed, 0)
    merge = RULES[rule]
    a, b = _random_views(rule, nodes, seed)
    count = 0
    start = time.perf_counter()
    while True:
        merge(a, b)
        count += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_time:
            break
    per_s = count / elapsed
    return MergeRate(rule, nodes, count, elapsed, per_s, per_s * nodes)


def merges_per_second(rule: str = "lww", nodes: int = 256, min_time: float = 0.2, seed: int = 0) -> float:
    """Node-state merges per second for ``rule`` (see :func:`measure_merges`)."""
    return measure_merges(rule, nodes, min_time, seed).state_merges_per_s
