"""One planning round: snapshot -> classes -> placement -> bound, metrics, hints.

``plan(snapshot, algo)`` runs one of:

==============  ==============================================================  =========
algo            what                                                            optimal?
==============  ==============================================================  =========
``article``     greedy argmin of the article's score, as written                no
``greedy``      greedy argmin of the corrected cost                             no
``assignment``  linear sum assignment over concrete nodes (small snapshots)     yes
``flow``        min-cost flow over equivalence classes, HiGHS                   yes
``lp``          the same LP with one row per job (no job classes), HiGHS        yes
==============  ==============================================================  =========

Every plan is scored by the same corrected cost (:mod:`magnum_lib.planner.scoring`) and
compared with the same lower bound, the LP optimum (:mod:`magnum_lib.planner.lp`).
Jobs no node can take are listed with the reason; nothing here raises on NaN, inf or empty
inputs, only on bad parameters (ValueError naming the parameter).
"""
from __future__ import annotations

import math
import numbers
import time
from dataclasses import dataclass, field

import numpy as np

from magnum_lib.base.validate import ParameterError, check_choice
from magnum_lib.planner import assignment_placement
from magnum_lib.planner.classes import ClassCosts, Classes, article_class_scores, build_classes, class_costs, unroll
from magnum_lib.planner.flow import class_penalty, flow_node_classes, lp_node_classes
from magnum_lib.planner.greedy import greedy_node_classes
from magnum_lib.planner.hints import DEFAULT_HORIZON_S, make_hints
from magnum_lib.planner.lp import transport_lp
from magnum_lib.planner.metrics import Metrics, evaluate, gap
from magnum_lib.planner.scoring import DEFAULT_WEIGHT, check_weight
from magnum_lib.planner.snapshot import Snapshot

__all__ = ["plan", "Plan", "ALGORITHMS", "DEFAULT_PENALTY", "unplaceable_reasons"]

ALGORITHMS = ("greedy", "article", "assignment", "flow", "lp")
DEFAULT_PENALTY = 1000.0


@dataclass(frozen=True, eq=False)
class Plan:
    """The result of one planning round.

    algo : which planner.
    hints : one :class:`Hint` per placed job.
    job_node : node of each job (-1: unplaced), int64.
    unplaced : ``(job_id, reason)`` for every job left out.
    metrics : :class:`Metrics` (cost, fragmentation, traffic, ...).
    lower_bound : the LP optimum; ``gap`` = ``metrics.cost / lower_bound - 1`` (see
        :func:`magnum_lib.planner.metrics.gap` for a zero bound).
    timings : seconds: ``classes_s`` (snapshot -> classes and cost matrix), ``solve_s``,
        ``unroll_s`` (classes -> nodes, hints, metrics), ``bound_s`` (0 for flow, whose
        optimum is the bound), ``wall_s`` (all of it).
    classes : (node classes, job classes) counts.
    """

    algo: str
    hints: tuple
    job_node: np.ndarray = field(repr=False)
    unplaced: tuple
    metrics: Metrics
    lower_bound: float
    gap: float
    timings: dict
    classes: tuple
    weight: float
    unplaced_penalty: float

    @property
    def cost(self) -> float:
        return self.metrics.cost

    def unplaced_reasons(self) -> dict:
        """Count of unplaced jobs by reason."""
        out: dict = {}
        for _, reason in self.unplaced:
            out[reason] = out.get(reason, 0) + 1
        return out

    def to_dict(self, hints: str = "count") -> dict:
        """JSON-ready summary. ``hints="count"`` gives the number of hints, ``"list"`` them all."""
        check_choice("hints", hints, ("count", "list"))
        g = self.gap if math.isfinite(self.gap) else None
        return {
            "algo": self.algo, "cost": self.metrics.cost, "lower_bound": self.lower_bound, "gap": g,
            "unplaced": len(self.unplaced), "unplaced_reasons": self.unplaced_reasons(),
            "hints": len(self.hints) if hints == "count" else [h.to_dict() for h in self.hints],
            "wall_s": self.timings["wall_s"], "timings": dict(self.timings),
            "metrics": self.metrics.to_dict(), "node_classes": self.classes[0], "job_classes": self.classes[1],
            "weight": self.weight, "unplaced_penalty": self.unplaced_penalty,
        }


def unplaceable_reasons(snap: Snapshot, cl: Classes, cc: ClassCosts) -> dict:
    """Reason for every job class with no allowed node at all (class id -> text)."""
    out = {}
    for jc in np.flatnonzero(~cc.allowed.any(axis=1)).tolist():
        d, t = int(cl.jc_demand[jc]), int(cl.jc_type[jc])
        name = "any type" if t < 0 else f"type {snap.type_keys[t]}"
        of_type = np.ones(snap.n_nodes, bool) if t < 0 else snap.node_type == t
        if not of_type.any():
            out[jc] = f"no node of {name} in the snapshot"
        elif d > snap.node_capacity[of_type].max():
            out[jc] = (f"demand {d} devices exceeds the largest node of {name} "
                       f"({int(snap.node_capacity[of_type].max())}); multi-node gangs are not planned here")
        elif not cc.fits[jc].any():
            out[jc] = f"no node of {name} has {d} free devices"
        else:
            out[jc] = "every node that fits has a non-finite cost (NaN/inf bandwidth or communication volume)"
    return out


def _check_penalty(value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value <= 0:
        raise ParameterError("unplaced_penalty", f"must be a finite number > 0, got {value!r}")
    return float(value)


def plan(snap: Snapshot, algo: str = "flow", *, weight: float = DEFAULT_WEIGHT,
         horizon_s: float = DEFAULT_HORIZON_S, unplaced_penalty: float = DEFAULT_PENALTY,
         top_groups: int = 3) -> Plan:
    """Plan one round: place ``snap``'s pending jobs with ``algo`` and report hints and metrics.

    Parameters
    ----------
    snap : Snapshot
    algo : {"greedy", "article", "assignment", "flow", "lp"}
    weight : float
        Bandwidth against packing in the corrected cost, [0, 1] (default 0.5).
    horizon_s : float
        How long hints stay valid, seconds (default 30).
    unplaced_penalty : float
        Cost of leaving a job of priority 1 unplaced (x priority), > 0 (default 1000).
    top_groups : int
        Groups per hint, >= 1 (default 3).

    Raises
    ------
    ValueError
        A bad parameter; ``assignment`` on more than ``assignment_placement.MAX_NODES``
        nodes or ``MAX_JOBS`` jobs.
    """
    if not isinstance(snap, Snapshot):
        raise TypeError(f"snap must be a Snapshot, got {type(snap).__name__}")
    check_choice("algo", algo, ALGORITHMS)
    weight = check_weight(weight)
    unplaced_penalty = _check_penalty(unplaced_penalty)
    if isinstance(horizon_s, bool) or not isinstance(horizon_s, numbers.Real) or not 0 < horizon_s < math.inf:
        raise ParameterError("horizon_s", f"must be a finite number of seconds > 0, got {horizon_s!r}")
    if isinstance(top_groups, bool) or not isinstance(top_groups, numbers.Integral) or top_groups < 1:
        raise ParameterError("top_groups", f"must be an integer >= 1, got {top_groups!r}")
    if algo == "assignment":
        for name, n, limit in (("nodes", snap.n_nodes, assignment_placement.MAX_NODES),
                               ("jobs", snap.n_jobs, assignment_placement.MAX_JOBS)):
            if n > limit:
                raise ParameterError(name, f"must be <= {limit} for the assignment planner (it solves a dense "
                                           f"jobs x (nodes + jobs) matrix), got {n}; use flow")

    t0 = time.perf_counter()
    cl = build_classes(snap)
    cc = class_costs(cl, weight)
    t1 = time.perf_counter()
    job_node = None
    bound = None
    if algo == "flow":
        job_nc, sol = flow_node_classes(cl, cc, unplaced_penalty)
        bound = sol.objective
    elif algo == "lp":
        job_nc, _ = lp_node_classes(cl, cc, unplaced_penalty)
    elif algo == "assignment":
        job_node = assignment_placement.assignment_nodes(cl, cc, unplaced_penalty)
    else:
        scores = cc.cost if algo == "greedy" else article_class_scores(cl, cc)
        job_nc = greedy_node_classes(cl, scores, snap.job_priority)
    t2 = time.perf_counter()
    if bound is None:
        bound = transport_lp(cc.cost, cl.jc_count, cl.nc_count, class_penalty(cl, unplaced_penalty)).objective
    t3 = time.perf_counter()
    if job_node is None:
        job_node = unroll(cl, job_nc)
    hints = make_hints(snap, cl, cc, job_node, float(horizon_s), int(top_groups))
    metrics = evaluate(snap, job_node, weight, unplaced_penalty)
    intrinsic = unplaceable_reasons(snap, cl, cc)
    capacity = ("every fitting node was taken when its turn came (greedy, priority order)"
                if algo in ("greedy", "article") else
                "left out by the optimum: too few fitting nodes for all jobs this round")
    unplaced = tuple((j, intrinsic.get(int(cl.job_class[j]), capacity))
                     for j in np.flatnonzero(job_node < 0).tolist())
    t4 = time.perf_counter()
    timings = {"classes_s": t1 - t0, "solve_s": t2 - t1, "bound_s": t3 - t2, "unroll_s": t4 - t3,
               "wall_s": t4 - t0}
    return Plan(algo=algo, hints=hints, job_node=job_node, unplaced=unplaced, metrics=metrics,
                lower_bound=float(bound), gap=gap(metrics.cost, float(bound)), timings=timings,
                classes=(cl.n_node_classes, cl.n_job_classes), weight=weight, unplaced_penalty=unplaced_penalty)
