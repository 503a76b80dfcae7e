"""Tuning a scheduler's knobs by experiment (claim C47's "self-learning" half).

The article (C47) says reinforcement learning tunes the gossip topology and the lease
duration in real time. Before reaching for RL, the honest question is whether learning
beats the simple things: the shipped default, and a grid search with the same number of
simulator runs. This module gives all three one interface: an ``objective(config, seed)``
returns a score to maximize (noisy: each seed is a fresh simulated run), and each tuner
spends a fixed ``budget`` of runs.

* :func:`fixed`: the default, evaluated with the whole budget (a precise estimate of a
  choice nobody tuned).
* :func:`grid`: every candidate, ``budget // len(candidates)`` runs each.
* :func:`successive_halving`: a bandit for best-arm identification (Karnin, Koren and
  Somekh, ICML 2013; the core of Hyperband): run every candidate a little, keep the best
  half, double the runs, repeat. It spends its budget on the contenders.

Every tuner returns a :class:`TuneResult` with the chosen config and every run it made.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from magnum_lib.base.validate import ParameterError, check_int

__all__ = ["TuneResult", "fixed", "grid", "successive_halving"]

MAX_BUDGET = 1_000_000


@dataclass
class TuneResult:
    """What a tuner chose and what it ran: ``runs`` is a list of ``(config, seed, score)``."""

    method: str
    best: object
    best_mean: float
    runs: list = field(default_factory=list)

    @property
    def budget_used(self) -> int:
        return len(self.runs)


def _candidates(candidates) -> list:
    cands = list(candidates)
    if not cands:
        raise ParameterError("candidates", "is empty; give at least one configuration")
    if len(cands) > 100_000:
        raise ParameterError("candidates", f"has {len(cands):,} entries; at most 100,000")
    return cands


def _run(objective, config, seed, runs) -> float:
    score = float(objective(config, seed))
    if not math.isfinite(score):
        raise ParameterError("objective", f"returned {score!r} for {config!r} (seed {seed}); scores must be finite")
    runs.append((config, seed, score))
    return score


def fixed(objective, default, budget: int, seed: int = 0) -> TuneResult:
    """Evaluate ``default`` ``budget`` times (seeds ``seed, seed+1, ...``)."""
    budget = check_int("budget", budget, 1, MAX_BUDGET)
    runs = []
    scores = [_run(objective, default, seed + i, runs) for i in range(budget)]
    return TuneResult("fixed", default, float(np.mean(scores)), runs)


def grid(objective, candidates, budget: int, seed: int = 0) -> TuneResult:
    """Evaluate every candidate ``budget // len(candidates)`` times; pick the best mean."""
    cands = _candidates(candidates)
    budget = check_int("budget", budget, len(cands), MAX_BUDGET)
    per = budget // len(cands)
    runs, means = [], []
    for c in cands:
        means.append(np.mean([_run(objective, c, seed + i, runs) for i in range(per)]))
    best = int(np.argmax(means))
    return TuneResult("grid", cands[best], float(means[best]), runs)


def successive_halving(objective, candidates, budget: int, seed: int = 0) -> TuneResult:
    """Karnin et al.'s sequential halving: ``ceil(log2 K)`` rounds, each spending an equal
    share of the budget on the surviving candidates, keeping the better half.

    Runs of one candidate use seeds ``seed, seed+1, ...`` across rounds, so a candidate's
    mean is over distinct runs.
    """
    cands = _candidates(candidates)
    rounds = max(1, math.ceil(math.log2(len(cands))))
    budget = check_int("budget", budget, len(cands) * rounds, MAX_BUDGET)
    alive = list(range(len(cands)))
    scores = {i: [] for i in alive}
    runs = []
    for _ in range(rounds):
        per = max(1, budget // (len(alive) * rounds))
        for i in alive:
            start = seed + len(scores[i])
            scores[i] += [_run(objective, cands[i], start + k, runs) for k in range(per)]
        if len(alive) == 1:
            break
        alive.sort(key=lambda i: np.mean(scores[i]), reverse=True)
        alive = alive[: max(1, math.ceil(len(alive) / 2))]
    best = max(alive, key=lambda i: np.mean(scores[i]))
    return TuneResult("successive_halving", cands[best], float(np.mean(scores[best])), runs)
