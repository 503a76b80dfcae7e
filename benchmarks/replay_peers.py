"""Run the published Tiresias simulator (SymbioticLab/Tiresias, simulator/) on our inputs.

Nothing of Tiresias is in this repository: :func:`prepare` copies the checkout named by
``$MAGNUM_TIRESIAS`` (default ``/work/peers/tiresias``), unchanged, into a scratch folder
(its simulator writes its logs beside itself), then :func:`run_tiresias` runs its
``run_sim.py`` with ``--scheme=count`` (pooled GPUs) under Python 3, with the one name it
needs from Python 2 (``sys.maxint``) provided at start-up, and reads its ``job.csv``. Used by benchmarks/bench_replay.py and tests/test_replay_peers.py.
"""
from __future__ import annotations

import csv
import json
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
    """An unchanged copy of Tiresias' simulator in ``workdir`` (it writes logs beside itself)."""
    dst = Path(workdir) / "tiresias_sim"
    if not dst.exists():
        shutil.copytree(TIRESIAS / "simulator", dst)
    return dst


# Python 2's sys.maxint, which the simulator reads, is sys.maxsize in Python 3.
_PY2_SHIM = "import runpy, sys; sys.maxint = sys.maxsize; sys.argv = sys.argv[1:]; " \
            "runpy.run_path(sys.argv[0], run_name='__main__')"


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
    subprocess.run([sys.executable, "-c", _PY2_SHIM, "run_sim.py", f"--cluster_spec={spec.name}", "--scheme=count",
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


# ----------------------------------------------------------------------------- Gavel
GAVEL = Path(os.environ.get("MAGNUM_GAVEL", "/work/peers/gavel"))
GAVEL_MODEL = "ResNet-50 (batch size 64)"

# Gavel's scheduler imports cvxpy, grpc, matrix_completion, psutil and its RPC runtime at
# module level; its FIFO policy and simulator use none of them. The driver below replaces
# those modules by inert stand-ins so the simulator runs without new dependencies. (LP
# policies, which need cvxpy, cannot run this way.)
_GAVEL_DRIVER = r'''
import sys, time, types, os
class _Any(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        m = _Any(self.__name__ + "." + name); sys.modules[m.__name__] = m; return m
    def __call__(self, *a, **k): return _Any("call")
for mod in ["cvxpy", "grpc", "matrix_completion", "psutil", "runtime.rpc", "runtime.rpc.scheduler_server",
            "runtime.rpc.scheduler_client", "throughput_estimator", "func_timeout"]:
    sys.modules[mod] = _Any(mod)
sched_dir = sys.argv[1]
sys.path.insert(0, sched_dir)
os.chdir(sched_dir)
import scheduler, utils
jobs, arrivals = utils.parse_trace(sys.argv[2])
policy = utils.get_policy(sys.argv[3], solver=None, seed=0)
s = scheduler.Scheduler(policy, throughputs_file="simulation_throughputs.json", simulate=True, seed=0,
                        time_per_iteration=360)
t0 = time.time()
s.simulate({"v100": int(sys.argv[4]), "p100": 0, "k80": 0}, arrivals, jobs,
           num_gpus_per_server={"v100": int(sys.argv[5]), "p100": 1, "k80": 1})
wall = time.time() - t0
print("GAVEL_RESULT", len(jobs), wall, s.get_average_jct())
'''


def gavel_available() -> bool:
    return (GAVEL / "scheduler" / "scheduler.py").is_file()


def run_gavel_fifo(workdir, jobs, gpus: int, gpus_per_server: int):
    """Gavel's simulator, FIFO, ``gpus`` V100s: ``(wall s, average JCT s)``.

    Every job becomes a ResNet-50 job whose step count makes its V100 run time equal to
    the trace's duration at its GPU count (Gavel's scale factor).
    """
    from magnum_lib.workload.traces import load_gavel_throughputs

    thr = load_gavel_throughputs()
    trace = Path(workdir) / "gavel_philly.trace"
    with open(trace, "w") as f:
        for s, d, g in zip(jobs.submit_s, jobs.duration_s, jobs.num_gpus.tolist()):
            steps = int(round(d * thr.isolated[(GAVEL_MODEL, g, "v100")]))
            f.write(f"{GAVEL_MODEL}\tpython3 main.py\timage_classification/imagenet\t--num_minibatches"
                    f"\t1\t{steps}\t{g}\t1\t-1\t{s:.6f}\n")
    driver = Path(workdir) / "gavel_driver.py"
    driver.write_text(_GAVEL_DRIVER)
    out = subprocess.run([sys.executable, str(driver), str(GAVEL / "scheduler"), str(trace), "fifo",
                          str(gpus), str(gpus_per_server)], check=True, capture_output=True, text=True)
    line = [x for x in out.stdout.splitlines() if x.startswith("GAVEL_RESULT")][-1].split()
    return float(line[2]), float(line[3])


# ----------------------------------------------------------------------------- Gavel's LP
# Gavel's max-min fairness policies import cvxpy, which is not a project dependency: they
# run under a separate interpreter ($MAGNUM_GAVEL_PYTHON, a virtualenv with numpy, scipy
# and cvxpy only; see the notes), in a subprocess fed JSON on stdin.
GAVEL_PYTHON = Path(os.environ.get("MAGNUM_GAVEL_PYTHON", "/work/peers/gavel-venv/bin/python"))

_GAVEL_LP_DRIVER = r'''
import json, sys, time
sched = sys.argv[1]
sys.path.insert(0, sched)
sys.path.insert(0, sched + "/policies")
import numpy as np
import cvxpy
from job_id_pair import JobIdPair
from max_min_fairness import MaxMinFairnessPolicy, MaxMinFairnessPolicyWithPerf
req = json.load(sys.stdin)
types = req["types"]
ids = [JobIdPair(i, None) for i in range(len(req["thr"]))]
thr = {j: dict(zip(types, row)) for j, row in zip(ids, req["thr"])}
sf = {j: s for j, s in zip(ids, req["scale"])}
pw = {j: 1.0 for j in ids}
spec = dict(zip(types, req["gpus"]))
cls = MaxMinFairnessPolicyWithPerf if req["aware"] else MaxMinFairnessPolicy
pol = cls(solver=req["solver"])
t0 = time.perf_counter()
alloc = pol.get_allocation(thr, sf, pw, spec)
wall = time.perf_counter() - t0
X = [[float(alloc[j][t]) for t in types] for j in ids]
print(json.dumps({"X": X, "wall_s": wall, "cvxpy": cvxpy.__version__}))
'''


def gavel_lp_available() -> bool:
    return gavel_available() and GAVEL_PYTHON.is_file()


def gavel_lp_inputs(n_jobs: int, gpus_by_type: dict, seed: int = 0):
    """Jobs drawn as :func:`magnum_lib.replay.traces.gavel_jobs` does, with their raw
    throughput rows (steps/s on each type of ``gpus_by_type``, Gavel's measured matrix)."""
    from magnum_lib.replay import traces
    from magnum_lib.workload.traces import load_gavel_throughputs

    jobs = traces.gavel_jobs(n_jobs, seed=seed, gpu_types=tuple(gpus_by_type))
    m = load_gavel_throughputs()
    thr = np.array([[m.isolated[(jobs.model_names[c], int(g), t)] for t in gpus_by_type]
                    for c, g in zip(jobs.model_code, jobs.num_gpus)])
    return jobs, thr


def run_gavel_lp(thr, scale, gpus_by_type: dict, aware: bool = True, solver: str = "CLARABEL"):
    """Gavel's ``MaxMinFairnessPolicyWithPerf`` (``aware``) or ``MaxMinFairnessPolicy``
    (blind) on ``thr`` (jobs x types, steps/s): ``(X, wall s, cvxpy version)``."""
    req = {"types": list(gpus_by_type), "gpus": [int(v) for v in gpus_by_type.values()],
           "thr": np.asarray(thr, float).tolist(), "scale": [int(s) for s in scale],
           "aware": bool(aware), "solver": solver}
    out = subprocess.run([str(GAVEL_PYTHON), "-c", _GAVEL_LP_DRIVER, str(GAVEL / "scheduler")],
                         input=json.dumps(req), check=True, capture_output=True, text=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    return np.array(res["X"]), res["wall_s"], res["cvxpy"]


def normalized_throughputs(thr, scale, gpus_by_type: dict, X):
    """Each job's effective throughput under ``X`` over its throughput under Gavel's
    proportional split, times its scale factor: the quantity max-min fairness maximizes
    the minimum of (Gavel's objective, unitless, invariant to scaling a job's row)."""
    thr = np.asarray(thr, float)
    m = thr.shape[0]
    N = np.array(list(gpus_by_type.values()), float)
    xp = np.tile(N / m, (m, 1))
    xp /= xp.sum(axis=1).max()
    prop = (thr * xp).sum(axis=1)
    return np.asarray(scale, float) * (thr * np.asarray(X)).sum(axis=1) / prop


def unique_range(thr, scale, gpus_by_type: dict, z, slack: float = 1e-7):
    """For each job, the (min, max) of its normalized throughput over every allocation whose
    minimum is within ``slack`` (relative) of the optimum ``z``: where min == max the
    optimum fixes that job's throughput, elsewhere any value in between is optimal too."""
    from scipy.optimize import linprog

    thr = np.asarray(thr, float)
    m, T = thr.shape
    N = np.array(list(gpus_by_type.values()), float)
    s = np.asarray(scale, float)
    xp = np.tile(N / m, (m, 1))
    xp /= xp.sum(axis=1).max()
    coef = (s / (thr * xp).sum(axis=1))[:, None] * thr        # normalized = sum_t coef X
    A, b = [], []
    for j in range(m):                                         # coef_j . X_j >= z (1 - slack)
        r = np.zeros(m * T)
        r[j * T:(j + 1) * T] = -coef[j]
        A.append(r)
        b.append(-z * (1 - slack))
    for j in range(m):
        r = np.zeros(m * T)
        r[j * T:(j + 1) * T] = 1.0
        A.append(r)
        b.append(1.0)
    for t in range(T):
        r = np.zeros(m * T)
        r[t::T] = s
        A.append(r)
        b.append(N[t])
    A, b = np.array(A), np.array(b)
    lo, hi = np.zeros(m), np.zeros(m)
    for j in range(m):
        c = np.zeros(m * T)
        c[j * T:(j + 1) * T] = coef[j]
        lo[j] = linprog(c, A_ub=A, b_ub=b, bounds=(0, 1), method="highs").fun
        hi[j] = -linprog(-c, A_ub=A, b_ub=b, bounds=(0, 1), method="highs").fun
    return lo, hi
