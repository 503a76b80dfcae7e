"""An adapter with ``_fastloop.pyx``'s signature that runs the readable loop instead.

The compiled loop re-implements the built-in event-driven policies on a pooled cluster.
It has no separate reference: this adapter turns its arguments (a policy spec, arrays)
back into the policy classes of :mod:`.policies` and runs them in :mod:`.event_loop`, so
the parity tests compare the fast loop with the code students read.
"""
from __future__ import annotations

import numpy as np

from magnum_lib.replay import event_loop
from magnum_lib.replay.cluster import ReplayCluster
from magnum_lib.replay.contract import KINDS
from magnum_lib.replay.jobs import ReplayJobs


def policy_from_spec(spec):
    from magnum_lib.replay import policies as P

    kind = spec[0]
    if kind not in KINDS:
        raise ValueError(f"no fast path for policy {kind!r}")
    if kind == "las":
        p = P.TiresiasLAS.__new__(P.TiresiasLAS)
        p.thresholds_ns = list(spec[1])
        p.promote_knob = float(spec[2])
        p.tiresias_jump = bool(spec[3]) if len(spec) > 3 else False
        p.fast = spec
        return p
    if kind == "sjf" and len(spec) > 1:
        return P.SJF(spec[1], bool(spec[2]))
    if kind == "srtf" and len(spec) > 1:
        return P.SRTF(spec[1])
    return {"fifo-strict": P.FifoStrict, "fifo-skip": P.FifoSkip, "sjf": P.SJF, "srtf": P.SRTF}[kind]()


def run_fast(submit_ns, work_ns, num_gpus, total_gpus, spec, restore_ns):
    n = len(submit_ns)
    jobs = ReplayJobs(np.asarray(submit_ns, np.int64), np.asarray(work_ns, np.int64),
                      np.asarray(num_gpus, np.int64), np.full(n, 1000, np.int64))
    cluster = ReplayCluster(np.array([int(total_gpus)]), np.array([0]), ("gpu",))
    return event_loop.run(jobs, cluster, policy_from_spec(spec), "pooled", 0, restore_ns / 1e9)
