"""Gossip dissemination at fleet scale: how fast one update reaches everyone, and how stale views get.

Two simulations, seeded, with the same results on both backends (``_dissemination.pyx``
compiled, ``dissemination_ref.py`` the readable reference; the model is described there):

- :func:`simulate`: one rumor from one node, in synchronous rounds of one gossip interval
  (default 1 ms, the article's). Push, pull or push-pull, fanout k, message loss, crashes,
  a partition that heals, churn. Coverage per round, rounds to a quorum and to everyone,
  the round each node learned the rumor, and the bandwidth every node spends.
- :func:`staleness`: every node updates its own state every round and gossips its whole view;
  the distribution of the age of each node's view of the others at steady state. It keeps
  two n x n int32 matrices (8 n^2 bytes: 32 MB at n = 2,000), so ``nodes`` is capped at
  :data:`MAX_STALENESS_NODES`.

Bandwidth: every live node gossips every round whether or not it has news (the article's
"every 1 ms"), so bytes per node per second = datagrams sent x :func:`message_size` /
(live node-rounds x interval); one node entry is the article's node state without its
pending jobs, 88 B per datagram by default.
"""
from __future__ import annotations

import importlib
import math
import numbers
import time
from dataclasses import dataclass, field
from types import ModuleType

import numpy as np

from magnum_lib._backend import pick
from magnum_lib.base.validate import ParameterError, check_choice, check_int
from magnum_lib.gossip import dissemination_ref
from magnum_lib.units import parse_duration

_KERNELS = {"compiled": "magnum_lib.gossip._dissemination",
            "python": "magnum_lib.gossip.dissemination_ref"}
MODES = {"push": 1, "pull": 2, "pushpull": 3}
_MODE_ALIASES = {"push-pull": "pushpull", "push_pull": "pushpull"}
MAX_NODES = dissemination_ref.MAX_NODES  # ~21 B of per-node arrays each: 1 GB at this size
MAX_ROUNDS = dissemination_ref.MAX_ROUNDS  # int32 infection rounds; a run that long is a mistake
MAX_STALENESS_NODES = dissemination_ref.MAX_STALENESS_NODES  # two n x n int32 views: 134 MB
NO_CRASH = 2**62  # crash round of a node that never crashes

# Message-size model, bytes.
IP_UDP_HEADER = 28  # IPv4 20 + UDP 8
GOSSIP_HEADER = 16  # sender id 4 + round 8 + type and entry count 4
ENTRY_FIXED = 12  # per node entry: node id 4 + generation 8
JOB_ENTRY = 12  # per pending job: job id 8 + priority 4


def message_size(entries: int = 1, gpus: int = 256, pending_jobs: int = 0) -> int:
    """Bytes of one gossip datagram under the stated model.

    IPv4 + UDP headers (28 B) + gossip header (16 B: sender id, round, type/count) +
    ``entries`` node entries, each node id 4 B + generation 8 B + utilization bitmap
    (one bit per GPU, ``ceil(gpus / 8)`` B: 32 B for 256 GPUs) + 12 B per pending job
    (job id 8 B + priority 4 B). Default: one entry, 256 GPUs, no jobs = 88 B.
    """
    entries = check_int("entries", entries, 0)
    gpus = check_int("gpus", gpus, 0)
    pending_jobs = check_int("pending_jobs", pending_jobs, 0)
    entry = ENTRY_FIXED + math.ceil(gpus / 8) + JOB_ENTRY * pending_jobs
    return IP_UDP_HEADER + GOSSIP_HEADER + entries * entry


def kernel(name: str | None = None) -> tuple[str, ModuleType]:
    """``(backend name, kernel module)`` for backend ``name``; default: the active backend
    (the reference if this extension is not built, see :func:`magnum_lib._backend.pick`)."""
    if name is not None:
        name = check_choice("backend", name, tuple(_KERNELS))
        return name, importlib.import_module(_KERNELS[name])
    module = pick(_KERNELS["compiled"], _KERNELS["python"])
    return ("compiled" if module.__name__ == _KERNELS["compiled"] else "python"), module


# -- validation at the boundary ------------------------------------------------------------

def _probability(name: str, value) -> float:
    """A probability in [0, 1): 1 would mean nothing ever gets through."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value < 1:
        raise ParameterError(name, f"must be a probability in [0, 1), got {value!r}")
    return float(value)


def threshold(p: float) -> int:
    """Integer form of probability p the kernels compare draws with: round(p 2^53)."""
    return round(p * 2**53)


def _interval_ns(interval) -> int:
    try:
        ns = parse_duration(interval, field="interval")
    except (ValueError, TypeError):
        ns = None
    if ns is None or ns <= 0:
        raise ParameterError("interval", f"must be a positive duration such as '1ms' or a "
                                         f"number of seconds > 0, got {interval!r}")
    return ns


def _mode(mode) -> str:
    mode = _MODE_ALIASES.get(mode, mode) if isinstance(mode, str) else mode
    return check_choice("mode", mode, tuple(MODES))


def _common(nodes, fanout, mode, loss, interval, seed, partition_rounds, partition_start):
    nodes = check_int("nodes", nodes, 2, MAX_NODES)
    if isinstance(fanout, bool) or not isinstance(fanout, numbers.Integral) \
            or not 1 <= fanout <= nodes - 1:
        raise ParameterError("fanout", f"must be an integer from 1 to nodes - 1 = {nodes - 1} "
                                       f"(distinct peers other than the node), got {fanout!r}")
    return dict(
        nodes=nodes, fanout=int(fanout), mode=_mode(mode), loss=_probability("loss", loss),
        interval_ns=_interval_ns(interval), seed=check_int("seed", seed, 0, 2**64 - 1),
        partition_rounds=check_int("partition_rounds", partition_rounds, 0, MAX_ROUNDS),
        partition_start=check_int("partition_start", partition_start, 1, MAX_ROUNDS))


def _crash_rounds(nodes, source, crash_fraction, crash_at, crashes, seed) -> np.ndarray:
    """Per-node crash round (NO_CRASH: never). A random ``crash_fraction`` of the nodes other
    than the source crash at ``crash_at`` (chosen by numpy's Generator seeded with ``seed``);
    ``crashes`` maps node -> round explicitly (it may crash the source) and wins."""
    crash_fraction = _probability("crash_fraction", crash_fraction)
    crash_at = check_int("crash_at", crash_at, 1, MAX_ROUNDS)
    rounds = np.full(nodes, NO_CRASH, dtype=np.int64)
    count = round(crash_fraction * nodes)
    if count:
        others = np.delete(np.arange(nodes), source)
        rounds[np.random.default_rng(seed).choice(others, size=min(count, nodes - 1),
                                                  replace=False)] = crash_at
    items = dict(crashes).items() if crashes is not None else ()
    for node, at in items:
        check_int("crashes node", node, 0, nodes - 1)
        rounds[node] = check_int("crashes round", at, 0, MAX_ROUNDS)
    return rounds


# -- one rumor -----------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class _GossipRun:
    """The parameters every gossip simulation reports."""

    nodes: int
    fanout: int
    mode: str
    loss: float
    interval_s: float
    seed: int
    backend: str


_RUN_KEYS = ("nodes", "fanout", "mode", "loss", "interval_s", "seed", "backend")


@dataclass(frozen=True, eq=False)
class DisseminationResult(_GossipRun):
    """One rumor's spread. Round t ends at t x interval; index 0 of the arrays is the start.

    ``coverage[t]`` is the fraction of live nodes informed at the end of round t (0 if none is
    live); ``informed`` and ``live`` are the counts behind it. ``infection_round[i]`` is the
    round node i (last) learned the rumor, 0 for the source, -1 never: color the cluster by it.
    ``rounds_to_all`` is None when some live node was still uninformed when the run stopped
    (see ``stopped``).
    """

    quorum: float | None  # None: a strict majority of the live nodes
    rounds: int  # rounds simulated
    rounds_to_quorum: int | None
    rounds_to_all: int | None
    stopped: str  # "all informed", "rumor died", "max_rounds" or "rounds"
    messages: int  # datagrams sent, every live node gossiping every round (replies included)
    message_bytes: int
    bytes_per_node_per_s: float  # messages x message_bytes / (live node-rounds x interval)
    wall_s: float
    coverage: np.ndarray = field(repr=False)
    informed: np.ndarray = field(repr=False)
    live: np.ndarray = field(repr=False)
    infection_round: np.ndarray = field(repr=False)

    @property
    def time_to_quorum_s(self) -> float | None:
        return None if self.rounds_to_quorum is None else self.rounds_to_quorum * self.interval_s

    @property
    def time_to_all_s(self) -> float | None:
        return None if self.rounds_to_all is None else self.rounds_to_all * self.interval_s

    def to_dict(self, per_node: bool = False) -> dict:
        """JSON-ready summary (``coverage`` as a list); ``per_node`` adds ``infection_round``."""
        out = {key: getattr(self, key) for key in _SUMMARY_KEYS}
        out["coverage"] = self.coverage.tolist()
        out["time_to_quorum_s"] = self.time_to_quorum_s
        out["time_to_all_s"] = self.time_to_all_s
        if per_node:
            out["infection_round"] = self.infection_round.tolist()
        return out


_SUMMARY_KEYS = _RUN_KEYS + ("quorum", "rounds", "rounds_to_quorum", "rounds_to_all", "stopped",
                             "messages", "message_bytes", "bytes_per_node_per_s", "wall_s")


def _first(mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None


def simulate(nodes: int = 1000, fanout: int = 1, mode: str = "push", *, loss: float = 0.0,
             interval="1ms", seed: int = 0, source: int = 0, quorum: float | None = None,
             partition_rounds: int = 0, partition_start: int = 1, crash_fraction: float = 0.0,
             crash_at: int = 1, crashes=None, churn: float = 0.0, churn_downtime: int = 10,
             rounds: int | None = None, max_rounds: int = 1000, message_bytes: int | None = None,
             backend: str | None = None) -> DisseminationResult:
    """Spread one rumor from ``source`` by gossip and record its coverage round by round.

    Parameters
    ----------
    nodes : int
        Cluster size n (>= 2).
    fanout : int
        Distinct peers each live node contacts per round, 1 <= k <= n - 1.
    mode : {"push", "pull", "pushpull"}
        Push: the message carries the sender's state. Pull: the sender asks, the peer replies
        with its state. Push-pull: both ("push-pull" is accepted too).
    loss : float
        Probability that a datagram is lost, in [0, 1).
    interval : str or float
        Gossip interval: ``"1ms"`` (default, the article's) or seconds. A round is one interval.
    seed : int
        Same seed, same result on both backends.
    source : int
        The node that has the rumor at round 0.
    quorum : float, optional
        Fraction of the live nodes that makes a quorum, in (0, 1]; default a strict majority.
    partition_rounds, partition_start : int
        Nodes [0, n // 2) and [n // 2, n) cannot reach each other during rounds
        ``partition_start <= t < partition_start + partition_rounds``; then it heals.
    crash_fraction, crash_at, crashes
        A random fraction of the nodes other than the source crash at round ``crash_at``;
        ``crashes`` ({node: round} or (node, round) pairs) adds explicit crashes. A crashed
        node is down from that round on: it neither sends nor answers.
    churn, churn_downtime : float, int
        Each round, each live node leaves with probability ``churn`` and rejoins
        ``churn_downtime`` rounds later with its state lost.
    rounds : int, optional
        Simulate exactly this many rounds (e.g. to plot churn); default: stop when every live
        node is informed, when none is (the rumor died), or after ``max_rounds``.
    message_bytes : int, optional
        Size of one datagram; default :func:`message_size` () = 88 B.
    backend : {"compiled", "python"}, optional
        Force a kernel (e.g. to time the speed-up); default: the active backend.

    Returns
    -------
    DisseminationResult
    """
    p = _common(nodes, fanout, mode, loss, interval, seed, partition_rounds, partition_start)
    n = p["nodes"]
    source, churn, churn_downtime, max_rounds, message_bytes = _check_rumor(
        n, source, quorum, churn, churn_downtime, rounds, max_rounds, message_bytes)
    crash_round = _crash_rounds(n, source, crash_fraction, crash_at, crashes, p["seed"])
    name, module = kernel(backend)  # import before the clock starts
    run = module.run_rumor

    start = time.perf_counter()
    infection_round = np.empty(n, dtype=np.int32)
    informed = np.zeros(max_rounds + 1, dtype=np.int64)
    live = np.zeros(max_rounds + 1, dtype=np.int64)
    done, messages = run(n, p["fanout"], MODES[p["mode"]], threshold(p["loss"]), threshold(churn),
                         churn_downtime, crash_round, partition_start,
                         partition_start + p["partition_rounds"], source, max_rounds,
                         rounds is None, p["seed"], infection_round, informed, live)
    return _rumor_result(p, name, quorum, rounds, int(done), int(messages), message_bytes,
                         informed[: done + 1], live[: done + 1], infection_round, start)


def _check_rumor(n: int, source, quorum: float | None, churn, churn_downtime, rounds, max_rounds, message_bytes) -> tuple:
    """Validate :func:`simulate`'s other arguments: source, churn, downtime, rounds (the cap), bytes."""
    source = check_int("source", source, 0, n - 1)
    if quorum is not None and (isinstance(quorum, bool) or not isinstance(quorum, numbers.Real)
                               or not 0 < quorum <= 1):
        raise ParameterError("quorum", f"must be a fraction in (0, 1] or None (majority), got {quorum!r}")
    churn = _probability("churn", churn)
    churn_downtime = check_int("churn_downtime", churn_downtime, 1, MAX_ROUNDS)
    max_rounds = check_int("max_rounds", max_rounds, 1, MAX_ROUNDS)
    if rounds is not None:
        max_rounds = check_int("rounds", rounds, 1, MAX_ROUNDS)
    message_bytes = message_size() if message_bytes is None else check_int("message_bytes", message_bytes, 1)
    return source, churn, churn_downtime, max_rounds, message_bytes


def _rumor_result(p: dict, name: str, quorum, rounds, done: int, messages: int, message_bytes: int,
                  informed, live, infection_round, start: float) -> DisseminationResult:
    """Summarize a run: coverage per round, rounds to quorum and to all, why it stopped, bytes/node/s."""
    coverage = np.divide(informed, live, out=np.zeros(done + 1), where=live > 0)
    reached = informed > live / 2 if quorum is None else informed >= quorum * live - 1e-9
    rounds_to_all = _first((informed == live) & (live > 0))
    if rounds is not None:
        stopped = "rounds"
    elif rounds_to_all is not None:
        stopped = "all informed"
    else:
        stopped = "rumor died" if informed[-1] == 0 else "max_rounds"
    node_rounds = int(live[1:].sum())
    interval_s = p["interval_ns"] / 1e9
    for a in (coverage, informed, live, infection_round):
        a.flags.writeable = False
    return DisseminationResult(
        nodes=p["nodes"], fanout=p["fanout"], mode=p["mode"], loss=p["loss"], interval_s=interval_s,
        seed=p["seed"], backend=name, quorum=None if quorum is None else float(quorum),
        rounds=done, rounds_to_quorum=_first(reached & (live > 0)),
        rounds_to_all=rounds_to_all, stopped=stopped, messages=messages,
        message_bytes=message_bytes,
        bytes_per_node_per_s=messages * message_bytes / (node_rounds * interval_s) if node_rounds else 0.0,
        wall_s=time.perf_counter() - start, coverage=coverage, informed=informed, live=live,
        infection_round=infection_round)


def simulate_seeds(seeds, **params) -> list[DisseminationResult]:
    """:func:`simulate` once per seed in ``seeds`` with the same other parameters."""
    return [simulate(seed=s, **params) for s in seeds]


def mean_coverage(results) -> np.ndarray:
    """Mean coverage curve over runs, each padded with its last value to the longest run."""
    length = max(r.coverage.size for r in results)
    padded = [np.pad(r.coverage, (0, length - r.coverage.size), mode="edge") for r in results]
    return np.mean(padded, axis=0)


# -- staleness -----------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class StalenessResult(_GossipRun):
    """Age of every node's view of every other node, sampled over ``measure`` rounds.

    ``histogram[a]`` counts (observer, subject, round) samples whose view was ``a`` rounds old
    (a >= 1: an update made at the start of a round and received in it is one interval old).
    """

    warmup: int
    measure: int
    messages: int  # datagrams sent over warmup + measure rounds
    message_bytes: int  # a full view: message_size(entries=nodes)
    bytes_per_node_per_s: float
    wall_s: float
    histogram: np.ndarray = field(repr=False)

    def quantile(self, q: float) -> int:
        """Smallest age a (rounds) with at least a fraction q of the samples <= a."""
        cdf = np.cumsum(self.histogram)
        return int(np.searchsorted(cdf, q * cdf[-1] - 1e-9 * cdf[-1]))

    @property
    def mean_rounds(self) -> float:
        ages = np.arange(self.histogram.size)
        return float(ages @ self.histogram / self.histogram.sum())

    @property
    def max_rounds(self) -> int:
        return int(np.flatnonzero(self.histogram)[-1])

    def quantiles(self) -> dict:
        """Mean, p50, p90, p99 and max age, in rounds and in seconds."""
        rounds = {"mean": self.mean_rounds, "p50": self.quantile(0.5), "p90": self.quantile(0.9),
                  "p99": self.quantile(0.99), "max": self.max_rounds}
        return {"rounds": rounds, "seconds": {k: v * self.interval_s for k, v in rounds.items()}}

    def to_dict(self) -> dict:
        out = {key: getattr(self, key) for key in _STALENESS_KEYS}
        out["age"] = self.quantiles()
        out["histogram"] = self.histogram.tolist()
        return out


_STALENESS_KEYS = _RUN_KEYS + ("warmup", "measure", "messages", "message_bytes",
                               "bytes_per_node_per_s", "wall_s")


def default_warmup(nodes: int, fanout: int, loss: float) -> int:
    """Rounds before sampling: twice the rounds one update needs to reach everyone
    (push theory, slowed by loss), plus 10; the initial all-zero views are gone by then."""
    from magnum_lib.gossip.theory import push_rounds_expected

    return math.ceil(2 * push_rounds_expected(nodes, fanout) / (1 - loss)) + 10


def staleness(nodes: int = 200, fanout: int = 1, mode: str = "push", *, loss: float = 0.0,
              interval="1ms", seed: int = 0, warmup: int | None = None, measure: int = 50,
              partition_rounds: int = 0, partition_start: int = 1, gpus: int = 256,
              backend: str | None = None) -> StalenessResult:
    """Every node updates its state every round and gossips its whole view (merged by
    generation); return the distribution of the age of each node's view of the others.

    Parameters as in :func:`simulate`; ``warmup`` rounds (default :func:`default_warmup`)
    run before ``measure`` rounds are sampled. Messages carry the full view,
    ``message_size(entries=nodes, gpus=gpus)`` bytes. No crashes or churn in this mode.
    Memory: 8 n^2 bytes; ``nodes`` <= :data:`MAX_STALENESS_NODES`.
    """
    p = _common(nodes, fanout, mode, loss, interval, seed, partition_rounds, partition_start)
    n = check_int("nodes", p["nodes"], 2, MAX_STALENESS_NODES)
    warmup = default_warmup(n, p["fanout"], p["loss"]) if warmup is None else \
        check_int("warmup", warmup, 0, MAX_ROUNDS)
    measure = check_int("measure", measure, 1, MAX_ROUNDS)
    message_bytes = message_size(entries=n, gpus=gpus)
    name, module = kernel(backend)
    run = module.run_staleness

    start = time.perf_counter()
    histogram = np.zeros(warmup + measure + 2, dtype=np.int64)
    messages = run(n, p["fanout"], MODES[p["mode"]], threshold(p["loss"]), partition_start,
                   partition_start + p["partition_rounds"], warmup, measure, p["seed"], histogram)
    interval_s = p["interval_ns"] / 1e9
    histogram = np.trim_zeros(histogram, "b")
    histogram.flags.writeable = False
    return StalenessResult(
        nodes=n, fanout=p["fanout"], mode=p["mode"], loss=p["loss"], interval_s=interval_s,
        seed=p["seed"], backend=name, warmup=warmup, measure=measure, messages=int(messages),
        message_bytes=message_bytes,
        bytes_per_node_per_s=messages * message_bytes / (n * (warmup + measure) * interval_s),
        wall_s=time.perf_counter() - start, histogram=histogram)
