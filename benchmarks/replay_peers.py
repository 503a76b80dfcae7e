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
SCHEDULES = {"fifo-strict": "fifo", "fifo-skip": "fjf", "srtf": "shortest", "las": "dlas-gpu",
             "sjf-gpus-preemptive": "sjf", "srtf-gpu-time": "shortest-gpu"}


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
        for i, (s, d, g) in enumerate(zip(sub, dur, jobs.num_gpus.tolist(), strict=True)):
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
# those modules by inert stand-ins so the simulator runs without new dependencies (under
# the project's interpreter). It prints each job's completion time (arrival to last
# step, Gavel's own JCT) as JSON.
_GAVEL_DRIVER = r"""
import sys, time, types, os, json
class _Any(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        m = _Any(self.__name__ + "." + name); sys.modules[m.__name__] = m; return m
    def __call__(self, *a, **k): return _Any("call")
sched_dir, trace, policy_name, spec, per_server, thr_file = sys.argv[1:7]
stubs = ["grpc", "matrix_completion", "psutil", "runtime.rpc", "runtime.rpc.scheduler_server",
         "runtime.rpc.scheduler_client", "throughput_estimator", "func_timeout"]
for mod in stubs + (["cvxpy"] if policy_name.startswith("fifo") else []):
    sys.modules[mod] = _Any(mod)
spec = json.loads(spec)
sys.path.insert(0, sched_dir)
os.chdir(sched_dir)
import logging
logging.disable(logging.CRITICAL)
import scheduler, utils
jobs, arrivals = utils.parse_trace(trace)
policy = utils.get_policy(policy_name, solver=None if policy_name.startswith("fifo") else "CLARABEL", seed=0)
s = scheduler.Scheduler(policy, throughputs_file=thr_file, simulate=True, seed=0, time_per_iteration=360)
t0 = time.time()
s.simulate(spec, arrivals, jobs, num_gpus_per_server={t: int(per_server) for t in spec})
wall = time.time() - t0
jct = [s._job_completion_times[k] for k in sorted(s._job_completion_times)]
print("GAVEL_RESULT " + json.dumps({"wall_s": wall, "jct_s": jct, "avg_jct_s": float(s.get_average_jct(verbose=False))}))
"""


def gavel_available() -> bool:
    return (GAVEL / "scheduler" / "scheduler.py").is_file()


def whole_seconds(jobs, round_s: int = 360):
    """``jobs`` with submit times and durations in whole seconds, for ``run_gavel(steps="unit")``.

    Gavel counts work in whole steps (at one step per second, steps are seconds). It also
    splits each micro-task's steps evenly over the job's GPUs and counts a GPU given 0
    steps as a failed micro-task (``_done_callback``), dropping the job after
    ``MAX_FAILED_ATTEMPTS`` (5) such rounds as failed, without a completion time: a job
    whose last micro-task has fewer steps than GPUs never finishes there. Such durations
    (``0 < d mod 360 < GPUs``) are lengthened by ``GPUs`` seconds so every job finishes.
    """
    from magnum_lib.replay import make_jobs

    dur = np.maximum(np.round(jobs.duration_s), 1)
    tail = dur % round_s
    dur = np.where((tail > 0) & (tail < jobs.num_gpus), dur + jobs.num_gpus, dur)
    return make_jobs(np.round(jobs.submit_s), dur, jobs.num_gpus,
                     model=None if jobs.model_code is None else np.asarray(jobs.model_names)[jobs.model_code],
                     name=jobs.name)


def _job_models(jobs):
    """Each job's Gavel model: its own when Gavel's matrix has it, else ResNet-50 (batch 64)."""
    from magnum_lib.workload.traces import load_gavel_throughputs

    if jobs.model_code is None:
        return [GAVEL_MODEL] * len(jobs)
    known = set(load_gavel_throughputs().models)
    return [jobs.model_names[c] if jobs.model_names[c] in known else GAVEL_MODEL for c in jobs.model_code]


def run_gavel(workdir, jobs, gpus, gpus_per_server: int, policy: str = "fifo",
              steps: str = "unit"):
    """Gavel's simulator (``scheduler.Scheduler.simulate``, 360 s rounds) on ``jobs``, on
    ``gpus`` V100s (or ``{type: count}``): ``(finish s by job, wall s, Gavel's average JCT s)``.
    FIFO runs under this interpreter (imports it does not use stubbed); other policies (the
    LP ones) under ``$MAGNUM_GAVEL_PYTHON`` with cvxpy.

    A job without a model becomes ResNet-50 (batch 64). ``steps="unit"``: every job runs at
    one step per second (a throughputs file with 1.0 for every (model, scale factor)), so
    a job of whole-second duration ``d`` is ``d`` steps and a round is exactly 360 steps;
    needs whole-second jobs (:func:`whole_seconds`). ``steps="measured"``: Gavel's own
    matrix; a job's step count makes its V100 run time (at its GPU count) the trace's
    duration, rounded to a whole step, and each round runs ``int(360 x steps/s)`` steps.
    """
    from magnum_lib.workload.traces import load_gavel_throughputs, trace_path

    work = Path(workdir)
    models = _job_models(jobs)
    src = trace_path("gavel/simulation_throughputs.json")
    if steps == "unit":
        if np.any(jobs.work_ns % 10**9) or np.any(jobs.submit_ns % 10**9):
            raise ValueError("steps='unit' needs whole-second jobs (see whole_seconds)")
        raw = json.loads(Path(src).read_text())
        unit = {wt: {key: {"null": 1.0} for key in raw[wt]} for wt in raw}
        thr_file = work / "gavel_unit_throughputs.json"
        thr_file.write_text(json.dumps(unit))
        nsteps = (jobs.work_ns // 10**9).tolist()
    elif steps == "measured":
        thr = load_gavel_throughputs()
        thr_file = Path(src)
        nsteps = [int(round(d * thr.isolated[(m, int(g), "v100")]))
                  for d, m, g in zip(jobs.duration_s, models, jobs.num_gpus, strict=True)]
    else:
        raise ValueError(f"steps must be 'unit' or 'measured', got {steps!r}")
    trace = work / "gavel_jobs.trace"
    with open(trace, "w") as f:
        for s, m, n, g in zip(jobs.submit_s, models, nsteps, jobs.num_gpus.tolist(), strict=True):
            f.write(f"{m}\tpython3 main.py\timage_classification/imagenet\t--num_minibatches"
                    f"\t1\t{n}\t{g}\t1\t-1\t{s:.6f}\n")
    driver = work / "gavel_driver.py"
    driver.write_text(_GAVEL_DRIVER)
    spec = gpus if isinstance(gpus, dict) else {"v100": int(gpus), "p100": 0, "k80": 0}
    python = sys.executable if policy.startswith("fifo") else str(GAVEL_PYTHON)
    out = subprocess.run([python, str(driver), str(GAVEL / "scheduler"), str(trace), policy,
                          json.dumps(spec), str(gpus_per_server), str(thr_file)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"Gavel's simulator failed: {out.stderr.strip()[-2000:]}")
    line = [x for x in out.stdout.splitlines() if x.startswith("GAVEL_RESULT")][-1]
    res = json.loads(line.split(" ", 1)[1])
    if any(x is None for x in res["jct_s"]):
        raise RuntimeError("Gavel dropped a job as failed (a micro-task with fewer steps than GPUs; "
                           "see whole_seconds)")
    finish = jobs.submit_s + np.array(res["jct_s"])
    return finish, res["wall_s"], res["avg_jct_s"]


def measured_durations(jobs):
    """The jobs as Gavel's ``steps="measured"`` runs see them, and their steps/s: each job's
    work is its whole step count over its V100 steps/s (so our replay runs the same work);
    submit times are whole seconds (Gavel reads them as text with 6 decimals)."""
    from magnum_lib.replay import make_jobs
    from magnum_lib.workload.traces import load_gavel_throughputs

    thr = load_gavel_throughputs()
    rate = np.array([thr.isolated[(m, int(g), "v100")] for m, g in zip(_job_models(jobs), jobs.num_gpus, strict=True)])
    steps = np.round(jobs.duration_s * rate)
    return make_jobs(np.round(jobs.submit_s), steps / rate, jobs.num_gpus, model=_job_models(jobs),
                     name=jobs.name), rate


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
                    for c, g in zip(jobs.model_code, jobs.num_gpus, strict=True)])
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


_GAVEL_LP_SERVER = r'''
import json, sys
sched = sys.argv[1]
sys.path.insert(0, sched)
sys.path.insert(0, sched + "/policies")
from job_id_pair import JobIdPair
from max_min_fairness import MaxMinFairnessPolicy, MaxMinFairnessPolicyWithPerf
pol = (MaxMinFairnessPolicyWithPerf if sys.argv[2] == "aware" else MaxMinFairnessPolicy)(solver=sys.argv[3])
for line in sys.stdin:
    req = json.loads(line)
    types = req["types"]
    ids = [JobIdPair(i, None) for i in range(len(req["thr"]))]
    alloc = pol.get_allocation({j: dict(zip(types, row)) for j, row in zip(ids, req["thr"])},
                               {j: s for j, s in zip(ids, req["scale"])}, {j: 1.0 for j in ids},
                               dict(zip(types, req["gpus"])))
    print(json.dumps([[float(alloc[j][t]) for t in types] for j in ids]), flush=True)
'''


class GavelLP:
    """Gavel's own max-min LP policy code in one persistent ``$MAGNUM_GAVEL_PYTHON`` process:
    ``lp(thr, scale, gpus_by_type) -> X``, the ``lp`` hook of
    :class:`magnum_lib.replay.gavel_rounds.GavelRounds` (use as a context manager)."""

    def __init__(self, aware: bool = True, solver: str = "CLARABEL"):
        self.proc = subprocess.Popen([str(GAVEL_PYTHON), "-c", _GAVEL_LP_SERVER, str(GAVEL / "scheduler"),
                                      "aware" if aware else "blind", solver],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.calls = 0

    def __call__(self, thr, scale, gpus_by_type):
        req = {"types": list(gpus_by_type), "gpus": [int(v) for v in gpus_by_type.values()],
               "thr": np.asarray(thr, float).tolist(), "scale": [int(s) for s in scale]}
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("Gavel's LP process exited")
        self.calls += 1
        return np.array(json.loads(line))

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


GAVEL_TYPES = {"v100": 8, "p100": 8, "k80": 8}


def gavel_hetero_jobs(n: int, jobs_per_hour: float, seed: int, gpus_by_type=GAVEL_TYPES):
    """Gavel-style jobs on v100/p100/k80 as Gavel's simulator sees them (``steps="measured"``):
    whole-second submits, whole steps; with their steps/s matrix (jobs x types)."""
    from magnum_lib.replay import make_jobs, traces
    from magnum_lib.workload.traces import load_gavel_throughputs

    raw = traces.gavel_jobs(n, jobs_per_hour=jobs_per_hour, seed=seed, gpu_types=tuple(gpus_by_type))
    m = load_gavel_throughputs()
    models = [raw.model_names[c] for c in raw.model_code]
    thr = np.array([[m.isolated[(mo, int(g), t)] for t in gpus_by_type] for mo, g in zip(models, raw.num_gpus, strict=True)])
    steps = np.round(raw.duration_s * thr[:, 0])
    jobs = make_jobs(np.round(raw.submit_s), steps / thr[:, 0], raw.num_gpus, speed=thr / thr[:, :1],
                     model=models, name=raw.name)
    return jobs, thr
