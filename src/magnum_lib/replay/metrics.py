"""What a replay measured: per-job times, utilization over time, and the summary.

JCT = finish - submit. Queueing delay (``queue_s``, ``avg_queue_s``) = all the time a job
waited without GPUs: JCT minus the time it held GPUs (``held_s``: its run time plus the
restores it paid), so the waits after each preemption count, not only the first one.
``first_wait_s`` (``avg_first_wait_s``) is the wait before the first start alone. Finish-time
fairness rho = JCT / isolated JCT, the isolated JCT being the job's run time alone on
its fastest allowed GPU type with no wait (rho >= 1; 1 = as if alone). Utilization =
busy GPU-time / (GPUs x (last finish - first submit)). GPU fragmentation (shared-GPU
replays, ``summary()["gpu_fragmentation"]``): the time-weighted mean, over the replay, of
the share of free GPU capacity stranded on partly used GPUs (free but unusable by a
whole-GPU job); ``frag`` holds it at each change point.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["ReplayResult"]

NS = 1_000_000_000


def _pct(a, q):
    return float(np.percentile(a, q)) if a.size else float("nan")


@dataclass(eq=False)
class ReplayResult:
    """Per-job arrays (seconds) plus the utilization step function of one replay."""

    policy: str
    placement: str
    backend: str
    jobs: object
    cluster: object
    submit_s: np.ndarray
    start_s: np.ndarray
    finish_s: np.ndarray
    isolated_s: np.ndarray
    preemptions: np.ndarray
    util_t_s: np.ndarray
    util_busy: np.ndarray
    wall_s: float = 0.0
    seed: int = 0
    extra: dict = field(default_factory=dict)
    held_s: np.ndarray | None = None     # time each job held GPUs (run + restores), s

    @property
    def jct_s(self) -> np.ndarray:
        return self.finish_s - self.submit_s

    @property
    def queue_s(self) -> np.ndarray:
        """All waiting without GPUs, s: JCT minus the time held (every wait, not only the first)."""
        if self.held_s is None:
            raise ValueError("this result has no held_s: the replay must report the time each job held GPUs")
        return self.jct_s - self.held_s

    @property
    def first_wait_s(self) -> np.ndarray:
        """The wait before the first start, s (later waits after preemptions are not in it)."""
        return self.start_s - self.submit_s

    @property
    def rho(self) -> np.ndarray:
        return self.jct_s / self.isolated_s

    @property
    def makespan_s(self) -> float:
        return float(self.finish_s.max() - self.submit_s.min()) if self.finish_s.size else 0.0

    def utilization(self) -> float:
        """Busy GPU-time over GPUs x makespan."""
        t, b = self.util_t_s, self.util_busy
        if t.size < 2 or self.makespan_s <= 0:
            return 0.0
        busy = float(np.sum(b[:-1] * np.diff(t)))
        return busy / (self.cluster.total_gpus * self.makespan_s)

    def utilization_over_time(self, bins: int = 100):
        """``(t_s, fraction busy)`` averaged over ``bins`` equal windows of the makespan."""
        t, b = self.util_t_s, self.util_busy
        t0, t1 = float(self.submit_s.min()), float(self.finish_s.max())
        edges = np.linspace(t0, t1, bins + 1)
        # Integral of the step function at each edge, then differences.
        cum = np.concatenate(([0.0], np.cumsum(b[:-1] * np.diff(t))))
        k = np.clip(np.searchsorted(t, edges, side="right") - 1, 0, t.size - 1)
        at = cum[k] + b[k] * (edges - t[k])
        frac = np.diff(at) / (np.diff(edges) * self.cluster.total_gpus)
        return (edges[:-1] + edges[1:]) / 2, frac

    def time_average(self, values) -> float:
        """Time-weighted mean of a step function sampled at ``util_t_s`` (e.g. ``frag``)."""
        t = self.util_t_s
        v = np.asarray(values, dtype=np.float64)
        if t.size < 2:
            return float(v[0]) if v.size else float("nan")
        return float(np.sum(v[:-1] * np.diff(t)) / (t[-1] - t[0]))

    def jct_cdf(self):
        """``(sorted JCT s, cumulative fraction)``."""
        x = np.sort(self.jct_s)
        return x, np.arange(1, x.size + 1) / max(x.size, 1)

    def summary(self) -> dict:
        """The figures the CLI prints (``--json`` keys)."""
        jct, q, rho = self.jct_s, self.queue_s, self.rho
        return {
            "policy": self.policy, "placement": self.placement, "backend": self.backend,
            "jobs": int(jct.size), "gpus": self.cluster.total_gpus,
            "avg_jct_s": float(jct.mean()) if jct.size else float("nan"),
            "median_jct_s": _pct(jct, 50), "p95_jct_s": _pct(jct, 95), "p99_jct_s": _pct(jct, 99),
            "avg_queue_s": float(q.mean()) if q.size else float("nan"),
            "p99_queue_s": _pct(q, 99), "p999_queue_s": _pct(q, 99.9),
            "avg_first_wait_s": float(self.first_wait_s.mean()) if q.size else float("nan"),
            "makespan_s": self.makespan_s, "utilization": self.utilization(),
            "ftf_rho_max": float(rho.max()) if rho.size else float("nan"),
            "ftf_rho_mean": float(rho.mean()) if rho.size else float("nan"),
            "preemptions": int(self.preemptions.sum()),
            "seed": self.seed, "wall_s": self.wall_s, **self.extra,
        }

    def by_group(self) -> dict:
        """Per VC / user / model (the jobs' ``group`` labels): jobs, avg JCT, p99 JCT, avg queue."""
        j = self.jobs
        if j.group_code is None:
            return {}
        out = {}
        for g, name in enumerate(j.group_names):
            m = j.group_code == g
            if m.any():
                out[name] = {"jobs": int(m.sum()), "avg_jct_s": float(self.jct_s[m].mean()),
                             "p99_jct_s": _pct(self.jct_s[m], 99),
                             "avg_queue_s": float(self.queue_s[m].mean())}
        return out
