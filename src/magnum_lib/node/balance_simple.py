"""Power-of-d placement, in the form a person reads (notebook 04).

Each unit job samples ``choices`` distinct servers at random and joins the least loaded
(ties: the first sampled). The kernels (``_balance.pyx`` and ``balance_ref``) draw the same
random numbers (SplitMix64, a partial Fisher-Yates shuffle); ``tests/test_teaching_forms.py``
checks that the loads agree.
"""
from __future__ import annotations

from magnum_lib.base.rng import below32, splitmix64


class Sampler:
    """``sample(d)``: d distinct servers of ``n``, drawn exactly as the kernels draw them."""

    def __init__(self, n: int, seed: int):
        self.n, self.state, self.perm = n, seed & (2**64 - 1), list(range(n))

    def sample(self, d: int) -> list[int]:
        for k in range(d):                     # swap a random later server into position k
            self.state, x = splitmix64(self.state)
            r = k + below32(x, self.n - k)
            self.perm[k], self.perm[r] = self.perm[r], self.perm[k]
        return self.perm[:d]


def power_of_d(loads: list[int], decisions: int, choices: int, seed: int) -> list[int]:
    """Place ``decisions`` unit jobs on ``loads`` (a list, updated and returned)."""
    rng = Sampler(len(loads), seed)
    for _ in range(decisions):
        sampled = rng.sample(choices)
        best = min(sampled, key=lambda s: loads[s])    # min keeps the first of equal loads
        loads[best] += 1
    return loads
