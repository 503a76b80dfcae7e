"""Run the published Tiresias simulator (SymbioticLab/Tiresias, simulator/) on our inputs.

Nothing of Tiresias is in this repository: :func:`prepare` copies the checkout named by
``$MAGNUM_TIRESIAS`` (default ``/work/peers/tiresias``) into a scratch folder and makes
the one change Python 3 needs (``sys.maxint`` -> ``sys.maxsize``), then
:func:`run_tiresias` runs ``run_sim.py`` with ``--scheme=count`` (pooled GPUs) and reads
its ``job.csv``. Used by benchmarks/bench_replay.py and tests/test_replay_peers.py.
"""
from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

TIRESIAS = Path(os.environ.get("MAGNUM_TIRESIAS", "/work/peers/tiresias"))
SCHEDULES = {"fifo-strict": "fifo", "fifo-skip": "fjf", "srtf": "shortest", "las": "dlas-gpu"}


def available() -> bool:
    return (TIRESIAS / "simulator" / "run_sim.py").is_file()


def prepare(workdir) -> Path:
    """A Python-3-runnable copy of Tiresias' simulator in ``workdir``."""
    dst = Path(workdir) / "tiresias_sim"
    if not dst.exists():
        shutil.copytree(TIRESIAS / "simulator", dst)
        for f in dst.glob("*.py"):
            f.write_text(f.read_text().replace("sys.maxint", "sys.maxsize"))
    return dst


def write_trace(path, jobs) -> None:
    """Our ReplayJobs (whole seconds) as a Tiresias trace (model vgg19 for every job)."""
    sub = (jobs.submit_ns // 10**9).tolist()
    dur = (jobs.work_ns // 10**9).tolist()
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration", "interval"])
        for i, (s, d, g) in enumerate(zip(sub, dur, jobs.num_gpus.tolist())):
            w.writerow([i, g, s, 1, "vgg19", d, 0])


def run_tiresias(sim: Path, jobs, nodes: int, gpus_per_node: int, policy: str, tag: str = "run"):
    """Run Tiresias on ``jobs``; returns ``(finish_s array by job id, preemptions, wall s)``."""
    trace = sim / f"{tag}.csv"
    spec = sim / f"{tag}_spec.csv"
    write_trace(trace, jobs)
    spec.write_text("num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n"
                    f"1,{nodes},{gpus_per_node},64,256\n")
    out = sim / f"{tag}_{policy}"
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "run_sim.py", f"--cluster_spec={spec.name}", "--scheme=count",
                    f"--trace_file={trace.name}", f"--schedule={SCHEDULES[policy]}",
                    f"--log_path={out.name}"], cwd=sim, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    finish = np.full(len(jobs), np.nan)
    pre = 0
    with open(out / "job.csv") as f:
        for row in csv.DictReader(f):
            finish[int(row["job_id"])] = float(row["end_time"])
            pre += int(row["preempt"])
    return finish, pre, wall
