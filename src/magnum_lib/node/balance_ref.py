"""Load balancing across nodes, readable reference: the supermarket model and power-of-d placement.

The compiled twin ``_balance.pyx`` has the same functions and returns the same results,
bit for bit, for the same arguments: both draw their random numbers from the small
SplitMix64 generator of ``base/rng.py`` (``base/_rng.pxd`` in C) and do the same floating-point
operations in the same order.

The supermarket model (Mitzenmacher 1996)
-----------------------------------------
``servers`` FIFO servers, each serving at rate 1 (exponential service, mean 1 s); jobs
arrive as one Poisson stream, each job made of ``tasks`` tasks (1 in the classic model)
that are queued and served independently; the job rate is ``load x servers / tasks`` so
that ``load`` is the utilization. Because every service is exponential, the next event
is a job arrival or the departure of the head task of a uniformly random busy server
(rate 1 per busy server): one exponential gap and one coin decide it, and a dense "busy
set" array picks the busy server in O(1). Each server keeps its FIFO of tasks as a
linked list through the task numbers (``head``, ``tail``, ``next_task``), so every
task's time in system is exact.

Policies (where each task of an arriving job goes):

- ``RANDOM``: a uniformly random server (``choices`` is ignored): independent M/M/1
  queues when ``tasks`` = 1.
- ``POWER_OF_D``: the shortest of ``choices`` distinct random servers, probed for each task
  separately (per-task sampling). The first sampled wins a tie, and the sample order is
  random, so ties are broken uniformly.
- ``STALE``: the least loaded server according to a view refreshed every ``refresh_ns``
  (a bulletin board); ties are broken uniformly. Between refreshes every job sees the
  same minimum, so jobs herd onto the few servers that looked idle.
- ``BATCH``: Sparrow's batch sampling: the job probes ``choices x tasks`` distinct servers
  at once and puts its tasks on the ``tasks`` least loaded of them.

A job has zero wait when each of its tasks joins an idle server (``zero_wait`` counts them).

Measurement: the first ``warmup`` jobs (numbered by arrival) warm the system up and are not
reported; the queue-length tail is integrated from the arrival of job ``warmup`` to the
arrival of the last job. After the last arrival no more jobs arrive and the queues drain:
that changes nothing for the measured jobs, since a FIFO task only waits for tasks ahead of
it and every busy server keeps serving at rate 1.
"""
from __future__ import annotations

import math

import numpy as np

from magnum_lib.base.kernel_args import int_scalar
from magnum_lib.base.rng import MASK64, below32, splitmix64, unit_double

RANDOM, POWER_OF_D, STALE, BATCH = 0, 1, 2, 3
TAIL_LEVELS = 10  # queue_tail[i - 1] = time-averaged fraction of servers with >= i jobs
NS_PER_S = 1e9
MAX_SERVERS = 2**31 - 1  # random indices are 32-bit (see base.rng.below32)
MAX_TASKS = 2**31  # per-task arrays (16 bytes each) of one supermarket run
MAX_REFRESH_NS = 2**61
MAX_DECISIONS = 10**12


def _check_integers(**values) -> None:
    """Each value an integer that fits int64 (TypeError / ValueError before any C conversion)."""
    for name, value in values.items():
        int_scalar(name, value, -(2**63), 2**63 - 1)


def check_supermarket_inputs(servers, load, policy, choices, tasks, refresh_ns, jobs, warmup) -> None:
    """Kernel-level sanity checks (the public API validates with friendlier messages first).

    Integers are checked before any C conversion, so a huge one is a ValueError, not an
    overflow; ``jobs x tasks`` (the per-task arrays) is at most ``MAX_TASKS``.
    """
    _check_integers(servers=servers, policy=policy, choices=choices, tasks=tasks,
                    refresh_ns=refresh_ns, jobs=jobs, warmup=warmup)
    if isinstance(load, bool) or not isinstance(load, (int, float, np.integer, np.floating)):
        raise TypeError(f"load must be a number, got {type(load).__name__}")
    if not 1 <= servers <= MAX_SERVERS:
        raise ValueError(f"servers must be in [1, {MAX_SERVERS}], got {servers}")
    if not 0.0 < load < 1.0:
        raise ValueError(f"load must be in (0, 1), got {load}")
    if policy not in (RANDOM, POWER_OF_D, STALE, BATCH):
        raise ValueError(f"policy must be 0, 1, 2 or 3, got {policy}")
    if tasks < 1 or not 1 <= choices * (tasks if policy == BATCH else 1) <= servers:
        raise ValueError(f"need tasks >= 1 and 1 <= probes per job <= servers={servers}, "
                         f"got choices={choices}, tasks={tasks}")
    if policy == STALE and refresh_ns < 1:
        raise ValueError(f"refresh_ns must be >= 1 for the stale policy, got {refresh_ns}")
    if jobs < 1 or not 0 <= warmup < jobs:
        raise ValueError(f"need jobs >= 1 and 0 <= warmup < jobs, got jobs={jobs}, warmup={warmup}")
    if jobs * tasks > MAX_TASKS:
        raise ValueError(f"jobs x tasks must be <= {MAX_TASKS}, got {jobs} x {tasks}")
    if not 0 <= refresh_ns <= MAX_REFRESH_NS:
        raise ValueError(f"refresh_ns must be in [0, {MAX_REFRESH_NS}], got {refresh_ns}")


def check_placement_inputs(loads, decisions, choices) -> None:
    """Kernel-level checks of :func:`place_power_of_d` (shared by both backends)."""
    _check_integers(decisions=decisions, choices=choices)
    if not isinstance(loads, np.ndarray) or loads.dtype != np.int64 or loads.ndim != 1 \
            or not loads.flags.c_contiguous or not loads.flags.writeable:
        raise TypeError("loads must be a writable, C-contiguous 1-D int64 numpy array")
    n = loads.shape[0]
    if not 1 <= choices <= n <= MAX_SERVERS or not 0 <= decisions <= MAX_DECISIONS:
        raise ValueError(f"need 1 <= choices <= servers <= {MAX_SERVERS} and 0 <= decisions <= "
                         f"{MAX_DECISIONS}, got choices={choices}, servers={n}, decisions={decisions}")
    if loads.min() < 0 or loads.max() > 2**62 - decisions:
        raise ValueError("loads must be >= 0 and leave room for the decisions in int64")


class _Supermarket:
    """The supermarket model's state, one method per step of an event (times in ns)."""

    def __init__(self, servers: int, policy: int, choices: int, tasks: int, refresh_ns: int, jobs: int,
                 warmup: int, seed: int, arrival_rate: float):
        self.servers, self.policy, self.choices, self.tasks = servers, policy, choices, tasks
        self.refresh_ns, self.jobs, self.warmup, self.arrival_rate = refresh_ns, jobs, warmup, arrival_rate
        self.state = seed & MASK64
        n_tasks = jobs * tasks
        # Per task: its arrival time until it leaves, then its time in system (ns).
        self.tis = np.zeros(n_tasks, dtype=np.int64)
        self.next_task = [-1] * n_tasks  # the task behind this one at its server
        self.head = [-1] * servers
        self.tail = [-1] * servers
        self.queue = [0] * servers
        self.busy = [0] * servers  # busy[0:n_busy] lists the busy servers
        self.perm = list(range(servers))  # partial Fisher-Yates shuffles sample distinct servers
        self.count = [0] * (TAIL_LEVELS + 1)  # count[i] = servers holding >= i tasks
        self.area = [0.0] * (TAIL_LEVELS + 1)
        self.since = [0] * (TAIL_LEVELS + 1)  # last time count[i] changed (while measuring)
        self.board: list[int] = []  # STALE: the servers that looked least loaded at the last refresh
        self.next_refresh = 0
        self.n_busy = self.arrived = self.events = self.max_queue = self.zero_wait = 0
        self.now = self.window_start = self.window_end = 0
        self.measuring = False

    def draw(self) -> int:
        """The next SplitMix64 output (64-bit)."""
        self.state, x = splitmix64(self.state)
        return x

    def level_changed(self, level: int, delta: int) -> None:
        """Count[level] moves by ``delta`` servers; while measuring, its area (server-ns) grows first."""
        if self.measuring:
            self.area[level] += float(self.count[level]) * float(self.now - self.since[level])
            self.since[level] = self.now
        self.count[level] += delta

    def sample(self, k: int) -> int:
        """Step k of a partial Fisher-Yates shuffle: perm[k] becomes a new distinct server (its id)."""
        r = k + below32(self.draw(), self.servers - k)
        perm = self.perm
        perm[k], perm[r] = perm[r], perm[k]
        return perm[k]

    def next_event(self) -> bool:
        """Advance ``now`` by one exponential gap (ns) at the total rate; True if the event is an arrival."""
        rate = self.arrival_rate + self.n_busy if self.arrived < self.jobs else float(self.n_busy)
        gap = -math.log(1.0 - unit_double(self.draw()))
        self.now += int(gap / rate * NS_PER_S + 0.5)
        if self.arrived < self.jobs:
            return unit_double(self.draw()) * rate < self.arrival_rate
        return False

    def refresh_board(self) -> None:
        """STALE: snapshot the least loaded servers (the state just before this event); next refresh in ns."""
        low = min(self.queue)
        self.board = [s for s in range(self.servers) if self.queue[s] == low]
        self.next_refresh += self.refresh_ns * ((self.now - self.next_refresh) // self.refresh_ns + 1)

    def mark_window(self, job: int) -> None:
        """Open the measured window at job ``warmup``'s arrival, close it at the last job's (ns)."""
        if job == self.warmup:
            self.measuring = True
            self.window_start = self.now
            for level in range(1, TAIL_LEVELS + 1):
                self.since[level] = self.now
        if job == self.jobs - 1:
            for level in range(1, TAIL_LEVELS + 1):
                self.level_changed(level, 0)
            self.measuring = False
            self.window_end = self.now

    def choose(self, j: int) -> int:
        """The server (id) for task ``j`` of the arriving job, by the policy."""
        queue, perm = self.queue, self.perm
        if self.policy == RANDOM:
            return below32(self.draw(), self.servers)
        if self.policy == POWER_OF_D:  # each task probes its own d servers
            s = -1
            for k in range(self.choices):
                c = self.sample(k)
                if s < 0 or queue[c] < queue[s]:
                    s = c
            return s
        if self.policy == STALE:
            return self.board[below32(self.draw(), len(self.board))]
        # BATCH: task j takes the least loaded probe not yet used by this job
        best = j
        for k in range(j + 1, self.choices * self.tasks):
            if queue[perm[k]] < queue[perm[best]]:
                best = k
        perm[j], perm[best] = perm[best], perm[j]
        return perm[j]

    def join(self, task: int, s: int) -> None:
        """Task ``task`` joins the tail of server ``s``'s FIFO at ``now`` (ns)."""
        self.tis[task] = self.now
        if self.tail[s] < 0:
            self.head[s] = task
        else:
            self.next_task[self.tail[s]] = task
        self.tail[s] = task
        self.queue[s] += 1
        if self.queue[s] == 1:
            self.busy[self.n_busy] = s
            self.n_busy += 1
        if self.queue[s] <= TAIL_LEVELS:
            self.level_changed(self.queue[s], 1)
        self.max_queue = max(self.max_queue, self.queue[s])

    def arrive(self) -> None:
        """A job arrives: each of its tasks joins the server the policy picks; count a zero-wait job."""
        job = self.arrived
        self.mark_window(job)
        if self.policy == BATCH:
            for k in range(self.choices * self.tasks):  # probe d x m distinct servers at once
                self.sample(k)
        all_idle = True
        for j in range(self.tasks):
            s = self.choose(j)
            all_idle = all_idle and self.queue[s] == 0
            self.join(job * self.tasks + j, s)
        if all_idle and job >= self.warmup:
            self.zero_wait += 1
        self.arrived += 1

    def depart(self) -> None:
        """The head task of a uniformly random busy server leaves; its time in system (ns) is final."""
        k = below32(self.draw(), self.n_busy)
        s = self.busy[k]
        task = self.head[s]
        self.tis[task] = self.now - self.tis[task]
        self.head[s] = self.next_task[task]
        if self.head[s] < 0:
            self.tail[s] = -1
        if self.queue[s] <= TAIL_LEVELS:
            self.level_changed(self.queue[s], -1)
        self.queue[s] -= 1
        if self.queue[s] == 0:
            self.n_busy -= 1
            self.busy[k] = self.busy[self.n_busy]


def simulate_supermarket(servers: int, load: float, policy: int, choices: int, tasks: int,
                         refresh_ns: int, jobs: int, warmup: int, seed: int) -> dict:
    """Run the supermarket model; see the module docstring.

    Parameters
    ----------
    servers : int
        Number of FIFO servers N (service rate 1 per second each).
    load : float
        Work arriving per server per second, in (0, 1): jobs of ``tasks`` tasks arrive
        at ``load x servers / tasks`` per second.
    policy : int
        ``RANDOM``, ``POWER_OF_D``, ``STALE`` or ``BATCH``.
    choices : int
        d, servers probed per task (``POWER_OF_D``: d <= N; ``BATCH``: d x tasks <= N).
    tasks : int
        m, tasks per job; each task is served on its own (exponential, mean 1 s).
    refresh_ns : int
        Period of the stale view, ns (``STALE`` only).
    jobs, warmup : int
        Jobs to simulate, and how many of the first ones are not measured.
    seed : int
        Initial SplitMix64 state (0 <= seed < 2^64).

    Returns
    -------
    dict
        ``time_in_system`` (int64 ns per task; task j of job i is entry ``i x tasks + j``;
        the first ``warmup x tasks`` belong to warm-up jobs), ``tail_area``
        (float64[TAIL_LEVELS], server-ns spent with >= i tasks during the window),
        ``window_ns``, ``events`` (job arrivals + task departures), ``max_queue``,
        ``zero_wait`` (measured jobs whose every task went to an idle server).
    """
    check_supermarket_inputs(servers, load, policy, choices, tasks, refresh_ns, jobs, warmup)
    arrival_rate = load * servers / tasks  # jobs per second
    m = _Supermarket(servers, policy, choices, tasks, refresh_ns, jobs, warmup, seed, arrival_rate)
    while m.arrived < jobs or m.n_busy > 0:
        # Next event: an exponential gap at the total rate, then arrival or departure.
        is_arrival = m.next_event()
        if policy == STALE and m.arrived < jobs and m.now >= m.next_refresh:
            m.refresh_board()
        m.events += 1
        if is_arrival:
            m.arrive()
        else:
            m.depart()
    return {"time_in_system": m.tis, "tail_area": np.array(m.area[1:], dtype=np.float64),
            "window_ns": m.window_end - m.window_start, "events": m.events, "max_queue": m.max_queue,
            "zero_wait": m.zero_wait}


def place_power_of_d(loads: np.ndarray, decisions: int, choices: int, seed: int) -> int:
    """Place ``decisions`` unit jobs, each on the least loaded of ``choices`` distinct random servers.

    The balls-into-bins form of power-of-d: ``loads`` (int64, one per server) is updated
    in place; ties go to the first sampled server. Returns the final SplitMix64 state.
    """
    check_placement_inputs(loads, decisions, choices)
    n = loads.shape[0]
    state = seed & MASK64
    perm = list(range(n))
    counts = loads.tolist()
    for _ in range(decisions):
        best = -1
        for k in range(choices):
            state, x = splitmix64(state)
            r = k + below32(x, n - k)
            perm[k], perm[r] = perm[r], perm[k]
            if best < 0 or counts[perm[k]] < counts[best]:
                best = perm[k]
        counts[best] += 1
    loads[:] = counts
    return state
