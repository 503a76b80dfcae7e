"""Run the published Tiresias simulator (SymbioticLab/Tiresias, simulator/) on our inputs.

Nothing of Tiresias is in this repository: :func:`prepare` copies the checkout named by
``$MAGNUM_TIRESIAS`` (default ``/work/peers/tiresias``; ``fetch`` or ``git clone``
https://github.com/SymbioticLab/Tiresias), unchanged, into a scratch folder (its simulator
writes its logs beside itself), then :func:`run_tiresias` runs its ``run_sim.py`` with
``--scheme=count`` (pooled GPUs) and reads its ``job.csv``.

The interpreter is Python 2.7, as Tiresias' README requires: ``run_sim.py`` has no
``from __future__ import division``, so its demotion wake-up ``(limit - executed_time) /
num_gpu`` is integer floor division there (under Python 3 it is true division, and the
finish times of ``dlas-gpu`` move). :func:`python27` finds it (``$MAGNUM_TIRESIAS_PYTHON``,
else pyenv's 2.7, else ``python2.7`` on the PATH). Tiresias' ``jobs.py`` imports numpy and
never uses it; when the 2.7 interpreter has no numpy, an empty stand-in module is put on
its ``PYTHONPATH`` (:func:`_numpy_stub`). ``python3=True`` runs the same program under this
interpreter instead (``sys.maxint`` provided at start-up), only to show what changes.
Used by benchmarks/bench_replay.py and tests/test_replay_peers.py; ``python
benchmarks/replay_peers.py`` prints how many configurations agree job for job.
"""
from __future__ import annotations

import csv
import functools
import glob
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


@functools.lru_cache(maxsize=1)
def python27() -> str | None:
    """A Python 2.7 interpreter (path), or None: ``$MAGNUM_TIRESIAS_PYTHON`` if set, else
    the first of pyenv's ``versions/2.7*/bin/python`` and ``python2.7`` that runs and says 2.7."""
    env = os.environ.get("MAGNUM_TIRESIAS_PYTHON")
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    cands = [env] if env else sorted(glob.glob(os.path.join(root, "versions", "2.7*", "bin", "python")),
                                     reverse=True) + [shutil.which("python2.7")]
    for c in cands:
        if not c:
            continue
        try:
            out = subprocess.run([c, "-c", "import sys; print(sys.version_info[:2] == (2, 7))"],
                                 capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode == 0 and out.stdout.strip() == "True":
            return c
    return None


def available() -> bool:
    """Tiresias' checkout and a Python 2.7 to run it are both here."""
    return (TIRESIAS / "simulator" / "run_sim.py").is_file() and python27() is not None


def missing() -> str:
    """One line: why the Tiresias peer cannot run here ("" when it can)."""
    if not (TIRESIAS / "simulator" / "run_sim.py").is_file():
        return f"Tiresias checkout not found at {TIRESIAS} (set MAGNUM_TIRESIAS to SymbioticLab/Tiresias)"
    if python27() is None:
        return "no Python 2.7 found (Tiresias requires it; set MAGNUM_TIRESIAS_PYTHON or install pyenv 2.7.18)"
    return ""


def prepare(workdir) -> Path:
    """An unchanged copy of Tiresias' simulator in ``workdir`` (it writes logs beside itself)."""
    dst = Path(workdir) / "tiresias_sim"
    if not dst.exists():
        shutil.copytree(TIRESIAS / "simulator", dst)
    return dst


def _numpy_stub(sim: Path) -> str | None:
    """A folder holding an empty ``numpy`` package for Python 2.7 when its own has none
    (Tiresias' ``jobs.py`` does ``import numpy`` and uses nothing from it), else None."""
    has = subprocess.run([python27(), "-c", "import numpy"], capture_output=True).returncode == 0
    if has:
        return None
    stub = sim.parent / "py27_numpy_stub"
    (stub / "numpy").mkdir(parents=True, exist_ok=True)
    (stub / "numpy" / "__init__.py").write_text(
        '"""Empty stand-in: Tiresias imports numpy and never uses it."""\n')
    return str(stub)


# Started before run_sim.py (runpy, as ``python run_sim.py ...`` would): optionally
# Python 2's sys.maxint under Python 3, and optionally other LAS thresholds. Tiresias'
# thresholds are the constants _TFJobs.__init__ sets (queue_limit [3250, 7200, 18000],
# 3 queues); for other thresholds the launcher sets those same three attributes on the
# JOBS object before run_sim.py runs (its files stay unchanged). Valid Python 2 and 3.
_LAUNCH = (
    "import runpy, sys, json\n"
    "if not hasattr(sys, 'maxint'): sys.maxint = sys.maxsize\n"
    "limits = json.loads(sys.argv[1])\n"
    "if limits is not None:\n"
    "    import jobs\n"
    "    jobs.JOBS.queue_limit = limits + [sys.maxint]\n"
    "    jobs.JOBS.num_queue = len(limits) + 1\n"
    "    jobs.JOBS.queues = [list() for _ in range(len(limits) + 1)]\n"
    "sys.argv = sys.argv[2:]\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n")


def write_trace(path, jobs) -> None:
    """Our ReplayJobs (whole seconds) as a Tiresias trace (model vgg19 for every job)."""
    sub = (jobs.submit_ns // 10**9).tolist()
    dur = (jobs.work_ns // 10**9).tolist()
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration", "interval"])
        for i, (s, d, g) in enumerate(zip(sub, dur, jobs.num_gpus.tolist(), strict=True)):
            w.writerow([i, g, s, 1, "vgg19", d, 0])


# Tiresias' dlas-gpu with starvation avoidance: its schedule names for solve_starvation K.
LAS_KNOBS = {0: "dlas-gpu", 0.5: "dlas-gpu-05", 1: "dlas-gpu-1", 2: "dlas-gpu-2", 4: "dlas-gpu-4",
             8: "dlas-gpu-8", 10: "dlas-gpu-10", 100: "dlas-gpu-100", 1000: "dlas-gpu-1000"}


def run_tiresias(sim: Path, jobs, nodes: int, gpus_per_node: int, policy: str, tag: str = "run",
                 thresholds_gpu_s=None, promote_knob: float = 0, python3: bool = False):
    """Run Tiresias on ``jobs`` under Python 2.7; returns ``(finish_s array by job id,
    preemptions, wall s)``. For ``policy="las"``: ``thresholds_gpu_s`` (whole GPU-seconds,
    increasing) instead of Tiresias' 3250, 7200, and ``promote_knob`` (its
    ``solve_starvation``, one of :data:`LAS_KNOBS`). ``python3``: run under this
    interpreter instead (not the published program's arithmetic)."""
    if thresholds_gpu_s is not None:
        thresholds_gpu_s = [int(x) for x in thresholds_gpu_s]
    schedule = SCHEDULES[policy]
    if policy == "las":
        if promote_knob not in LAS_KNOBS:
            raise ValueError(f"Tiresias has no dlas-gpu schedule for promote_knob {promote_knob}; "
                             f"it has {sorted(LAS_KNOBS)}")
        schedule = LAS_KNOBS[promote_knob]
    trace = sim / f"{tag}.csv"
    spec = sim / f"{tag}_spec.csv"
    write_trace(trace, jobs)
    spec.write_text("num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n"
                    f"1,{nodes},{gpus_per_node},64,256\n")
    out = sim / f"{tag}_{policy}"
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ)
    if python3:
        python = sys.executable
    else:
        python = python27()
        if python is None:
            raise RuntimeError(missing())
        env.pop("PYTHONHOME", None)
        stub = _numpy_stub(sim)
        env["PYTHONPATH"] = stub or ""
    t0 = time.perf_counter()
    subprocess.run([python, "-c", _LAUNCH, json.dumps(thresholds_gpu_s), "run_sim.py",
                    f"--cluster_spec={spec.name}", "--scheme=count", f"--trace_file={trace.name}",
                    f"--schedule={schedule}", f"--log_path={out.name}"],
                   cwd=sim, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    finish = np.full(len(jobs), np.nan)
    pre = 0
    with open(out / "job.csv") as f:
        for row in csv.DictReader(f):
            finish[int(row["job_id"])] = float(row["end_time"])
            pre += int(row["preempt"])
    return finish, pre, wall


def our_policy(policy: str, thresholds_gpu_s=None, promote_knob: float = 0):
    """Our twin of Tiresias' schedule for ``policy`` (see magnum_lib.replay's docstring)."""
    from magnum_lib.replay.policies import SJF, SRTF, TiresiasLAS

    if policy == "las":
        return TiresiasLAS(thresholds_gpu_s or (3250.0, 7200.0), promote_knob, tiresias_jump=True)
    if policy == "sjf-gpus-preemptive":
        return SJF("gpus", preemptive=True)
    if policy == "srtf-gpu-time":
        return SRTF("gpu_time", ties="previous")
    return policy


# The agreement sweep: every Tiresias schedule we twin, on Tiresias' 60 jobs and a Philly
# VC slice, and LAS under several thresholds (the default ones preempt nothing on the 60
# jobs) and starvation knobs. Each entry: (trace, nodes of 4 GPUs, policy, thresholds, knob).
SWEEP_LAS_THRESHOLDS = [None, (500,), (300, 1200), (60, 600, 3600)]
SWEEP_LAS_KNOBS = [0, 1, 2]
SWEEP_CLUSTERS = [("t60", 2), ("t60", 4), ("vc150", 2), ("vc150", 4)]


def sweep_configs(full_vc: bool = False):
    """The sweep's configurations; ``full_vc`` adds the whole VC on 9 x 4 GPUs (the
    bench_replay.py input, ~6 s per Tiresias run)."""
    clusters = SWEEP_CLUSTERS + ([("vc", 9)] if full_vc else [])
    out = []
    for trace, nodes in clusters:
        for pol in ("fifo-strict", "fifo-skip", "srtf", "sjf-gpus-preemptive", "srtf-gpu-time"):
            out.append((trace, nodes, pol, None, 0))
        for th in SWEEP_LAS_THRESHOLDS:
            for k in SWEEP_LAS_KNOBS:
                out.append((trace, nodes, "las", th, k))
    return out


def sweep_jobs(trace: str):
    """The sweep's inputs: Tiresias' 60 jobs, or Philly VC 0e4a51 (>= 60 s, 1-8 GPUs),
    its first 150 jobs (``vc150``) or all (``vc``)."""
    from magnum_lib.replay import traces

    if trace == "t60":
        return traces.tiresias_jobs()
    vc = traces.philly_jobs("0e4a51", min_duration_s=60, gpu_counts=[1, 2, 4, 8])
    return vc.subset(slice(0, 150)) if trace == "vc150" else vc


def agreement(sim: Path, configs, python3: bool = False, backend: str = "compiled"):
    """For each configuration, Tiresias (Python 2.7, or 3 with ``python3``) against our
    replay: one dict per configuration with ``same_jobs`` (finish times equal), ``jobs``,
    both preemption totals, and ``agree`` (every finish time and the preemption total)."""
    from magnum_lib.replay import ReplayCluster, replay

    rows, cache = [], {}
    for trace, nodes, pol, th, k in configs:
        jobs = cache.setdefault(trace, sweep_jobs(trace))
        theirs, pre, _ = run_tiresias(sim, jobs, nodes, 4, pol, "sweep", th, k, python3=python3)
        ours = replay(jobs, ReplayCluster.uniform(nodes, 4), our_policy(pol, th, k), backend=backend,
                      progress=False)
        same = int(np.sum(ours.finish_s == theirs))
        rows.append({"trace": trace, "nodes": nodes, "policy": pol, "thresholds_gpu_s": th,
                     "promote_knob": k, "same_jobs": same, "jobs": len(jobs),
                     "ours_preemptions": int(ours.preemptions.sum()), "tiresias_preemptions": pre,
                     "agree": same == len(jobs) and int(ours.preemptions.sum()) == pre})
    return rows


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


def main():
    """Print the agreement sweep against Tiresias as one JSON object (see :func:`agreement`)."""
    import argparse
    import tempfile

    ap = argparse.ArgumentParser(description="Job-for-job agreement with Tiresias' simulator")
    ap.add_argument("--python3", action="store_true", help="run Tiresias under this Python 3 (not as published)")
    ap.add_argument("--full-vc", action="store_true", help="also the whole VC on 9x4 GPUs (slow)")
    ap.add_argument("--backend", default="compiled", choices=["compiled", "python"])
    args = ap.parse_args()
    if not available():
        print(json.dumps({"measured": False, "why": missing()}))
        return
    with tempfile.TemporaryDirectory() as tmp:
        rows = agreement(prepare(tmp), sweep_configs(args.full_vc), args.python3, args.backend)
    by = {}
    for r in rows:
        key = "las" if r["policy"] == "las" else "other"
        a, n = by.get(key, (0, 0))
        by[key] = (a + r["agree"], n + 1)
    print(json.dumps({"measured": True, "tiresias_python": sys.executable if args.python3 else python27(),
                      "ours_backend": args.backend, "agree": sum(r["agree"] for r in rows), "configs": len(rows),
                      "las_agree": list(by.get("las", (0, 0))), "other_agree": list(by.get("other", (0, 0))),
                      "disagree": [r for r in rows if not r["agree"]]}))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    main()
