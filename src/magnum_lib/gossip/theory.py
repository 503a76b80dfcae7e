"""Closed-form and mean-field results for rumor spreading, to check the simulator against.

- Push, one random peer per round (Frieze and Grimmett 1985; Pittel 1987): everyone is
  informed after log2 N + ln N + O(1) rounds. With k distinct peers per round the informed
  set grows (1 + k)-fold per round at first, and the last uninformed nodes are each missed
  with probability about e^-k per round: log_(1+k) N + (ln N) / k.
- Push-pull (Karp, Schindelhauer, Shenker and Vocking 2000): log3 N + O(ln ln N) rounds.
- The discrete mean-field recursions below follow the expected informed fraction i_t.
"""
from __future__ import annotations

import math

import numpy as np

from magnum_lib.base.validate import ParameterError, check_choice, check_int


def _check(nodes, fanout, loss=0.0):
    nodes = check_int("nodes", nodes, 2)
    fanout = check_int("fanout", fanout, 1)
    if not 0 <= loss < 1:
        raise ParameterError("loss", f"must be a probability in [0, 1), got {loss!r}")
    return nodes, fanout, float(loss)


def push_rounds_expected(nodes: int, fanout: int = 1) -> float:
    """Rounds for push gossip to reach all N nodes: log_(1+k) N + (ln N) / k.

    16.9 at N = 1,000 and 26.4 at N = 50,000 for k = 1 (log2 N + ln N). The true mean sits
    about one round above (the O(1) term).
    """
    nodes, fanout, _ = _check(nodes, fanout)
    return math.log(nodes) / math.log(1 + fanout) + math.log(nodes) / fanout


def pushpull_rounds_estimate(nodes: int) -> float:
    """Karp et al.'s order for push-pull with one peer: log3 N + ln ln N (up to O(1))."""
    nodes, _, _ = _check(nodes, 1)
    return math.log(nodes, 3) + math.log(max(math.log(nodes), 1.0))


def mean_field(nodes: int, fanout: int = 1, loss: float = 0.0, rounds: int = 100,
               mode: str = "push") -> np.ndarray:
    """Expected informed fraction i_0 = 1/N, i_1, ..., i_rounds (length rounds + 1).

    An uninformed node stays uninformed in a round when no push reaches it, probability
    exp(-k (1 - loss) i_t) (N i_t informed nodes each hit it with probability k / N), and
    (pull modes) none of its k requests finds an informed peer and gets the answer back,
    probability (1 - i_t (1 - loss)^2)^k:

        push:      i_(t+1) = i_t + (1 - i_t)(1 - exp(-k (1 - loss) i_t))
        pull:      i_(t+1) = i_t + (1 - i_t)(1 - (1 - i_t (1 - loss)^2)^k)
        push-pull: i_(t+1) = i_t + (1 - i_t)(1 - exp(-k (1 - loss) i_t) (1 - i_t (1 - loss)^2)^k)
    """
    nodes, fanout, loss = _check(nodes, fanout, loss)
    rounds = check_int("rounds", rounds, 0)
    mode = check_choice("mode", mode, ("push", "pull", "pushpull"))
    i = np.empty(rounds + 1)
    i[0] = 1.0 / nodes
    for t in range(rounds):
        missed = 1.0
        if mode != "pull":
            missed *= math.exp(-fanout * (1 - loss) * i[t])
        if mode != "push":
            missed *= (1 - i[t] * (1 - loss) ** 2) ** fanout
        i[t + 1] = i[t] + (1 - i[t]) * (1 - missed)
    return i


def mean_field_push(nodes: int, fanout: int = 1, loss: float = 0.0, rounds: int = 100) -> np.ndarray:
    """The issue's push recursion i_(t+1) = i_t + (1 - i_t)(1 - e^(-k (1 - loss) i_t)), i_0 = 1/N."""
    return mean_field(nodes, fanout, loss, rounds, "push")


def rounds_to_fraction(curve, fraction: float) -> int | None:
    """First index t with ``curve[t] >= fraction`` (None if never)."""
    hits = np.flatnonzero(np.asarray(curve) >= fraction)
    return int(hits[0]) if hits.size else None
