"""The policy arena: replay several policies on held-out trace slices and seeds, rank them.

``leaderboard(policies, slices, cluster, seeds)`` runs every (policy, slice, seed) on
:func:`magnum_lib.sweep.sweep` (Dask LocalCluster by default, ``client="serial"`` in
process, or any scheduler address) and ranks the policies by mean avg JCT over the
runs; p99 JCT, the worst finish-time fairness rho and preemptions are shown beside.
Seeds matter for ``random`` placement and randomized policies; a slice is a
:class:`~magnum_lib.replay.jobs.ReplayJobs`.

``isolate=True`` runs every replay in its own child process with memory and time limits
(:mod:`magnum_lib.replay.isolate`): an entrant that crashes the interpreter, leaks or hangs
gets its error in its row (``error``) and ranks last, and the leaderboard still comes out.
Entrants are then given as built-in names or ``"file.py:Name"`` plug-in specs (what a child
process can load).
"""
from __future__ import annotations

import numpy as np

from magnum_lib.base.validate import ParameterError

__all__ = ["leaderboard", "philly_slices"]


def philly_slices(vc: str, n_jobs: int, starts, min_duration_s: float = 60.0, gpu_counts=(1, 2, 4, 8)):
    """Consecutive slices of ``n_jobs`` Philly jobs of ``vc`` beginning at job indices ``starts``."""
    from magnum_lib.replay.traces import philly_jobs

    allj = philly_jobs(vc, min_duration_s, gpu_counts)
    out = []
    for s in starts:
        if not 0 <= int(s) < len(allj):
            raise ParameterError("starts", f"must be job indices below {len(allj)}, got {s}")
        out.append(allj.subset(slice(int(s), int(s) + int(n_jobs))).shifted())
    return out


_FIGURES = ("avg_jct_s", "p99_jct_s", "ftf_rho_max", "preemptions", "utilization")


def run_one(jobs, cluster, policy, placement="pooled", seed=0) -> dict:
    """One arena replay's figures; ``policy`` may be a ``"file.py:Name"`` plug-in spec."""
    from magnum_lib.replay import replay

    if isinstance(policy, str) and ".py:" in policy:
        from magnum_lib.replay.plugin import load_policy_file

        policy = load_policy_file(policy)
    r = replay(jobs, cluster, policy() if isinstance(policy, type) else policy,
               placement=placement, seed=seed, progress=False)
    s = r.summary()
    return {k: s[k] for k in _FIGURES}


def leaderboard(policies: dict, slices, cluster, seeds=(0,), *, placement="pooled",
                client="serial", progress=False, isolate=False, max_memory=2 * 2**30,
                timeout_s=600.0):
    """Rank ``policies`` (``{label: policy or built-in name}``); returns (rows, results).

    ``rows``: one dict per policy, best (lowest mean avg JCT) first, with
    ``rank, policy, avg_jct_s, p99_jct_s, ftf_rho_max, preemptions``. ``results``: the
    :class:`~magnum_lib.sweep.SweepResult` of every run. ``isolate``: every run in a child
    process of at most ``max_memory`` bytes and ``timeout_s`` seconds; a policy whose run
    failed has ``error`` (the first failure, one line) and no figures (None), and ranks last.
    """
    from magnum_lib.sweep import sweep

    if not policies:
        raise ParameterError("policies", "must name at least one policy")
    slices = list(slices)

    def one(policy, slice_no, seed):
        if not isolate:
            return run_one(slices[slice_no], cluster, policies[policy], placement, seed)
        from magnum_lib.replay.isolate import run_isolated

        try:
            out = run_isolated(run_one, (slices[slice_no], cluster, policies[policy], placement, seed),
                               max_memory=max_memory, timeout_s=timeout_s, label=repr(policy))
        except ParameterError as exc:
            return {**dict.fromkeys(_FIGURES), "error": str(exc)}
        return {**out, "error": None}

    res = sweep(one, {"policy": list(policies), "slice_no": list(range(len(slices)))},
                seeds=list(seeds), client=client, progress=progress)
    rows = []
    for label in policies:
        mine = [r for r in res.rows if r["policy"] == label]
        errors = [r["error"] for r in mine if r.get("error")]
        if errors:
            rows.append({"policy": label, **dict.fromkeys(_FIGURES[:4]), "error": errors[0]})
            continue
        rows.append({"policy": label,
                     "avg_jct_s": float(np.mean([r["avg_jct_s"] for r in mine])),
                     "p99_jct_s": float(np.mean([r["p99_jct_s"] for r in mine])),
                     "ftf_rho_max": float(np.max([r["ftf_rho_max"] for r in mine])),
                     "preemptions": int(np.sum([r["preemptions"] for r in mine]))})
    rows.sort(key=lambda r: (r["avg_jct_s"] is None, r["avg_jct_s"] or 0.0, r["policy"]))
    for i, r in enumerate(rows, 1):
        r["rank"] = i
    return rows, res
