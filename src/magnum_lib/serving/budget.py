"""How long a serving run may take, estimated before it starts (for the CLI's up-front line).

A run's work is its iterations. Every output token is one sequence's share of an
iteration, and a prefill takes at least one more (``ceil(prompt / token_budget)`` with
chunked prefill), so with one sequence per iteration (a lightly loaded replica, as in
Azure's conversation trace at its own rate) the run has about ``sum(output)`` of them
(the prefill emits the first token) plus, chunked, each prompt's other chunks; batching only lowers that, recompute preemption raises it a little.
Costs per iteration were measured on the build machine (2 shared cores) with
``benchmarks/bench_serving.py``: the whole conversation trace, 3.77 million iterations,
in 0.25 s of CPU compiled and 35 s in the readable loop. Rough: an upper estimate.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ServingEstimate", "estimate", "COMPILED_ITERATION_S", "REFERENCE_ITERATION_S"]

COMPILED_ITERATION_S = 7e-8   # 0.25 s / 3.77 M iterations
REFERENCE_ITERATION_S = 1e-5  # 35 s / 3.77 M iterations


@dataclass(frozen=True)
class ServingEstimate:
    iterations: float
    wall_s: float
    compiled: bool

    def describe(self) -> str:
        from magnum_lib.units import format_duration

        loop = "compiled" if self.compiled else "readable Python"
        return (f"at most about {self.iterations:,.0f} iterations, up to "
                f"{format_duration(int(min(self.wall_s, 1e12) * 1e9), digits=1)} on the {loop} loop")


def estimate(requests, batching: str = "continuous", token_budget: int = 512, compiled: bool = True) -> ServingEstimate:
    """Upper estimate of a run of ``requests`` (see the module docstring)."""
    iters = float(np.sum(requests.output)) if len(requests) else 0.0  # a prefill emits the first token
    if batching == "chunked" and len(requests):
        iters += float(np.sum(-(-requests.prompt // int(token_budget)) - 1))  # its other chunks
    per = COMPILED_ITERATION_S if compiled else REFERENCE_ITERATION_S
    return ServingEstimate(iters, iters * per, compiled)
