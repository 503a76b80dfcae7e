"""Gossip dissemination, the readable reference: one rumor, or every node's view of the others.

This is the model the notebook shows; ``_dissemination.pyx`` is its compiled twin with the
same signatures and, for the same seed, the same results bit for bit. The public API,
:mod:`magnum_lib.gossip.dissemination`, validates the user's parameters; both kernels still
run :func:`check_rumor_args` / :func:`check_staleness_args` first, which check every
invariant the compiled nogil loops trust (sizes, array lengths, index ranges), so no call
from Python can make them read or write outside their arrays or loop forever.

The model, in synchronous rounds t = 1, 2, ... (one round = one gossip interval):

1. Start of round t: a node whose ``crash_round <= t`` is down for good; a node away after
   churn comes back when its rejoin round arrives, with its state lost (it must hear the
   rumor again); every other live node leaves with probability ``churn``, for ``churn_downtime``
   rounds.
2. Every live node u, in id order, picks ``fanout`` distinct peers uniformly among the other
   n - 1 nodes and contacts each one (in push mode an uninformed node's messages are counted
   but not drawn: they cannot spread the rumor). Push: u's message carries its state to v. Pull: u asks,
   v replies with its state. Push-pull: both. Each message is lost with probability ``loss``;
   a message to a down node, or across the partition while it lasts, is lost too (the sender
   cannot tell). What a node learns in round t is usable from round t + 1: that is what makes
   the rounds synchronous (``infection_round == t`` means "learned during this round").
3. End of round t: count live nodes and informed live nodes.

Randomness: one SplitMix64 stream per run, seeded with the user's seed, drawn in a fixed order
(churn draws, then per node its peers, then per contact its loss draws), so the compiled kernel
can replay it exactly. A peer is drawn as ``r = floor(x (n - 1) / 2^64)`` in [0, n - 2] and
shifted past u (``r >= u -> r + 1``): uniform over the others up to a bias below n / 2^64.
A probability p is an integer threshold ``round(p 2^53)`` compared with the top 53 bits of a draw.
"""
from __future__ import annotations

import numpy as np

from magnum_lib.base.rng import SplitMix64
from magnum_lib.base.validate import ParameterError, check_int

PUSH, PULL, PUSHPULL = 1, 2, 3
NEVER = -1  # infection round of a node that does not have the rumor
MAX_NODES = 50_000_000  # ~21 B of per-node arrays each: 1 GB at this size
MAX_ROUNDS = 1_000_000  # int32 infection rounds, and a run that long is a mistake
MAX_STALENESS_NODES = 4_096  # two n x n int32 views: 134 MB at this size
THRESHOLD_MAX = 2**53  # a probability as an integer threshold round(p 2^53)
INT64 = (-2**63, 2**63 - 1)


def _length(name: str, array, need: int, *, exact: bool = True) -> None:
    got = len(array)
    if got != need if exact else got < need:
        raise ParameterError(name, f"must hold {'' if exact else 'at least '}{need} entries, got {got}")


def _common_args(n, fanout, mode, loss_threshold, max_nodes: int) -> int:
    n = check_int("n", n, 2, max_nodes)
    check_int("fanout", fanout, 1, n - 1)  # pick_peers draws fanout distinct peers among n - 1
    check_int("mode", mode, PUSH, PUSHPULL)
    check_int("loss_threshold", loss_threshold, 0, THRESHOLD_MAX)
    return n


def check_rumor_args(n, fanout, mode, loss_threshold, churn_threshold, churn_downtime, crash_round,
                     partition_start, partition_end, source, max_rounds, infection_round, informed,
                     live) -> None:
    """Raise ParameterError unless :func:`run_rumor` (either backend) may run on these."""
    n = _common_args(n, fanout, mode, loss_threshold, MAX_NODES)
    check_int("churn_threshold", churn_threshold, 0, THRESHOLD_MAX)
    check_int("churn_downtime", churn_downtime, 1, MAX_ROUNDS)
    check_int("partition_start", partition_start, *INT64)
    check_int("partition_end", partition_end, *INT64)
    check_int("source", source, 0, n - 1)
    max_rounds = check_int("max_rounds", max_rounds, 0, MAX_ROUNDS)
    _length("crash_round", crash_round, n)
    _length("infection_round", infection_round, n)
    _length("informed", informed, max_rounds + 1, exact=False)
    _length("live", live, max_rounds + 1, exact=False)


def check_staleness_args(n, fanout, mode, loss_threshold, partition_start, partition_end, warmup,
                         measure, histogram) -> None:
    """Raise ParameterError unless :func:`run_staleness` (either backend) may run on these."""
    _common_args(n, fanout, mode, loss_threshold, MAX_STALENESS_NODES)
    check_int("partition_start", partition_start, *INT64)
    check_int("partition_end", partition_end, *INT64)
    warmup = check_int("warmup", warmup, 0, MAX_ROUNDS)
    measure = check_int("measure", measure, 0, MAX_ROUNDS)
    # An entry never heard of is generation 0: age t + 1 <= warmup + measure + 1.
    _length("histogram", histogram, warmup + measure + 2, exact=False)


def pick_peers(rng: SplitMix64, u: int, n: int, fanout: int) -> list[int]:
    """``fanout`` distinct peers of node u, uniform among the other n - 1 (redraw repeats)."""
    peers: list[int] = []
    while len(peers) < fanout:
        v = rng.below(n - 1)
        if v >= u:  # skip u itself
            v += 1
        if v not in peers:
            peers.append(v)
    return peers


def contact(rng: SplitMix64, mode: int, loss_threshold: int, reachable: bool) -> int:
    """One exchange u -> v. Returns how far it got: 0 nothing arrived, 1 u's message
    arrived at v, 2 v's reply came back too. Loss is drawn before reachability is known,
    so the random stream does not depend on who is up."""
    lost = bool(loss_threshold) and rng.chance(loss_threshold)
    if lost or not reachable:
        return 0
    if mode == PUSH:
        return 1
    if loss_threshold and rng.chance(loss_threshold):
        return 1
    return 2


def sent(mode: int, arrived: int) -> int:
    """Messages an exchange cost: u's message, plus v's reply if v got it (pull modes)."""
    return 1 + (mode != PUSH and arrived >= 1)


def run_rumor(n, fanout, mode, loss_threshold, churn_threshold, churn_downtime, crash_round,
              partition_start, partition_end, source, max_rounds, stop_when_all, seed,
              infection_round, informed, live):
    """Spread one rumor from ``source``.

    Fills ``infection_round`` (int32[n], the round each node last learned the rumor, 0 for
    the source, -1 never) and ``informed`` / ``live`` (int64[max_rounds + 1], counts at the
    end of each round, index 0 = start). Stops after ``max_rounds``, or, if
    ``stop_when_all``, at the first round where every live node is informed or none is.

    Returns
    -------
    (rounds, messages) : tuple of int
    """
    check_rumor_args(n, fanout, mode, loss_threshold, churn_threshold, churn_downtime, crash_round,
                     partition_start, partition_end, source, max_rounds, infection_round, informed, live)
    rng = SplitMix64(seed)
    half = n // 2  # partition: nodes [0, n // 2) on one side, the rest on the other
    up = [crash_round[u] > 0 for u in range(n)]
    back = [0] * n  # round at which a node away after churn rejoins (0: not away)
    infection_round[:] = NEVER
    if up[source]:
        infection_round[source] = 0
    live[0], informed[0] = sum(up), int(up[source])
    messages, t = 0, 0
    while t < max_rounds:
        t += 1
        for u in range(n):  # 1. crashes and churn
            if crash_round[u] <= t:
                up[u] = False
            elif back[u]:
                if back[u] == t:
                    up[u], back[u], infection_round[u] = True, 0, NEVER
            elif churn_threshold and rng.chance(churn_threshold):
                up[u], back[u] = False, t + churn_downtime
        split = partition_start <= t < partition_end
        for u in range(n):  # 2. every live node gossips
            if not up[u]:
                continue
            if mode == PUSH and not 0 <= infection_round[u] < t:
                messages += fanout  # sent, but without the rumor: no need to draw them
                continue
            for v in pick_peers(rng, u, n, fanout):
                reachable = up[v] and not (split and (u < half) != (v < half))
                arrived = contact(rng, mode, loss_threshold, reachable)
                messages += sent(mode, arrived)
                if arrived >= 1 and mode != PULL and 0 <= infection_round[u] < t \
                        and infection_round[v] == NEVER:
                    infection_round[v] = t
                if arrived == 2 and 0 <= infection_round[v] < t and infection_round[u] == NEVER:
                    infection_round[u] = t
        live[t] = sum(up)  # 3. count
        informed[t] = sum(1 for u in range(n) if up[u] and infection_round[u] != NEVER)
        if stop_when_all and (informed[t] == live[t] or informed[t] == 0):
            break
    return t, messages


def run_staleness(n, fanout, mode, loss_threshold, partition_start, partition_end, warmup,
                  measure, seed, histogram):
    """Every node updates its own state every round and gossips its whole view.

    ``view[i, j]`` is the newest generation of node j that node i knows; in round t each node
    first stamps its own entry with generation t (made at the start of the round), then the
    exchanges merge views by element-wise max (last writer wins by generation), reading the
    views as they were at the start of the round. After ``warmup`` rounds, each of the next
    ``measure`` rounds adds the age of every view entry with i != j to ``histogram``
    (int64, index = age in rounds): age = t + 1 - view[i, j], so a generation learned in the
    round it was made is 1 round old. All nodes stay up (no crashes or churn in this mode).

    Returns
    -------
    messages : int
    """
    check_staleness_args(n, fanout, mode, loss_threshold, partition_start, partition_end, warmup,
                         measure, histogram)
    rng = SplitMix64(seed)
    half = n // 2
    view = np.zeros((n, n), dtype=np.int32)
    off_diagonal = ~np.eye(n, dtype=bool)
    messages = 0
    for t in range(1, warmup + measure + 1):
        np.fill_diagonal(view, t)
        old = view.copy()
        split = partition_start <= t < partition_end
        for u in range(n):
            for v in pick_peers(rng, u, n, fanout):
                reachable = not (split and (u < half) != (v < half))
                arrived = contact(rng, mode, loss_threshold, reachable)
                messages += sent(mode, arrived)
                if arrived >= 1 and mode != PULL:
                    np.maximum(view[v], old[u], out=view[v])
                if arrived == 2:
                    np.maximum(view[u], old[v], out=view[u])
        if t > warmup:
            ages = t + 1 - view[off_diagonal]
            histogram += np.bincount(ages, minlength=histogram.size)[: histogram.size]
    return messages
