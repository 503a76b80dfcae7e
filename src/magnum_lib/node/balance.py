"""Load balancing across nodes: random, power-of-d choices, stale least-loaded, batch sampling.

Three questions a cluster scheduler's front end must answer, each with a function that
returns a frozen dataclass (``to_dict()`` for JSON) and a closed form to check it against:

- :func:`supermarket` -- where should each arriving job go? Mitzenmacher's supermarket
  model: ``servers`` FIFO servers with exponential service (mean 1 s), Poisson arrivals at
  ``load x servers`` per second, and a placement policy: ``"random"``, ``"power_of_d"``
  (shortest of ``choices`` sampled queues), ``"least_loaded_stale"`` (the least loaded
  server according to a view refreshed every ``refresh`` seconds, which herds) or, for
  jobs of several ``tasks``, ``"batch"`` (Sparrow's batch sampling).
  Theory for N -> infinity: :func:`theory_queue_tail`, :func:`theory_time_in_system`.
- :func:`batch_sampling` -- how should a job of ``tasks`` parallel tasks probe? Sparrow's
  batch sampling (probe ``choices x tasks`` servers, use the ``tasks`` least loaded) against
  per-task sampling and random placement, in a static snapshot of a cluster or in the
  dynamic supermarket. Theory: :func:`theory_zero_wait`.
- :func:`balls_into_bins` -- how fast is one placement decision? Power-of-d over a load
  vector, the kernel behind the "decisions per second" benchmark.

Every function is seeded (same seed, same result on both backends) and validates its
arguments, raising :class:`~magnum_lib.base.validate.ParameterError` (a ``ValueError``)
that names the bad parameter.
"""
from __future__ import annotations

import importlib
import math
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from magnum_lib._backend import pick
from magnum_lib.base.validate import ParameterError, check_choice, check_int, check_positive
from magnum_lib.engine import metrics
from magnum_lib.node import balance_ref
from magnum_lib.node.balance_ref import TAIL_LEVELS

_KERNELS = {"compiled": "magnum_lib.node._balance", "python": "magnum_lib.node.balance_ref"}
POLICIES = {"power_of_d": balance_ref.POWER_OF_D, "random": balance_ref.RANDOM,
            "least_loaded_stale": balance_ref.STALE, "batch": balance_ref.BATCH}
MAX_SERVERS = 10_000_000  # about 60 bytes of state per server
MAX_JOBS = 50_000_000  # tasks per run: 16 bytes each (arrival time and FIFO link)
MAX_TRIALS = 100_000_000
_MAX_HORIZON_NS = 2**62  # simulated time stays far inside int64 nanoseconds
_TRIAL_BLOCK = 65_536  # batch_sampling draws this many trials at a time (bounded memory)


def kernel(name: str | None = None):
    """The balance kernel module for backend ``name`` (default: the active backend).

    By default the compiled module when built (else the reference, as
    :func:`magnum_lib._backend.pick` decides); an explicit ``"compiled"`` raises
    ImportError when the extension is not built.
    """
    if name is None:
        return pick(_KERNELS["compiled"], _KERNELS["python"])
    return importlib.import_module(_KERNELS[check_choice("backend", name, tuple(_KERNELS))])


def _backend_name(module) -> str:
    return "python" if module is balance_ref else "compiled"


def _check_load(load) -> float:
    if isinstance(load, bool) or not isinstance(load, (int, float, np.floating, np.integer)):
        raise ParameterError("load", f"must be a number in (0, 1), got {load!r}")
    load = float(load)
    if not 0.0 < load < 1.0:
        raise ParameterError("load", f"must be in (0, 1) (arrival rate per server; "
                             f"1 or more is unstable), got {load!r}")
    return load


def _check_choices(choices, servers: int) -> int:
    choices = check_int("choices", choices, 1)
    if choices > servers:
        raise ParameterError("choices", f"must be <= servers ({servers}): a job samples "
                             f"distinct servers, got {choices}")
    return choices


def _check_probes(choices: int, tasks: int, servers: int) -> None:
    """Batch sampling probes ``choices x tasks`` distinct servers: there must be that many."""
    if choices * tasks > servers:
        raise ParameterError("choices", f"x tasks = {choices} x {tasks} probes per job must be "
                             f"<= servers ({servers}) for batch sampling")


def _seed_state(seed: int) -> int:
    """The kernels' 64-bit SplitMix64 start state, drawn from one seeded numpy Generator."""
    return int(np.random.default_rng(seed).integers(0, 2**63, dtype=np.int64))


# --------------------------------------------------------------------------- supermarket


@dataclass(frozen=True, eq=False)
class SupermarketResult:
    """Summary of one supermarket run. Times are in seconds (mean service time = 1 s).

    ``queue_tail[i - 1]`` is the time-averaged fraction of servers holding at least ``i``
    tasks (waiting or in service), i = 1..10, over the measured window; ``queue_tail[0]``
    is the utilization and should be close to ``load``. Only the jobs after the warm-up
    are measured; ``time_in_system`` holds their tasks' times, in arrival order
    (read-only). With one task per job (the classic model) a task is a job.
    """

    servers: int
    load: float
    choices: int
    policy: str
    tasks: int  # tasks per job
    refresh: float  # seconds between refreshes of the stale view ("least_loaded_stale")
    jobs: int
    warmup: float  # fraction of the first jobs discarded
    seed: int
    backend: str
    measured_jobs: int
    events: int  # job arrivals + task departures (= 2 x jobs with one task per job)
    wall_s: float  # wall-clock seconds: draws + simulation + summary
    time_in_system_mean: float  # per task
    p50: float
    p99: float
    queue_tail: tuple
    zero_wait: float  # fraction of measured jobs whose every task joined an idle server
    job_time_mean: float  # a job's time in system: until its last task leaves
    job_p99: float
    max_queue: int  # longest queue seen (whole run)
    window: float  # seconds of simulated time over which queue_tail is averaged
    time_in_system: np.ndarray = field(repr=False)

    def theory(self) -> dict:
        """The N -> infinity predictions for this run's policy, load and choices.

        Only defined for one task per job and policies "random" (d = 1, independent M/M/1
        queues) and "power_of_d"; ``zero_wait`` is ``1 - load^d``.
        """
        if self.tasks != 1 or self.policy not in ("random", "power_of_d"):
            raise ValueError(f"no closed form for policy {self.policy!r} with tasks={self.tasks}; "
                             "theory is defined for 'random' and 'power_of_d' with tasks=1")
        d = 1 if self.policy == "random" else self.choices
        return {"time_in_system_mean": theory_time_in_system(self.load, d),
                "queue_tail": list(theory_queue_tail(self.load, d)),
                "zero_wait": 1.0 - self.load ** d}

    def to_dict(self) -> dict:
        """The ``faux-magnum dispatch --json`` object."""
        out = {key: getattr(self, key) for key in _JSON_KEYS}
        out["queue_tail"] = list(self.queue_tail)
        return out


_JSON_KEYS = ("time_in_system_mean", "queue_tail", "p99", "events", "wall_s", "p50",
              "zero_wait", "measured_jobs", "max_queue", "servers", "choices", "load", "policy",
              "tasks", "jobs", "seed", "backend")


def validate_supermarket(servers, load, choices, policy, jobs, seed, refresh, warmup,
                         tasks) -> tuple:
    """Check :func:`supermarket`'s parameters; return them normalized.

    Raises
    ------
    ParameterError
        (a ValueError) naming the first bad parameter, its value and what is accepted.
    """
    servers = check_int("servers", servers, 1, MAX_SERVERS)
    load = _check_load(load)
    choices = _check_choices(choices, servers)
    policy = check_choice("policy", policy, tuple(POLICIES))
    tasks = check_int("tasks", tasks, 1, MAX_JOBS)
    jobs = check_int("jobs", jobs, 1, MAX_JOBS // tasks)
    seed = check_int("seed", seed, 0)
    refresh = check_positive("refresh", refresh, 1e6)
    if round(refresh * metrics.NS_PER_S) < 1:
        raise ParameterError("refresh", f"must be >= 1 ns (1e-9 s), got {refresh!r}")
    if isinstance(warmup, bool) or not isinstance(warmup, (int, float)) or not 0 <= warmup < 1:
        raise ParameterError("warmup", f"must be a fraction in [0, 1), got {warmup!r}")
    if policy == "batch":
        _check_probes(choices, tasks, servers)
    # The run lasts about tasks x jobs / (load x servers) seconds; keep it inside the int64 ns
    # clock with a wide margin for the random fluctuation and the final drain.
    horizon_ns = 8 * tasks * jobs / (load * servers) * metrics.NS_PER_S
    if horizon_ns >= _MAX_HORIZON_NS:
        raise ParameterError("jobs", f"= {jobs} at load {load:g} on {servers} servers spans about "
                             f"{horizon_ns / 8e9:.3g} s, too long for the nanosecond clock; "
                             "use fewer jobs or a higher load")
    return servers, load, choices, policy, jobs, seed, refresh, float(warmup), tasks


def supermarket(servers: int = 1000, load: float = 0.9, choices: int = 2,
                policy: str = "power_of_d", jobs: int = 200_000, seed: int = 0,
                refresh: float = 1.0, warmup: float = 0.2, tasks: int = 1,
                backend: str | None = None) -> SupermarketResult:
    """Simulate Mitzenmacher's supermarket model (optionally with multi-task jobs).

    Parameters
    ----------
    servers : int
        Number of FIFO servers N, each serving at rate 1 per second (exponential).
    load : float
        Utilization lambda, in (0, 1): jobs arrive as a Poisson stream of rate
        ``load x servers / tasks`` per second.
    choices : int
        d, the number of distinct servers probed per task (1 <= d <= servers; d = 1 under
        "power_of_d" is random placement).
    policy : {"power_of_d", "random", "least_loaded_stale", "batch"}
        Where each task goes: the shortest of d sampled queues (per-task sampling); a
        uniformly random server; the least loaded server according to a view refreshed
        every ``refresh`` seconds; or Sparrow's batch sampling (the job probes
        ``d x tasks`` servers and uses the ``tasks`` least loaded).
    jobs : int
        Number of arriving jobs simulated (the run then drains).
    seed : int
        Seed (>= 0): same seed, same result, on both backends.
    refresh : float
        Seconds between view refreshes ("least_loaded_stale" only).
    warmup : float
        Fraction of the first jobs that only warm the system up (it starts empty): their
        times are discarded and ``queue_tail`` is averaged from the first measured
        arrival to the last arrival.
    tasks : int
        Tasks per job (default 1, the classic model); each is served separately.
    backend : {"compiled", "python"}, optional
        Force a kernel (e.g. to time the speed-up); default: the active backend.

    Returns
    -------
    SupermarketResult
    """
    servers, load, choices, policy, jobs, seed, refresh, warmup, tasks = validate_supermarket(
        servers, load, choices, policy, jobs, seed, refresh, warmup, tasks)
    module = kernel(backend)
    start = time.perf_counter()
    skip = min(int(warmup * jobs), jobs - 1)
    out = module.simulate_supermarket(servers, load, POLICIES[policy], choices, tasks,
                                      int(round(refresh * metrics.NS_PER_S)), jobs, skip,
                                      _seed_state(seed))
    tis_ns = out["time_in_system"][skip * tasks:]
    job_ns = tis_ns.reshape(-1, tasks).max(axis=1) if tasks > 1 else tis_ns
    window_ns = out["window_ns"]
    if window_ns > 0:
        tail = tuple(float(a) / (servers * window_ns) for a in out["tail_area"])
    else:  # a single measured job: the window is one instant
        tail = (0.0,) * TAIL_LEVELS
    p50, p99 = metrics.percentiles_s(tis_ns, (50, 99))
    tis = tis_ns / metrics.NS_PER_S
    tis.flags.writeable = False
    return SupermarketResult(
        servers=servers, load=load, choices=choices, policy=policy, tasks=tasks,
        refresh=refresh, jobs=jobs, warmup=warmup, seed=seed, backend=_backend_name(module),
        measured_jobs=jobs - skip, events=int(out["events"]), wall_s=time.perf_counter() - start,
        time_in_system_mean=metrics.mean_s(tis_ns), p50=p50, p99=p99, queue_tail=tail,
        zero_wait=out["zero_wait"] / (jobs - skip), job_time_mean=metrics.mean_s(job_ns),
        job_p99=metrics.percentiles_s(job_ns, (99,))[0], max_queue=int(out["max_queue"]),
        window=window_ns / metrics.NS_PER_S, time_in_system=tis)


def theory_queue_tail(load: float, choices: int, levels: int = TAIL_LEVELS) -> tuple:
    """Fraction of servers with at least i jobs, i = 1..levels, as N -> infinity.

    Mitzenmacher (1996) / Vvedenskaya et al. (1996): ``s_i = lambda^((d^i - 1)/(d - 1))``
    for d >= 2; for d = 1 (random placement, independent M/M/1 queues) ``s_i = lambda^i``.
    """
    load = _check_load(load)
    choices = check_int("choices", choices, 1)
    levels = check_int("levels", levels, 1, 10_000)
    if choices == 1:
        return tuple(load ** i for i in range(1, levels + 1))
    # Exponents grow doubly exponentially: cap them so that the power underflows to 0.
    return tuple(load ** min((choices ** i - 1) // (choices - 1), 10**6) for i in range(1, levels + 1))


def theory_time_in_system(load: float, choices: int) -> float:
    """Mean time in system (s, mean service 1 s) as N -> infinity.

    Little's law on one server: mean jobs per server = sum_i s_i, so
    ``T = (1/lambda) sum_{i>=1} s_i``; for d = 1 this is the M/M/1 value 1/(1 - lambda).
    """
    load = _check_load(load)
    choices = check_int("choices", choices, 1)
    if choices == 1:
        return 1.0 / (1.0 - load)
    total, i = 0.0, 1
    while True:
        term = load ** ((choices ** i - 1) // (choices - 1))
        total += term
        if term < 1e-17 * total:
            return total / load
        i += 1


# ---------------------------------------------------------------------- balls into bins


@dataclass(frozen=True, eq=False)
class PlacementResult:
    """Power-of-d placement of ``balls`` unit jobs over ``servers`` (no departures)."""

    servers: int
    balls: int
    choices: int
    seed: int
    backend: str
    max_load: int
    mean_load: float
    gap: float  # max_load - mean_load
    wall_s: float  # kernel only
    decisions_per_s: float
    loads: np.ndarray = field(repr=False)

    def to_dict(self) -> dict:
        return {key: getattr(self, key) for key in ("servers", "balls", "choices", "seed",
                                                    "backend", "max_load", "mean_load", "gap",
                                                    "wall_s", "decisions_per_s")}


def balls_into_bins(servers: int = 10_000, balls: int | None = None, choices: int = 2,
                    seed: int = 0, backend: str | None = None) -> PlacementResult:
    """Place ``balls`` unit jobs one by one on the least loaded of ``choices`` random servers.

    Parameters
    ----------
    servers : int
        Number of servers n (loads start at 0).
    balls : int, optional
        Placement decisions to make; default ``10 x servers``.
    choices : int
        d distinct servers sampled per decision (d = 1 is random placement).
    seed : int
        Seed (>= 0); same seed, same loads on both backends.
    backend : {"compiled", "python"}, optional
        Force a kernel; default: the active backend.

    Returns
    -------
    PlacementResult
        With d >= 2 the gap between the fullest server and the mean stays about
        ``ln ln n / ln d`` however many balls are thrown (Berenbrink et al. 2006); with
        d = 1 it grows like ``sqrt(2 (balls/n) ln n)``.
    """
    servers = check_int("servers", servers, 1, MAX_SERVERS)
    balls = 10 * servers if balls is None else check_int("balls", balls, 0, 10**12)
    choices = _check_choices(choices, servers)
    seed = check_int("seed", seed, 0)
    module = kernel(backend)
    loads = np.zeros(servers, dtype=np.int64)
    state = _seed_state(seed)
    start = time.perf_counter()
    module.place_power_of_d(loads, balls, choices, state)
    wall = time.perf_counter() - start
    loads.flags.writeable = False
    mean = balls / servers
    return PlacementResult(servers=servers, balls=balls, choices=choices, seed=seed,
                           backend=_backend_name(module), max_load=int(loads.max()),
                           mean_load=mean, gap=float(loads.max() - mean), wall_s=wall,
                           decisions_per_s=balls / wall if wall > 0 else math.inf, loads=loads)


# ------------------------------------------------------------------------ batch sampling


@dataclass(frozen=True)
class BatchSamplingResult:
    """Zero-wait probability of a job of ``tasks`` tasks under three probing rules.

    Measured in the ``model`` (see :func:`batch_sampling`) beside the closed forms.
    """

    model: str  # "snapshot" or "dynamic"
    load: float
    tasks: int
    choices: int
    trials: int  # jobs per rule
    seed: int
    servers: int | None  # None in the snapshot model (an infinite cluster)
    random: float
    per_task: float
    batch: float
    random_theory: float
    per_task_theory: float
    batch_theory: float
    probes_per_job: dict  # probes sent per job by each rule

    def to_dict(self) -> dict:
        return asdict(self)


def theory_zero_wait(load: float, tasks: int = 10, choices: int = 2) -> dict:
    """Closed-form probability that all ``tasks`` tasks of a job start at once.

    Each probed server is idle with probability ``1 - load``, independently:

    - random: every task's one server is idle: ``(1 - load)^m``;
    - per-task sampling: each task finds an idle server among its d probes:
      ``(1 - load^d)^m``;
    - batch sampling: at least m of the ``d m`` probes are idle:
      ``P(Binomial(d m, 1 - load) >= m)``.
    """
    load = _check_load(load)
    tasks = check_int("tasks", tasks, 1, 10_000)
    choices = check_int("choices", choices, 1, 10_000)
    idle = 1.0 - load
    probes = choices * tasks
    batch = sum(math.comb(probes, k) * idle ** k * load ** (probes - k)
                for k in range(tasks, probes + 1))
    return {"random": idle ** tasks, "per_task": (1.0 - load ** choices) ** tasks,
            "batch": min(batch, 1.0)}


def batch_sampling(load: float = 0.5, tasks: int = 10, choices: int = 2,
                   trials: int = 100_000, seed: int = 0, model: str = "snapshot",
                   servers: int = 1000, backend: str | None = None) -> BatchSamplingResult:
    """Measure the zero-wait probability of a ``tasks``-task job (Sparrow, SOSP 2013).

    A job has zero wait when every task starts at once on an idle server. Three rules:
    random (one random server per task), per-task sampling (each task probes ``choices``
    servers and joins the least loaded) and batch sampling (the job probes
    ``choices x tasks`` servers and places its tasks on the ``tasks`` least loaded).

    Models
    ------
    ``"snapshot"`` (default): a job arrives at a large cluster in steady state where each
        server is busy with probability ``load``, independently (the utilization of any
        work-conserving cluster at that load). Per trial the job draws
        ``choices x tasks`` independent probes, shared by the three rules (common random
        numbers): random uses probe (j, 0) for task j; per-task uses task j's row; batch
        succeeds iff at least ``tasks`` probes are idle. This is exactly the model of the
        closed forms (:func:`theory_zero_wait`); the estimates carry binomial error
        ``sqrt(p (1 - p) / trials)``.
    ``"dynamic"``: the supermarket simulation with ``servers`` servers and jobs of
        ``tasks`` tasks (:func:`supermarket` with ``policy`` "random", "power_of_d" and
        "batch"), ``trials`` jobs per rule after a 20% warm-up. Probes now see a real,
        correlated queue state (and random placement may put two tasks on one server), so
        the closed forms hold only approximately, as N -> infinity.
    """
    load = _check_load(load)
    tasks = check_int("tasks", tasks, 1, 10_000)
    choices = check_int("choices", choices, 1, 10_000)
    trials = check_int("trials", trials, 1, MAX_TRIALS)
    seed = check_int("seed", seed, 0)
    model = check_choice("model", model, ("snapshot", "dynamic"))
    theory = theory_zero_wait(load, tasks, choices)
    if model == "snapshot":
        measured = _zero_wait_snapshot(load, tasks, choices, trials, seed)
        servers = None
    else:
        servers = check_int("servers", servers, 1, MAX_SERVERS)
        _check_probes(choices, tasks, servers)
        jobs = math.ceil(trials / 0.8)  # 20% warm-up
        measured = [supermarket(servers=servers, load=load, choices=choices, policy=policy,
                                jobs=jobs, seed=seed, tasks=tasks, backend=backend).zero_wait
                    for policy in ("random", "power_of_d", "batch")]
    return BatchSamplingResult(
        model=model, load=load, tasks=tasks, choices=choices, trials=trials, seed=seed,
        servers=servers, random=measured[0], per_task=measured[1], batch=measured[2],
        random_theory=theory["random"], per_task_theory=theory["per_task"],
        batch_theory=theory["batch"],
        probes_per_job={"random": tasks, "per_task": choices * tasks, "batch": choices * tasks})


def _zero_wait_snapshot(load: float, tasks: int, choices: int, trials: int, seed: int) -> list:
    """Zero-wait fractions (random, per-task, batch) in the snapshot model."""
    rng = np.random.default_rng(seed)
    hits = np.zeros(3, dtype=np.int64)
    block = max(1, min(_TRIAL_BLOCK, (1 << 24) // (tasks * choices)))
    for first in range(0, trials, block):
        n = min(block, trials - first)
        idle = rng.random((n, tasks, choices)) >= load
        hits[0] += np.count_nonzero(idle[:, :, 0].all(axis=1))
        hits[1] += np.count_nonzero(idle.any(axis=2).all(axis=1))
        hits[2] += np.count_nonzero(idle.sum(axis=(1, 2)) >= tasks)
    return [int(h) / trials for h in hits]
