"""Claim checks of notebook 01 (why Kubernetes cries): C3, C7.

C3 compares the article's per-pod figure with a queue whose decision time is Kubernetes'
own CI floor; C7 times the kit's full-scan (least-loaded) placement at 50,000 nodes and
asks whether one central loop, or replicas of it capped by Amdahl's law, can serve the
decision rate the article's own figures imply.
"""
from __future__ import annotations

import time

import numpy as np

from magnum_lib.base.validate import ParameterError, check_int
from magnum_lib.checks._timing import fastest
from magnum_lib.checks.check import ClaimCheck
from magnum_lib.claims import REFUTED, REPRODUCED, Verdict
from magnum_lib.engine import simulate_queue, theory
from magnum_lib.regional.scheduler import RegionalScheduler, StaleView
from magnum_lib.regional.validator import NodeState

# --- C3 ------------------------------------------------------------------------------------
ARTICLE_C3_MS = (50.0, 100.0)   # C3: "~50–100ms for a single pod (optimistic)"
ROUGHLY = 1.5                   # "~": within 1.5x of the range counts as the article's figure
# kube-scheduler's CI floors (pods/s), a cited source, not ours: kubernetes/kubernetes,
# test/integration/scheduler_perf/misc/performance-config.yaml (thresholds of PR #126871) and
# scheduler_perf/dra/extendedresource/performance-config.yaml. The slowest, ExtendedResource
# (a pod that asks for a device, as a GPU pod does), is the reading most favourable to C3.
K8S_FLOOR_PODS_PER_S = {"SchedulingBasic/5000Nodes_10000Pods": 680,
                        "SchedulingBasic/5000Nodes_50000Pods": 810,
                        "ExtendedResource_25Classes/5000pods_500nodes": 197,
                        "ExtendedResource_50Classes/5000pods_500nodes": 195}


def _latency_stats_ms(seconds: np.ndarray) -> dict:
    q = np.quantile(seconds, [0.95, 0.99, 0.999]) * 1e3
    return {"mean_ms": float(seconds.mean() * 1e3), "p95_ms": float(q[0]), "p99_ms": float(q[1]),
            "p999_ms": float(q[2])}


def _measure_c3(floor_pods_per_s: float, load: float, pods: int, seed: int) -> dict:
    """One kube-scheduler as an M/M/1 queue: mean decision 1/floor s, offered ``load``."""
    if not (isinstance(floor_pods_per_s, (int, float)) and floor_pods_per_s > 0):
        raise ParameterError("floor_pods_per_s", f"must be a rate > 0 pods/s, got {floor_pods_per_s!r}")
    if not (isinstance(load, (int, float)) and 0 < load < 1):
        raise ParameterError("load", f"must be in (0, 1) for a stable queue, got {load!r}")
    pods = check_int("pods", pods, 1_000)
    r = simulate_queue(1, load * floor_pods_per_s, float(floor_pods_per_s), jobs=pods, seed=seed)
    return {"decision_ms": 1e3 / floor_pods_per_s, "load": load, "pods": pods,
            **_latency_stats_ms(r.time_in_system)}


def _judge_c3(m: dict) -> Verdict:
    lo, hi = ARTICLE_C3_MS
    stats = (f"mean {m['mean_ms']:.1f} ms, p95 {m['p95_ms']:.1f}, p99 {m['p99_ms']:.1f}, "
             f"p99.9 {m['p999_ms']:.1f} ms")
    where = f"a kube-scheduler at its CI floor ({m['decision_ms']:.2f} ms per pod) at load {m['load']:.2f}"
    if lo / ROUGHLY <= m["mean_ms"] <= hi * ROUGHLY:
        return Verdict("C3", REPRODUCED, f"{where} places pods in {stats}: the article's 50-100 ms, "
                       "as the latency of a loaded queue", m)
    how = lo / m["mean_ms"] if m["mean_ms"] < lo else m["mean_ms"] / hi
    return Verdict("C3", REFUTED, f"{where} places a pod in {stats}: the article's 50-100 ms "
                   f"'for a single pod' is {how:.0f}x off (it is a queue's figure: ~75% load gives "
                   "a p99 near 100 ms)", m)


# --- C7 ------------------------------------------------------------------------------------
ARTICLE_C7_NODES = 50_000            # C7: a centralized scheduler cannot keep up "at 50,000 nodes"
# The decision rate the article's own figures imply: C2's "trillions of micro-requests per
# day" (1e12 / 86,400 s) over C23's "600,000+" GPUs as 8-GPU nodes (75,000): 154 per node per s.
ARTICLE_DECISIONS_PER_NODE_S = 1e12 / 86_400 / (600_000 / 8)


def _time_full_scan_s(nodes: int, decisions: int) -> float:
    """Seconds per decision of the kit's least-loaded placement (it scans every node)."""
    kernels = fastest("magnum_lib.regional._validator", "magnum_lib.regional.validator_ref")
    state = NodeState.uniform(nodes, "h100_sxm", 8)
    view = StaleView(state, 0)
    view.refresh(0, force=True)
    sched = RegionalScheduler(view, "least-loaded", seed=0)
    ic, mem = state.ic_code(state.ic_names[state.node_ic[0]]), int(state.node_mem[0])
    args = (np.zeros(decisions), np.ones(decisions, dtype=np.int64), np.full(decisions, mem),
            np.full(decisions, ic))
    best = np.inf
    for _ in range(2):   # best of two: other processes on the machine only slow it down
        t0 = time.perf_counter()
        sched.place_arrays(*args, module=kernels)
        best = min(best, time.perf_counter() - t0)
    return best / decisions


def _measure_c7(nodes: int, decisions_per_node_s: float, serial_fraction: float, decisions: int) -> dict:
    nodes = check_int("nodes", nodes, 1, 10_000_000)
    decisions = check_int("decisions", decisions, 10, 100_000)
    if not (isinstance(decisions_per_node_s, (int, float)) and decisions_per_node_s > 0):
        raise ParameterError("decisions_per_node_s", f"must be > 0 per second, got {decisions_per_node_s!r}")
    if not (isinstance(serial_fraction, (int, float)) and 0 < serial_fraction <= 1):
        raise ParameterError("serial_fraction", f"must be in (0, 1], got {serial_fraction!r}")
    decision_s = _time_full_scan_s(nodes, decisions)
    demand = nodes * decisions_per_node_s
    capacity = 1.0 / decision_s
    return {"nodes": nodes, "decision_us": decision_s * 1e6, "capacity_per_s": capacity,
            "demand_per_s": demand, "speedup_needed": demand / capacity,
            "amdahl_cap": float(theory.amdahl_speedup(1 - serial_fraction, 10**9)),
            "serial_fraction": serial_fraction}


def _judge_c7(m: dict) -> Verdict:
    head = (f"one full-scan decision over {m['nodes']:,} nodes takes {m['decision_us']:.0f} µs "
            f"({m['capacity_per_s']:,.0f} decisions/s) against {m['demand_per_s']:,.0f} needed")
    if m["speedup_needed"] > m["amdahl_cap"]:
        return Verdict("C7", REPRODUCED, f"{head}: a {m['speedup_needed']:,.0f}x speed-up, beyond the "
                       f"{m['amdahl_cap']:.0f}x that any number of replicas gives with "
                       f"{m['serial_fraction']:.0%} serial work (Amdahl)", m)
    if m["speedup_needed"] <= 1:
        keeps = f"one loop keeps up, {m['speedup_needed']:.0%} busy"
    else:
        keeps = f"replicas keep up (a {m['speedup_needed']:.1f}x speed-up, under their {m['amdahl_cap']:.0f}x cap)"
    return Verdict("C7", REFUTED, f"{head}: a central scheduler survives, {keeps}", m)


CHECKS = (
    ClaimCheck("C3", _measure_c3, _judge_c3,
               defaults={"floor_pods_per_s": K8S_FLOOR_PODS_PER_S["ExtendedResource_50Classes/5000pods_500nodes"],
                         "load": 0.05, "pods": 20_000, "seed": 1},
               perturbations=({"load": 0.9},),
               about="a pod's time to placement in one kube-scheduler (M/M/1 at its CI floor): "
                     "a single pod at light load, against the article's 50-100 ms"),
    ClaimCheck("C7", _measure_c7, _judge_c7,
               defaults={"nodes": ARTICLE_C7_NODES, "decisions_per_node_s": ARTICLE_DECISIONS_PER_NODE_S,
                         "serial_fraction": 0.1, "decisions": 200},
               perturbations=({"decisions_per_node_s": 0.01},),
               about="the kit's full-scan placement timed at 50,000 nodes, against the decision rate "
                     "of the article's trillions of requests per day (C2, C23)"),
)
