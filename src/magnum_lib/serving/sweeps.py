"""A sweep of router x batching x replica count on :func:`magnum_lib.sweep.sweep` (Dask).

    >>> from magnum_lib.serving import generate_requests, make_replica
    >>> from magnum_lib.serving.sweeps import serving_sweep
    >>> table = serving_sweep(generate_requests(200, 20, seed=1), make_replica("llama3_8b", "h100"),
    ...                       routers=["round-robin", "least-outstanding"], batchings=["continuous"],
    ...                       replicas=[1, 2], client="serial", progress=False)
    >>> len(table)
    4

Each task runs :func:`~magnum_lib.serving.simulate` (the compiled loop when built: it
releases the GIL, so Dask's thread workers run side by side) and reports the figures of
:func:`~magnum_lib.serving.summarize` as flat columns (latencies in ms).
"""
from __future__ import annotations

import functools
import time

from magnum_lib.base.validate import ParameterError, check_positive
from magnum_lib.serving.loop import simulate
from magnum_lib.serving.metrics import summarize
from magnum_lib.serving.replica import ReplicaSpec
from magnum_lib.serving.requests import ServingRequests
from magnum_lib.serving.routers import ROUTERS
from magnum_lib.serving.serve_ref import BATCHING, check_args
from magnum_lib.sweep import SweepResult, sweep

__all__ = ["serving_sweep", "COLUMNS"]

#: The columns each task adds to its grid point.
COLUMNS = ("ttft_ms_p50", "ttft_ms_p99", "tpot_ms_p50", "tpot_ms_p99", "e2e_ms_p99", "slo_attainment",
           "goodput_rps_per_gpu", "throughput_tok_s", "prefix_hit_rate", "preempt_recompute", "preempt_swap",
           "kv_utilization_mean", "finished", "refused", "gpus", "cpu_s")


def _one(router, batching, replicas, *, requests, replica, slo_ttft_s, slo_tpot_s, simulate_kw) -> dict:
    t0 = time.thread_time()  # this task's own CPU time (Dask may run tasks as threads side by side)
    s = summarize(simulate(requests, replica, replicas=replicas, batching=batching, router=router,
                           progress=False, **simulate_kw), slo_ttft_s, slo_tpot_s)
    return {"ttft_ms_p50": s["ttft_ms"]["p50"], "ttft_ms_p99": s["ttft_ms"]["p99"],
            "tpot_ms_p50": s["tpot_ms"]["p50"], "tpot_ms_p99": s["tpot_ms"]["p99"], "e2e_ms_p99": s["e2e_ms"]["p99"],
            "slo_attainment": s["slo_attainment"], "goodput_rps_per_gpu": s["goodput_rps_per_gpu"],
            "throughput_tok_s": s["throughput_tok_s"], "prefix_hit_rate": s["prefix_hit_rate"],
            "preempt_recompute": s["preemptions"]["recompute"], "preempt_swap": s["preemptions"]["swap"],
            "kv_utilization_mean": s["kv_utilization"]["mean"], "finished": s["finished"], "refused": s["refused"],
            "gpus": s["gpus"], "cpu_s": time.thread_time() - t0}


def serving_sweep(requests: ServingRequests, replica: ReplicaSpec, *, routers=tuple(ROUTERS), batchings=BATCHING,
                  replicas=(1, 2, 4), slo_ttft_s: float = 2.0, slo_tpot_s: float = 0.1, client=None,
                  progress: bool = True, **simulate_kw) -> SweepResult:
    """Every (router, batching, replica count) of the three lists, one :func:`simulate` each.

    ``simulate_kw`` (``max_batch``, ``token_budget``, ``preemption``, ``prefix_cache``, ``seed``,
    ``horizon_s``) is passed to every run; ``client`` and ``progress`` to
    :func:`magnum_lib.sweep.sweep`. Routers are built-in names (a plug-in router object
    would be shared by the tasks). Every argument is checked here, before any task runs.
    """
    routers, batchings, replicas = list(routers), list(batchings), list(replicas)
    for name, values in (("routers", routers), ("batchings", batchings), ("replicas", replicas)):
        if not values:
            raise ParameterError(name, "must hold at least one value")
    for key in ("replicas", "batching", "router", "disaggregate", "progress"):
        if key in simulate_kw:
            raise ParameterError(key, "is set by the sweep's grid (routers, batchings, replicas); "
                                      "disaggregation is not swept")
    for r in routers:
        if not isinstance(r, str):
            raise ParameterError("routers", f"must be built-in router names ({', '.join(ROUTERS)}), got {r!r}")
    for b in batchings:
        for r in routers:
            for n in replicas:
                check_args(requests, replica, replicas=n, batching=b, router=r, **simulate_kw)
    slo_ttft_s = check_positive("slo_ttft_s", slo_ttft_s, 1e6)
    slo_tpot_s = check_positive("slo_tpot_s", slo_tpot_s, 1e6)
    task = functools.partial(_one, requests=requests, replica=replica, slo_ttft_s=slo_ttft_s,
                             slo_tpot_s=slo_tpot_s, simulate_kw=simulate_kw)
    return sweep(task, {"router": routers, "batching": batchings, "replicas": replicas}, client=client,
                 progress=progress)
