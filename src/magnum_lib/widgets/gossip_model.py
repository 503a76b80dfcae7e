"""Model behind the gossip explorer (notebook 05): one rumor spreading over a cluster, and
how old every node's view of the others is.

No widget code here: the explorer (``gossip_explorer.py``), notebook 05 and the tests all
call :func:`evaluate`, which runs the library's simulators
(:func:`magnum_lib.gossip.dissemination.simulate` and ``staleness``) and puts the
mean-field theory (:func:`magnum_lib.gossip.theory.mean_field`) beside them.

Helpers the notebook's claim checks need and the library does not offer as such, built on
its public API: :func:`message_bytes_for` (the datagram size that gives a stated
bandwidth), :func:`fanout_for_quorum` (the smallest fanout whose mean-field curve reaches
a quorum within a round budget) and :func:`run_live_anywhere` (the live UDP mode from
inside a Jupyter kernel, whose event loop is already running).
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import math
from dataclasses import dataclass

import numpy as np

from magnum_lib.base.validate import ParameterError
from magnum_lib.gossip import theory
from magnum_lib.gossip.dissemination import DisseminationResult, StalenessResult, default_warmup, simulate, staleness
from magnum_lib.gossip.live import LiveResult, run_live

STALE_NODES = 128
"""Cluster size of the staleness panel: it keeps an n x n view per run, so it stays small
(128 nodes answer in a few ms compiled) whatever the ``nodes`` slider says."""
STALE_MEASURE = 30
"""Rounds sampled after the partition (if any) has healed."""
MAX_ROUNDS = 1000


def mean_field_quorum_rounds(nodes: int, fanout: int, loss: float = 0.0, mode: str = "push",
                             quorum: float = 0.5, max_rounds: int = MAX_ROUNDS) -> int | None:
    """First round at which the mean-field informed fraction exceeds ``quorum`` (None: never)."""
    curve = theory.mean_field(nodes, fanout, loss, max_rounds, mode)
    hits = np.flatnonzero(curve > quorum)
    return int(hits[0]) if hits.size else None


def fanout_for_quorum(nodes: int, rounds: int, *, loss: float = 0.0, mode: str = "push",
                      quorum: float = 0.5) -> int:
    """Smallest fanout k whose mean-field curve passes ``quorum`` within ``rounds`` rounds.

    Bisection over k in [1, nodes - 1]: the informed fraction after a fixed number of
    rounds grows with k.
    """
    def ok(k: int) -> bool:
        r = mean_field_quorum_rounds(nodes, k, loss, mode, quorum, rounds)
        return r is not None and r <= rounds

    lo, hi = 1, nodes - 1
    if not ok(hi):
        raise ParameterError("rounds", f"{rounds} rounds are too few even with fanout nodes - 1")
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def run_live_anywhere(**kwargs) -> LiveResult:
    """:func:`magnum_lib.gossip.live.run_live` from any caller, a Jupyter kernel included.

    ``run_live`` starts its own event loop with ``asyncio.run``, which refuses to run where
    a loop is already running (as in a notebook's kernel); there it runs in a worker thread.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return run_live(**kwargs)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(run_live, **kwargs).result()


def message_bytes_for(bits_per_s: float, fanout: int, interval_s: float) -> float:
    """Datagram size (bytes) at which sending ``fanout`` datagrams every ``interval_s``
    costs ``bits_per_s``: bits_per_s * interval / (8 * fanout)."""
    return bits_per_s * interval_s / (8.0 * fanout)


@dataclass(frozen=True)
class GossipScenario:
    """One evaluated explorer setting. Times in ms; ``ok`` False means ``message`` says why
    and the results are None."""

    nodes: int
    fanout: int
    mode: str
    interval_ms: float
    loss: float
    partition_rounds: int
    seed: int
    ok: bool
    message: str
    spread: DisseminationResult | None = None
    stale: StalenessResult | None = None
    stale_nodes: int = STALE_NODES
    theory_curve: np.ndarray | None = None  # mean-field informed fraction per round
    theory_quorum_rounds: int | None = None

    @property
    def quorum_ms(self) -> float:
        r = None if self.spread is None else self.spread.rounds_to_quorum
        return math.nan if r is None else r * self.interval_ms

    @property
    def all_ms(self) -> float:
        r = None if self.spread is None else self.spread.rounds_to_all
        return math.nan if r is None else r * self.interval_ms

    @property
    def theory_applies(self) -> bool:
        """The mean field has no partition in it."""
        return self.partition_rounds == 0

    @property
    def mbit_per_node(self) -> float:
        """Gossip bandwidth per node, Mbit/s, under the library's 88-byte datagram."""
        return math.nan if self.spread is None else self.spread.bytes_per_node_per_s * 8 / 1e6

    def stale_ms(self, q: float) -> float:
        """Quantile ``q`` of the view age, in ms."""
        return math.nan if self.stale is None else self.stale.quantile(q) * self.interval_ms

    def grid(self) -> np.ndarray:
        """Infection round per node laid out row-major on a square grid (node 0 top left).

        NaN pads the grid past the last node; a node never informed holds ``rounds + 1``
        (above every real round, so a colormap's "over" colour marks it).
        """
        if self.spread is None:
            return np.full((1, 1), np.nan)
        rounds = self.spread.infection_round.astype(float)
        rounds[rounds < 0] = self.spread.rounds + 1
        side = math.ceil(math.sqrt(self.nodes))
        out = np.full(side * side, np.nan)
        out[: self.nodes] = rounds
        return out.reshape(side, side)


def evaluate(nodes: int = 4096, fanout: int = 1, interval_ms: float = 1.0, loss: float = 0.0,
             partition_rounds: int = 0, *, mode: str = "push", seed: int = 0,
             stale_nodes: int = STALE_NODES) -> GossipScenario:
    """Spread one rumor over ``nodes`` and measure view staleness on ``stale_nodes``.

    Parameters
    ----------
    nodes, fanout, mode, loss, seed
        As for :func:`magnum_lib.gossip.dissemination.simulate`.
    interval_ms : float
        Gossip interval in ms (> 0); rounds are the same, times scale with it.
    partition_rounds : int
        The two halves of the cluster cannot talk for this many rounds from round 1 (the
        spread) and from the start of the staleness sample (so its effect is measured).
    stale_nodes : int
        Cluster size of the staleness run (kept small: n x n views).

    Bad settings (fanout >= nodes, loss outside [0, 1), ...) return a scenario with
    ``ok=False`` and the library's message rather than raising.
    """
    base = dict(nodes=nodes, fanout=fanout, mode=mode, interval_ms=interval_ms, loss=loss,
                partition_rounds=partition_rounds, seed=seed)
    try:
        if isinstance(interval_ms, bool) or not isinstance(interval_ms, (int, float)) \
                or not math.isfinite(interval_ms) or interval_ms <= 0:
            raise ParameterError("interval_ms", f"must be a number of ms > 0, got {interval_ms!r}")
        interval = interval_ms / 1e3
        spread = simulate(nodes, fanout, mode, loss=loss, interval=interval, seed=seed,
                          partition_rounds=partition_rounds, max_rounds=MAX_ROUNDS)
        sn = min(int(stale_nodes), int(nodes))
        if fanout >= sn:
            stale = None
        else:
            warm = default_warmup(sn, fanout, loss)
            stale = staleness(sn, fanout, mode, loss=loss, interval=interval, seed=seed,
                              warmup=warm, measure=partition_rounds + STALE_MEASURE,
                              partition_rounds=partition_rounds, partition_start=warm + 1)
    except (ParameterError, ValueError, TypeError) as exc:
        return GossipScenario(**base, ok=False, message=str(exc))
    curve = theory.mean_field(nodes, fanout, loss, max(spread.rounds, 1), spread.mode)
    hits = np.flatnonzero(curve > 0.5)
    return GossipScenario(**base, ok=True, message="", spread=spread, stale=stale, stale_nodes=sn,
                          theory_curve=curve, theory_quorum_rounds=int(hits[0]) if hits.size else None)
