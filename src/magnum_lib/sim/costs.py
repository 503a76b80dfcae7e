"""Measure the scheduling-work costs the simulator charges, with the regional layer's own kernels.

``python -m magnum_lib.sim.costs`` times one regional round (``regional.bench``: two-choices
placement of ``requests`` leases from a view of ``nodes`` 8-GPU nodes, then validation) and
prints the per-decision and per-validation costs beside the defaults of
:class:`magnum_lib.sim.SimConfig`. The defaults are constants (a run must not depend on the
machine); this is how they were chosen and how to check them on another machine.
"""
from __future__ import annotations

import json

from magnum_lib.sim.config import SimConfig


def measure(nodes: int = 15_000, requests: int = 1_000, repeats: int = 21) -> dict:
    """Per-decision cost of a round (placement + validation) and per-validation cost, seconds."""
    from magnum_lib.regional.bench import bench_regional

    b = bench_regional(nodes=nodes, requests=requests, repeats=repeats)
    d = SimConfig()
    return {"backend": b["backend"], "nodes": nodes, "requests": requests,
            "round_per_decision_s": b["round_ms"] / 1e3 / requests,
            "validation_s": 1.0 / b["validations_per_s"],
            "defaults": {"c_decision_s": d.c_decision_s, "c_validate_s": d.c_validate_s,
                         "c_node_s": d.c_node_s, "c_round_s": d.c_round_s}}


if __name__ == "__main__":  # pragma: no cover
    print(json.dumps(measure()))
