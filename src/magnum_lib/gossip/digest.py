"""The global planner's digest: one Bloom filter per predicate, rebuilt every 10 ms.

The article has the planner receive "a compressed Bloom filter" of the nodes' states every
10 ms. Here a digest holds, for each device type, a filter of the nodes that have at least
one free device of that type ("nodes with a free H100"). The planner asks "is node j in
it?" and gets two kinds of wrong answers:

* Bloom false positives: ``j`` was busy when the digest was built, yet its bits are set;
  at most about ``(1 - exp(-k n / m))**k`` of the busy nodes (no false negatives, ever);
* staleness: the node changed state since the build, so the digest is now wrong in either
  direction. This grows with the rebuild period and does not shrink with more bits.

:func:`digest_over_time` measures both on a simulated fleet whose devices flip between
busy and free as independent two-state Markov chains in continuous time (mean busy spell
``mean_busy``, stationary busy fraction ``utilization``), sampled every ``tick`` with the
exact transition probabilities, so :func:`staleness_theory` gives the expected staleness
disagreement in closed form.

Sizes: a digest costs ``24 + ceil(m/8)`` bytes per predicate (about 1.2 bytes per free
node at 1 % false positives). The alternatives it is compared with are the raw list of
free node ids (4 bytes each: int32 node ids) and a bitmap over the nodes of the type
(``ceil(n_type / 8)`` bytes); the Bloom filter wins over the bitmap only when fewer than
about 1 in 10 of the nodes are free.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from magnum_lib.cluster import Cluster, build_cluster
from magnum_lib.gossip.bloom import BloomFilter, expected_fp_rate, optimal_params
from magnum_lib.units import parse_duration

__all__ = ["Digest", "DigestRun", "build_digest", "free_nodes_by_type", "digest_over_time",
           "staleness_theory", "NODE_ID_BYTES"]

NODE_ID_BYTES = 4  # a raw list sends int32 node ids


@dataclass(frozen=True)
class Digest:
    """One digest: a filter per predicate (device type key) and its member counts."""

    filters: Mapping[str, BloomFilter]
    counts: Mapping[str, int]
    time_ns: int = 0

    def contains(self, predicate: str, node_ids) -> np.ndarray:
        """Planner query: may each node in ``node_ids`` satisfy ``predicate``?"""
        if predicate not in self.filters:
            raise KeyError(f"predicate {predicate!r} not in digest; it has {sorted(self.filters)}")
        return self.filters[predicate].contains_many(np.asarray(node_ids))

    @property
    def nbytes(self) -> int:
        """Wire bytes of all the filters (headers included)."""
        return sum(f.wire_nbytes for f in self.filters.values())

    @property
    def raw_list_nbytes(self) -> int:
        """Bytes of the same information as lists of int32 node ids."""
        return NODE_ID_BYTES * sum(self.counts.values())

    def to_dict(self) -> dict:
        return {"time_ns": self.time_ns, "nbytes": self.nbytes, "raw_list_nbytes": self.raw_list_nbytes,
                "counts": dict(self.counts), "filters": {p: f.to_dict() for p, f in self.filters.items()}}


def _size(m, k, fp_rate) -> tuple[int, int] | None:
    if (m is None) != (k is None):
        raise ValueError(f"give both m and k or neither, got m={m!r}, k={k!r}")
    if m is None:
        if isinstance(fp_rate, bool) or not isinstance(fp_rate, numbers.Real) or not 0 < fp_rate < 1:
            raise ValueError(f"fp_rate must be a number in (0, 1), got {fp_rate!r}")
        return None
    BloomFilter(m, k)  # validates m and k
    return int(m), int(k)


def build_digest(free_by_type: Mapping[str, np.ndarray], *, fp_rate: float = 0.01, m: int | None = None,
                 k: int | None = None, seed: int = 0, time_ns: int = 0) -> Digest:
    """Build one digest.

    Parameters
    ----------
    free_by_type : Mapping[str, array of int]
        Predicate name (e.g. a device type key) -> ids of the nodes satisfying it.
    fp_rate : float
        Target false-positive rate; each filter is sized by
        :func:`magnum_lib.gossip.bloom.optimal_params` for its own member count
        (at least 1). Ignored when ``m`` and ``k`` are given.
    m, k : int, optional
        Fixed shape for every filter (e.g. so successive digests can be OR-ed).
    seed : int
        Hash salt of the filters.
    time_ns : int
        Simulated build time, nanoseconds (kept in the digest).
    """
    if not isinstance(free_by_type, Mapping):
        raise TypeError(f"free_by_type must be a mapping of predicate -> node ids, got {type(free_by_type).__name__}")
    shape = _size(m, k, fp_rate)
    filters, counts = {}, {}
    for name, ids in free_by_type.items():
        ids = np.asarray(ids)
        if ids.ndim != 1:
            raise ValueError(f"free_by_type[{name!r}] must be a 1-d array of node ids, got shape {ids.shape}")
        ids = ids.astype(np.int64, copy=False) if ids.size == 0 else ids
        mm, kk = shape or optimal_params(max(int(ids.size), 1), fp_rate)
        f = BloomFilter(mm, kk, seed)
        f.add_many(ids)
        filters[name], counts[name] = f, int(ids.size)
    return Digest(filters=filters, counts=counts, time_ns=int(time_ns))


def free_nodes_by_type(node_type: np.ndarray, node_free: np.ndarray, type_keys) -> dict[str, np.ndarray]:
    """``{type key: ids of nodes of that type with a free device}`` from plain arrays.

    ``node_type`` holds type codes into ``type_keys``; ``node_free`` free-device counts
    (or booleans) per node.
    """
    node_type, node_free = np.asarray(node_type), np.asarray(node_free)
    if node_type.shape != node_free.shape or node_type.ndim != 1:
        raise ValueError(f"node_type and node_free must be 1-d arrays of one length, got shapes "
                         f"{node_type.shape} and {node_free.shape}")
    if node_type.size and not 0 <= node_type.min() <= node_type.max() < len(type_keys):
        raise ValueError(f"node_type codes must lie in [0, {len(type_keys)}), got "
                         f"[{node_type.min()}, {node_type.max()}]")
    free = node_free > 0
    return {key: np.flatnonzero(free & (node_type == code)) for code, key in enumerate(type_keys)}


def staleness_theory(lag_s, utilization: float, mean_busy_s: float, devices_per_node: int):
    """Probability that "node has a free device" differs between times ``t`` and ``t + lag``.

    Devices are independent stationary two-state chains (busy fraction ``u``, correlation
    time ``Tc = mean_busy * (1 - u)``); a node is not free when all ``d`` devices are busy:
    ``D(lag) = 2 u**d - 2 (u (u + (1-u) exp(-lag/Tc)))**d``.
    """
    u, d = utilization, devices_per_node
    tc = mean_busy_s * (1.0 - u)
    p_bb = u + (1.0 - u) * np.exp(-np.asarray(lag_s, dtype=float) / tc)
    return 2.0 * u**d - 2.0 * (u * p_bb) ** d


@dataclass(frozen=True)
class DigestRun:
    """What :func:`digest_over_time` measured. Rates are per planner query (one query =
    one node asked about its own type's predicate at one tick).

    ``fp_rate_at_build``: Bloom false positives among the non-member queries at build
    time, beside ``fp_theory`` (the formula, averaged over builds and predicates with the
    same weights). ``error_at_build``: wrong answers among all queries at build time (only
    Bloom false positives). ``error_at_query``: wrong answers among all queries at every
    tick, split into ``false_positive_at_query`` and ``false_negative_at_query`` (the
    latter only from staleness). ``staleness_error = error_at_query - error_at_build``.
    ``stale_disagreement``: truth at query differs from truth at build, beside
    ``stale_theory`` (:func:`staleness_theory` averaged over the lags seen).
    """

    period_ns: int
    tick_ns: int
    n_nodes: int
    n_builds: int
    n_queries: int
    fp_rate_at_build: float
    fp_theory: float
    error_at_build: float
    error_at_query: float
    false_positive_at_query: float
    false_negative_at_query: float
    staleness_error: float
    stale_disagreement: float
    stale_theory: float
    digest_nbytes_mean: float
    raw_list_nbytes_mean: float
    bitmap_nbytes: int
    build_time_s: np.ndarray = field(repr=False)
    free_nodes: np.ndarray = field(repr=False)
    digest_nbytes: np.ndarray = field(repr=False)
    fp_at_build: np.ndarray = field(repr=False)
    node_stale_fraction: np.ndarray = field(repr=False)

    def to_dict(self) -> dict:
        out = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            out[name] = value.tolist() if isinstance(value, np.ndarray) else value
        return out


def _check_fraction(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value < 1:
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
    return float(value)


def digest_over_time(cluster: Cluster | None = None, *, duration="1s", period="10ms", tick="1ms",
                     utilization: float = 0.95, mean_busy="500ms", fp_rate: float = 0.01,
                     m: int | None = None, k: int | None = None, seed: int = 0) -> DigestRun:
    """Simulate free/busy devices, rebuild the digest every ``period``, score planner queries.

    Parameters
    ----------
    cluster : Cluster, optional
        Topology (default :func:`magnum_lib.cluster.build_cluster`: 960 nodes of 8 devices).
    duration, period, tick : str or float
        Simulated time, rebuild period and query/state-change step ("1s", "10ms", "1ms";
        numbers are seconds). ``period`` must be a whole number of ticks.
    utilization : float
        Stationary fraction of busy devices, in (0, 1).
    mean_busy : str or float
        Mean busy spell of a device; the mean free spell follows from ``utilization``.
    fp_rate, m, k :
        Filter sizing, as in :func:`build_digest`.
    seed : int
        Seeds the state process (one ``numpy.random.Generator``) and salts the filters.
    """
    cluster = build_cluster() if cluster is None else cluster
    duration_ns, period_ns, tick_ns, mean_busy_ns, u = _check_run_args(
        cluster, duration, period, tick, utilization, mean_busy, fp_rate, m, k, seed)
    rng = np.random.default_rng(seed)
    n_ticks, per = duration_ns // tick_ns, period_ns // tick_ns
    # exact transition probabilities of the continuous chain over one tick
    tc_ns = mean_busy_ns * (1.0 - u)
    q = -math.expm1(-tick_ns / tc_ns)
    p_to_free, p_to_busy = (1.0 - u) * q, u * q
    busy = rng.random(cluster.n_devices) < u  # start in the stationary distribution
    starts = cluster.node_device_offset[:-1]
    tally = _Tally(cluster)
    answer = truth_build = None
    for t in range(n_ticks):
        if t:
            r = rng.random(busy.size)
            busy = np.where(busy, r >= p_to_free, r < p_to_busy)
        free_now = np.add.reduceat(~busy, starts) > 0
        if t % per == 0:
            d = build_digest(free_nodes_by_type(cluster.node_type, free_now, cluster.type_keys),
                             fp_rate=fp_rate, m=m, k=k, seed=seed, time_ns=t * tick_ns)
            answer = tally.build(d, free_now, t * tick_ns)
            truth_build = free_now
        tally.query(answer, truth_build, free_now)
    return tally.result(n_ticks, per, tick_ns, period_ns, u, mean_busy_ns)


def _check_run_args(cluster, duration, period, tick, utilization, mean_busy, fp_rate, m, k, seed):
    """Check :func:`digest_over_time`'s arguments; return duration, period, tick, mean_busy (ns) and utilization."""
    if not isinstance(cluster, Cluster):
        raise TypeError(f"cluster must be a magnum_lib.cluster.Cluster, got {type(cluster).__name__}")
    duration_ns = parse_duration(duration, field="duration")
    period_ns = parse_duration(period, field="period")
    tick_ns = parse_duration(tick, field="tick")
    mean_busy_ns = parse_duration(mean_busy, field="mean_busy")
    for name, value in (("tick", tick_ns), ("period", period_ns), ("mean_busy", mean_busy_ns)):
        if value <= 0:
            raise ValueError(f"{name} must be > 0, got {value} ns")
    if period_ns % tick_ns:
        raise ValueError(f"period must be a whole number of ticks, got period={period_ns} ns, tick={tick_ns} ns")
    if duration_ns < period_ns:
        raise ValueError(f"duration must be at least one period, got duration={duration_ns} ns < period={period_ns} ns")
    u = _check_fraction("utilization", utilization)
    _size(m, k, fp_rate)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    return duration_ns, period_ns, tick_ns, mean_busy_ns, u


class _Tally:
    """The counts :func:`digest_over_time` gathers at every build and every tick's queries."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.type_nodes = [np.flatnonzero(cluster.node_type == c) for c in range(len(cluster.type_keys))]
        self.stale_count = np.zeros(cluster.n_nodes, dtype=np.int64)
        self.n_fp_query = self.n_fn_query = self.n_fp_build = self.n_nonmember_build = 0
        self.fp_theory_weighted = 0.0
        self.build_t: list = []
        self.free_nodes: list = []
        self.nbytes: list = []
        self.fp_build: list = []
        self.raw_nbytes: list = []

    def build(self, d: Digest, free_now: np.ndarray, time_ns: int) -> np.ndarray:
        """Score digest ``d`` built at ``time_ns`` (ns) against ``free_now``; return every node's answer."""
        answer = np.zeros(self.cluster.n_nodes, dtype=bool)
        for code, key in enumerate(self.cluster.type_keys):
            nodes = self.type_nodes[code]
            answer[nodes] = d.contains(key, nodes)
            f, members = d.filters[key], d.counts[key]
            self.fp_theory_weighted += (nodes.size - members) * expected_fp_rate(members, f.m, f.k)
        fps = int(np.count_nonzero(answer & ~free_now))
        self.n_fp_build += fps
        self.n_nonmember_build += int(np.count_nonzero(~free_now))
        self.build_t.append(time_ns / 1e9)
        self.free_nodes.append(int(free_now.sum()))
        self.nbytes.append(d.nbytes)
        self.raw_nbytes.append(d.raw_list_nbytes)
        self.fp_build.append(fps / max(1, int(np.count_nonzero(~free_now))))
        return answer

    def query(self, answer, truth_build, free_now) -> None:
        """Count one tick's wrong answers (per node) and the nodes whose truth moved since the build."""
        self.n_fp_query += int(np.count_nonzero(answer & ~free_now))
        self.n_fn_query += int(np.count_nonzero(~answer & free_now))
        self.stale_count += truth_build != free_now

    def result(self, n_ticks, per, tick_ns, period_ns, u, mean_busy_ns) -> DigestRun:
        """The rates over ``n_ticks`` ticks of ``tick_ns`` (ns), builds every ``per`` ticks."""
        n_nodes, n_builds = self.cluster.n_nodes, len(self.build_t)
        n_queries = n_nodes * n_ticks
        error_at_build = self.n_fp_build / (n_nodes * n_builds)
        error_at_query = (self.n_fp_query + self.n_fn_query) / n_queries
        # queries sit at lags 0, 1, ..., per-1 ticks after a build (the last period may be cut short)
        lags = (np.arange(n_ticks) % per) * tick_ns / 1e9
        d_per_node = int(np.max(np.diff(self.cluster.node_device_offset)))
        stale_theory = float(np.mean(staleness_theory(lags, u, mean_busy_ns / 1e9, d_per_node)))
        bitmap = sum((tn.size + 7) // 8 for tn in self.type_nodes)
        return DigestRun(
            period_ns=int(period_ns), tick_ns=int(tick_ns), n_nodes=n_nodes, n_builds=n_builds,
            n_queries=int(n_queries),
            fp_rate_at_build=self.n_fp_build / max(1, self.n_nonmember_build),
            fp_theory=self.fp_theory_weighted / max(1, self.n_nonmember_build),
            error_at_build=error_at_build, error_at_query=error_at_query,
            false_positive_at_query=self.n_fp_query / n_queries,
            false_negative_at_query=self.n_fn_query / n_queries,
            staleness_error=error_at_query - error_at_build,
            stale_disagreement=float(self.stale_count.sum() / n_queries), stale_theory=stale_theory,
            digest_nbytes_mean=float(np.mean(self.nbytes)), raw_list_nbytes_mean=float(np.mean(self.raw_nbytes)),
            bitmap_nbytes=int(bitmap), build_time_s=np.array(self.build_t), free_nodes=np.array(self.free_nodes),
            digest_nbytes=np.array(self.nbytes), fp_at_build=np.array(self.fp_build),
            node_stale_fraction=self.stale_count / n_ticks,
        )
