"""Global planner benchmark: a 50,000-node, 5,000-job plan by min-cost flow, in one run.

Prints one JSON object:

* ``flow``: median over ``--repeats`` runs of the wall time of ``plan(snapshot, "flow")``,
  split into snapshot -> classes (and the class cost matrix), solve (HiGHS dual simplex on
  the class-level transportation LP) and unroll (classes -> concrete nodes, hints, metrics,
  reasons); CPU time too (less distorted by other processes); the gap to the LP bound
  (the bound is this LP's own optimum, so the gap is 0 up to round-off; the check that the
  optimum is right is the test suite's brute force and the per-node assignment solver).
* ``greedy`` and ``article``: the same snapshot with both greedy variants, their cost and
  gap against the same bound, and their time (bound computation listed apart).
* ``contended``: a tenth of the nodes for the same jobs (timed once), where greedy order
  matters and the gaps of the greedy variants show.
* ``lp_per_job``: the same LP with one row per job (no job classes), timed once: what
  the aggregation buys. Skip it with ``--no-per-job``.
* ``highs_methods``: the class-level LP alone under HiGHS dual simplex (used), HiGHS's
  default choice and interior point: time and whether the flows came out integral.
* ``peers``: the class-level instance ``flow`` solves (same cost matrix, supplies,
  capacities, penalty) under ours (HiGHS, ``transport_lp``), OR-tools'
  ``SimpleMinCostFlow`` and networkx's ``network_simplex``: median graph-build and solve
  times, ratios to ours, versions, and the check that the optima agree. The peers take
  integer costs, so costs are scaled by ``PEER_COST_SCALE`` (10^6) and rounded; the
  rounding bound is reported. Both peers are optional (``pip install ortools networkx``,
  see benchmarks/README.md); an absent one is recorded as not measured. ``contended``
  repeats the comparison once on its instance, where some jobs stay unplaced.

The process is pinned to one core (``os.sched_setaffinity``) and BLAS / OpenMP threads
are limited to 1, as the target is "under 900 ms on one core".

Usage: .venv/bin/python benchmarks/bench_planner.py [--nodes 50000] [--jobs 5000] [--repeats 5]
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import importlib.metadata  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import scipy  # noqa: E402

from magnum_lib.planner.classes import build_classes, class_costs  # noqa: E402
from magnum_lib.planner.flow import class_penalty  # noqa: E402
from magnum_lib.planner.lp import transport_lp  # noqa: E402
from magnum_lib.planner.plan import DEFAULT_PENALTY, plan  # noqa: E402
from magnum_lib.planner.scoring import DEFAULT_WEIGHT  # noqa: E402
from magnum_lib.planner.snapshot import make_snapshot  # noqa: E402

TARGET_S = 0.9
TARGET_GAP = 0.01
PEER_COST_SCALE = 10**6  # costs x 1e6, rounded: the peers take integer costs only


def timed_plans(snap, algo: str, repeats: int) -> dict:
    """Median wall / CPU time and the timing split of ``repeats`` plans."""
    walls, cpus, splits = [], [], []
    for _ in range(repeats):
        c0 = time.process_time()
        p = plan(snap, algo)
        cpus.append(time.process_time() - c0)
        walls.append(p.timings["wall_s"])
        splits.append(p.timings)
    mid = sorted(range(repeats), key=lambda i: walls[i])[repeats // 2]
    return {"wall_s_median": statistics.median(walls), "wall_s_min": min(walls),
            "cpu_s_median": statistics.median(cpus), "split_of_median_run": splits[mid],
            "cost": p.cost, "lower_bound": p.lower_bound, "gap": p.gap, "placed": p.metrics.placed,
            "unplaced": len(p.unplaced), "hints": len(p.hints), "node_classes": p.classes[0],
            "job_classes": p.classes[1], "stranded_devices": p.metrics.stranded_devices,
            "comm_time_s": p.metrics.comm_time_s}


def highs_methods(snap, repeats: int) -> dict:
    """The class-level LP under each HiGHS method: time, optimum, whether the flows came out whole."""
    cl = build_classes(snap)
    cc = class_costs(cl, DEFAULT_WEIGHT)
    out = {}
    for method in ("highs-ds", "highs", "highs-ipm"):
        walls = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            sol = transport_lp(cc.cost, cl.jc_count, cl.nc_count, class_penalty(cl, DEFAULT_PENALTY), method=method)
            walls.append(time.perf_counter() - t0)
        out[method] = {"wall_s_median": statistics.median(walls), "objective": sol.objective,
                       "integral": sol.integral, "arcs": int(cc.allowed.sum())}
    return out


def class_instance(snap):
    """The class-level transportation problem ``plan(snap, "flow")`` solves: cost, supply, capacity, penalty."""
    cl = build_classes(snap)
    return (class_costs(cl, DEFAULT_WEIGHT).cost, cl.jc_count, cl.nc_count,
            class_penalty(cl, DEFAULT_PENALTY))


def flow_arcs(cost, supply, capacity, penalty, scale: int) -> dict:
    """The transportation problem as a min-cost flow graph with integer costs (for the peers).

    Nodes: job classes ``0..S-1`` (supply = their job count), node classes ``S..S+T-1`` and
    one terminal ``S+T`` (demand = all jobs). Arcs: job class -> node class at
    ``rint(cost * scale)`` wherever the cost is finite, node class -> terminal with the
    class's node count as capacity at 0, and job class -> terminal at ``rint(penalty * scale)``
    (the unplaced option). ``real`` keeps the unrounded cost of each arc, ``kind`` tells the
    arcs apart (0 placement, 1 node-class capacity, 2 unplaced).
    """
    n_src, n_snk = cost.shape
    src, snk = np.nonzero(np.isfinite(cost))
    terminal = n_src + n_snk
    supply = supply.astype(np.int64)
    tail = np.concatenate([src, n_src + np.arange(n_snk), np.arange(n_src)]).astype(np.int64)
    head = np.concatenate([n_src + snk, np.full(n_snk + n_src, terminal)]).astype(np.int64)
    cap = np.concatenate([supply[src], capacity.astype(np.int64), supply])
    real = np.concatenate([cost[src, snk], np.zeros(n_snk), penalty.astype(np.float64)])
    kind = np.repeat([0, 1, 2], [src.size, n_snk, n_src])
    node_supply = np.concatenate([supply, np.zeros(n_snk, dtype=np.int64), [-int(supply.sum())]])
    return {"tail": tail, "head": head, "capacity": cap, "real": real, "kind": kind,
            "unit_cost": np.rint(real * scale).astype(np.int64), "node_supply": node_supply, "scale": scale}


def solve_ortools(g: dict):
    """Build ``SimpleMinCostFlow`` from ``g`` and solve it; return (build_s, solve_s, integer cost, arc flows)."""
    from ortools.graph.python import min_cost_flow

    t0 = time.perf_counter()
    mcf = min_cost_flow.SimpleMinCostFlow()
    arcs = mcf.add_arcs_with_capacity_and_unit_cost(g["tail"], g["head"], g["capacity"], g["unit_cost"])
    mcf.set_nodes_supplies(np.arange(g["node_supply"].size), g["node_supply"])
    t1 = time.perf_counter()
    status = mcf.solve()
    t2 = time.perf_counter()
    if status != mcf.OPTIMAL:
        raise RuntimeError(f"OR-tools min-cost flow returned status {status}")
    return t1 - t0, t2 - t1, int(mcf.optimal_cost()), np.asarray(mcf.flows(arcs), dtype=np.int64)


def solve_networkx(g: dict):
    """Build a networkx DiGraph from ``g`` and run ``network_simplex``; same return as :func:`solve_ortools`."""
    import networkx as nx

    t0 = time.perf_counter()
    graph = nx.DiGraph()
    # networkx's demand is the negative of a supply (positive = the node receives).
    graph.add_nodes_from((v, {"demand": -int(b)}) for v, b in enumerate(g["node_supply"]))
    ends = list(zip(g["tail"].tolist(), g["head"].tolist(), strict=True))
    graph.add_edges_from((u, v, {"capacity": c, "weight": w})
                         for (u, v), c, w in zip(ends, g["capacity"].tolist(), g["unit_cost"].tolist(), strict=True))
    t1 = time.perf_counter()
    total, flow_dict = nx.network_simplex(graph)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, int(total), np.array([flow_dict[u][v] for u, v in ends], dtype=np.int64)


def check_flow(g: dict, flows: np.ndarray) -> bool:
    """Every job class sends exactly its jobs and no node class takes more jobs than it has nodes."""
    n = g["node_supply"].size
    out = np.bincount(g["tail"], weights=flows, minlength=n)
    into = np.bincount(g["head"], weights=flows, minlength=n)
    return bool(np.all(flows >= 0) and np.all(flows <= g["capacity"])
                and np.array_equal(out - into, g["node_supply"].astype(np.float64)))


def median_runs(run, repeats: int) -> tuple[list, tuple]:
    """Call ``run()`` ``repeats`` times; return the per-field medians of its timings and its last answer."""
    results = [run() for _ in range(repeats)]
    return [statistics.median(r[i] for r in results) for i in range(2)], results[-1]


def peers(snap, repeats: int, scale: int = PEER_COST_SCALE) -> dict:
    """Ours (HiGHS) beside OR-tools' min-cost flow and networkx's network simplex, same class-level instance.

    The peers need integer costs: every cost and penalty is multiplied by ``scale`` and
    rounded. Rounding moves an arc's cost by at most ``err = max|rint(c*scale)/scale - c|``
    per job, and a flow carries ``jobs`` units over one priced arc each, so the unscaled
    integer optimum is within ``err * jobs`` of the real one, and the real cost of the peer's
    flow within ``2 * err * jobs`` (0 when every cost is a multiple of ``1/scale``).
    Timed: building the solver's graph from the shared arc arrays, and the solve, apart.
    """
    cost, supply, capacity, penalty = class_instance(snap)

    def ours():
        t0 = time.perf_counter()
        sol = transport_lp(cost, supply, capacity, penalty)
        return 0.0, time.perf_counter() - t0, sol

    (_, ours_s), (_, _, sol) = median_runs(ours, repeats)
    t0 = time.perf_counter()
    g = flow_arcs(cost, supply, capacity, penalty, scale)
    arcs_s = time.perf_counter() - t0
    err = float(np.max(np.abs(g["unit_cost"] / scale - g["real"])))
    bound = err * int(supply.sum())
    tol = 1e-9 * max(1.0, abs(sol.objective))  # HiGHS's own floating-point round-off
    out = {"instance": {"job_classes": int(cost.shape[0]), "node_classes": int(cost.shape[1]),
                        "placement_arcs": int(np.isfinite(cost).sum()), "flow_arcs": int(g["tail"].size),
                        "jobs": int(supply.sum()), "nodes": int(capacity.sum()),
                        "cost_scale": scale, "max_rounding_error_per_job": err, "rounding_bound": bound},
           "ours_highs_ds": {"solve_s_median": ours_s, "objective": sol.objective,
                             "unplaced": int(sol.unplaced.sum()),
                             "note": "transport_lp: sparse matrix build + linprog(method='highs-ds')"},
           "arc_arrays_s": arcs_s}
    for name, module, dist, run in (("ortools_min_cost_flow", "ortools", "ortools", solve_ortools),
                                    ("networkx_network_simplex", "networkx", "networkx", solve_networkx)):
        if importlib.util.find_spec(module) is None:
            out[name] = {"measured": False, "why": f"not measured: {module} is not installed "
                                                   "(optional peer: see benchmarks/README.md)"}
            continue
        (build_s, solve_s), (_, _, total, flows) = median_runs(lambda: run(g), repeats)  # noqa: B023
        at_real = float(flows @ g["real"])
        out[name] = {"measured": True, "version": importlib.metadata.version(dist),
                     "build_s_median": build_s, "solve_s_median": solve_s,
                     "objective_scaled": total, "objective_unscaled": total / scale,
                     "objective_of_flow_at_real_costs": at_real,
                     "diff_vs_highs": total / scale - sol.objective,
                     "matches_highs_within_rounding_bound": abs(total / scale - sol.objective) <= bound + tol,
                     "flow_at_real_costs_within_2x_bound": -tol <= at_real - sol.objective <= 2 * bound + tol,
                     "flow_feasible": check_flow(g, flows),
                     "unplaced": int(flows[g["kind"] == 2].sum()),
                     "solve_over_ours": solve_s / ours_s, "build_plus_solve_over_ours": (build_s + solve_s) / ours_s}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=50_000)
    ap.add_argument("--jobs", type=int, default=5_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-per-job", action="store_true", help="skip the slow one-row-per-job LP")
    args = ap.parse_args()
    pinned = None
    if hasattr(os, "sched_setaffinity"):
        pinned = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {pinned})

    t0 = time.perf_counter()
    snap = make_snapshot(args.nodes, args.jobs, seed=args.seed)
    snapshot_s = time.perf_counter() - t0
    plan(snap, "flow")  # warm-up: imports, first HiGHS call

    flow = timed_plans(snap, "flow", args.repeats)
    flow["meets_target"] = bool(flow["wall_s_median"] < TARGET_S and flow["gap"] <= TARGET_GAP)
    result = {
        "benchmark": "planner",
        "nodes": snap.n_nodes, "groups": snap.n_groups, "jobs": snap.n_jobs, "seed": args.seed,
        "repeats": args.repeats, "snapshot_generation_s": snapshot_s,
        "target": {"wall_s": TARGET_S, "gap": TARGET_GAP, "cores": 1},
        "flow": flow,
        "flow_solver": "scipy.optimize.linprog(method='highs-ds'), HiGHS dual simplex on the "
                       "class-level transportation LP (vertex solution, integral)",
        "greedy": timed_plans(snap, "greedy", args.repeats),
        "article": timed_plans(snap, "article", args.repeats),
        "highs_methods": highs_methods(snap, args.repeats),
        "peers": peers(snap, args.repeats),
        "machine": {"python": platform.python_version(), "scipy": scipy.__version__,
                    "processor": platform.processor() or platform.machine(), "pinned_cpu": pinned,
                    "cpus_visible": os.cpu_count()},
    }
    # Contended: as many jobs as one tenth the nodes can hold, where greedy order matters.
    tight = make_snapshot(max(1, args.nodes // 10), args.jobs, seed=args.seed)
    result["contended"] = {"nodes": tight.n_nodes, "jobs": tight.n_jobs,
                           **{a: {k: v for k, v in timed_plans(tight, a, 1).items()
                                  if k in ("wall_s_median", "cost", "gap", "unplaced", "comm_time_s")}
                              for a in ("flow", "greedy", "article")},
                           # unplaced jobs here, so the penalty arcs carry flow in the peers too
                           "peers": peers(tight, 1)}
    if not args.no_per_job:
        result["lp_per_job"] = timed_plans(snap, "lp", 1)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
