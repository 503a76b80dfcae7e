"""Gossip dissemination simulator: parity of the two backends, invariants, bad input.

Expected values here come from the model's definition (messages per round, partition
halves, fanout = n - 1 reaching everyone at once), never from a previous run.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magnum_lib.base.validate import ParameterError
from magnum_lib.gossip import dissemination_ref as ref
from magnum_lib.gossip.dissemination import (
    MAX_STALENESS_NODES,
    mean_coverage,
    message_size,
    simulate,
    simulate_seeds,
    staleness,
)
from tests.conftest import import_compiled

MODES = ("push", "pull", "pushpull")

# Every feature, each mode: (nodes, fanout, extra parameters).
CASES = [
    (300, 1, {}),
    (300, 3, {"loss": 0.25}),
    (257, 2, {"partition_rounds": 6, "partition_start": 2}),
    (300, 1, {"crash_fraction": 0.2, "crash_at": 3, "crashes": {5: 1, 7: 0}}),
    (300, 2, {"churn": 0.02, "churn_downtime": 4, "rounds": 30}),
    (200, 1, {"loss": 0.1, "churn": 0.01, "crash_fraction": 0.05, "partition_rounds": 4,
              "source": 17, "quorum": 0.9}),
    (9, 8, {}),  # fanout n - 1: every other node, every round
]


@pytest.fixture(scope="module")
def compiled():
    return import_compiled("magnum_lib.gossip._dissemination")


def _same(a, b):
    assert (a.rounds, a.rounds_to_all, a.rounds_to_quorum, a.messages, a.stopped) == \
        (b.rounds, b.rounds_to_all, b.rounds_to_quorum, b.messages, b.stopped)
    for name in ("coverage", "informed", "live", "infection_round"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("nodes, fanout, extra", CASES)
def test_rumor_parity(compiled, mode, nodes, fanout, extra):
    runs = [simulate(nodes, fanout, mode, seed=11, backend=b, **extra) for b in ("compiled", "python")]
    assert runs[0].backend == "compiled" and runs[1].backend == "python"
    _same(*runs)


@settings(max_examples=30, deadline=None)
@given(nodes=st.integers(2, 60), fanout=st.integers(1, 5), mode=st.sampled_from(MODES),
       loss=st.sampled_from([0.0, 0.5]), churn=st.sampled_from([0.0, 0.05]),
       crash_fraction=st.sampled_from([0.0, 0.3]), partition=st.integers(0, 6),
       rounds=st.sampled_from([None, 15]), seed=st.integers(0, 2**64 - 1))
def test_rumor_parity_property(nodes, fanout, mode, loss, churn, crash_fraction, partition,
                               rounds, seed):
    import_compiled("magnum_lib.gossip._dissemination")
    kw = dict(nodes=nodes, fanout=min(fanout, nodes - 1), mode=mode, loss=loss, churn=churn,
              churn_downtime=2, crash_fraction=crash_fraction, partition_rounds=partition,
              rounds=rounds, max_rounds=200, seed=seed)
    _same(simulate(backend="compiled", **kw), simulate(backend="python", **kw))


@pytest.mark.parametrize("mode", MODES)
def test_staleness_parity(compiled, mode):
    kw = dict(nodes=60, fanout=2, mode=mode, loss=0.1, partition_rounds=5, partition_start=3,
              warmup=8, measure=10, seed=4)
    a, b = (staleness(backend=name, **kw) for name in ("compiled", "python"))
    assert a.messages == b.messages
    np.testing.assert_array_equal(a.histogram, b.histogram)


# -- the random stream ------------------------------------------------------------------

def test_splitmix64_matches_published_outputs():
    # First outputs of SplitMix64 seeded with 0 (Vigna's splitmix64.c reference).
    rng = ref.SplitMix64(0)
    assert [rng.next() for _ in range(3)] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4,
                                              0x06C45D188009454F]


def test_peers_uniform_distinct_never_self():
    rng, n, u = ref.SplitMix64(5), 11, 4
    counts = np.zeros(n, dtype=int)
    for _ in range(4000):
        peers = ref.pick_peers(rng, u, n, 3)
        assert len(set(peers)) == 3 and u not in peers
        counts[peers] += 1
    others = np.delete(counts, u)
    expected = 4000 * 3 / (n - 1)
    # chi-square with 9 degrees of freedom; the 0.999 quantile is 27.9.
    assert counts[u] == 0 and ((others - expected) ** 2 / expected).sum() < 27.9


def test_chance_threshold_is_the_probability():
    rng = ref.SplitMix64(9)
    hits = sum(rng.chance(round(0.3 * 2**53)) for _ in range(20000))
    assert abs(hits / 20000 - 0.3) < 4 * (0.3 * 0.7 / 20000) ** 0.5


# -- invariants -------------------------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(nodes=st.integers(2, 120), fanout=st.integers(1, 4), mode=st.sampled_from(MODES),
       loss=st.sampled_from([0.0, 0.3, 0.7]), seed=st.integers(0, 2**64 - 1))
def test_coverage_invariants(nodes, fanout, mode, loss, seed):
    fanout = min(fanout, nodes - 1)
    r = simulate(nodes, fanout, mode, loss=loss, seed=seed, max_rounds=400)
    c = r.coverage
    assert c[0] == 1 / nodes and np.all((c >= 0) & (c <= 1))
    assert np.all(np.diff(r.informed) >= 0)  # no churn, no crash: nobody forgets
    assert np.all(r.live == nodes)
    assert r.rounds_to_all == r.rounds and c[-1] == 1.0  # loss < 1: it gets there
    inf = r.infection_round
    assert inf[0] == 0 and np.all((inf >= 1) == (np.arange(nodes) != 0))
    # The informed count at round t is the number of nodes infected by t.
    assert all(r.informed[t] == np.count_nonzero(inf <= t) for t in range(r.rounds + 1))
    assert r.rounds_to_quorum == np.flatnonzero(r.informed > nodes / 2)[0]


@pytest.mark.parametrize("mode", MODES)
def test_partition_blocks_crossing_until_it_heals(mode):
    n, start, rounds = 400, 1, 12  # split from the first round: the far half starts empty
    r = simulate(n, 2, mode, partition_rounds=rounds, partition_start=start, seed=2)
    far = r.infection_round[n // 2:]
    assert np.all(far >= start + rounds)  # nothing crossed while split
    assert np.all(r.coverage[: start + rounds] <= 0.5)
    assert r.rounds_to_all is not None  # healed: everyone gets it


def test_crashed_nodes_neither_learn_nor_count():
    n = 500
    r = simulate(n, 2, "pushpull", crash_fraction=0.2, crash_at=1, crashes={3: 0}, seed=5)
    assert r.live[0] == n - 1 and np.all(r.live[1:] == n - 1 - 100)
    assert r.infection_round[3] == -1
    assert np.count_nonzero(r.infection_round == -1) == 101
    assert r.coverage[-1] == 1.0


def test_source_crashed_means_the_rumor_dies():
    r = simulate(100, 2, "pushpull", crashes={0: 0}, seed=1)
    assert (r.rounds_to_all, r.rounds_to_quorum, r.stopped) == (None, None, "rumor died")


def test_churn_rejoining_nodes_forget():
    r = simulate(400, 2, "push", churn=0.05, churn_downtime=3, rounds=40, seed=8)
    assert r.rounds == 40 and r.coverage.size == 41
    assert r.live.min() < 400 and np.all((r.coverage >= 0) & (r.coverage <= 1))
    # Churned nodes come back empty, so some informed count drops somewhere.
    assert np.any(np.diff(r.informed) < 0)


def test_messages_and_bandwidth_follow_the_protocol():
    n, k = 300, 3
    push = simulate(n, k, "push", seed=1)
    assert push.messages == n * k * push.rounds
    assert push.bytes_per_node_per_s == pytest.approx(k * message_size() / 1e-3)
    pull = simulate(n, k, "pull", interval="200ms", seed=1)
    assert pull.messages == 2 * n * k * pull.rounds  # every request answered
    assert pull.bytes_per_node_per_s == pytest.approx(2 * k * 88 / 0.2)
    lossy = simulate(n, k, "pull", loss=0.5, seed=1)
    assert n * k * lossy.rounds < lossy.messages < 2 * n * k * lossy.rounds


def test_message_size_model():
    assert message_size() == 28 + 16 + 4 + 8 + 32
    assert message_size(entries=10, gpus=8, pending_jobs=2) == 44 + 10 * (12 + 1 + 24)


def test_quorum_full_equals_all_and_time_scales_with_interval():
    a = simulate(500, 1, seed=3, quorum=1.0, interval=0.2)
    assert a.rounds_to_quorum == a.rounds_to_all
    assert a.time_to_all_s == pytest.approx(0.2 * a.rounds_to_all)
    d = a.to_dict(per_node=True)
    assert d["coverage"][-1] == 1.0 and len(d["infection_round"]) == 500


def test_max_rounds_bound_reports_never():
    r = simulate(500, 1, loss=0.99, max_rounds=30, seed=0)
    assert (r.rounds, r.rounds_to_all, r.stopped) == (30, None, "max_rounds")


def test_same_seed_same_result_other_seed_differs():
    a, b, c = simulate_seeds([4, 4, 5], nodes=300, fanout=2, loss=0.1)
    _same(a, b)
    assert not np.array_equal(a.infection_round, c.infection_round)


def test_mean_coverage_pads_with_the_final_value():
    runs = simulate_seeds(range(3), nodes=100)
    m = mean_coverage(runs)
    assert m.size == max(r.coverage.size for r in runs) and m[-1] == 1.0


def test_staleness_full_fanout_is_one_round_old():
    # With fanout n - 1 every node hears every other node's update in the round it is made.
    n, measure = 12, 5
    s = staleness(n, n - 1, "push", warmup=2, measure=measure)
    assert s.histogram.sum() == n * (n - 1) * measure
    assert s.quantiles()["rounds"] == {"mean": 1.0, "p50": 1, "p90": 1, "p99": 1, "max": 1}


def test_staleness_distribution_shape():
    s = staleness(150, 1, "push", seed=2, interval="200ms")
    q = s.quantiles()
    assert s.histogram[0] == 0 and s.histogram.sum() == 150 * 149 * s.measure
    assert 1 <= q["rounds"]["p50"] <= q["rounds"]["p90"] <= q["rounds"]["p99"] <= q["rounds"]["max"]
    assert q["seconds"]["p50"] == pytest.approx(0.2 * q["rounds"]["p50"])
    # Ages stay bounded at steady state: well under the warmup the run took.
    assert q["rounds"]["max"] < s.warmup
    assert s.message_bytes == message_size(entries=150)
    assert s.to_dict()["age"] == q


# -- bad input ----------------------------------------------------------------------------

@pytest.mark.parametrize("params, name", [
    ({"nodes": 1}, "nodes"),
    ({"nodes": 10.5}, "nodes"),
    ({"nodes": 10, "fanout": 10}, "fanout"),
    ({"nodes": 10, "fanout": 0}, "fanout"),
    ({"mode": "shout"}, "mode"),
    ({"loss": 1.0}, "loss"),
    ({"loss": -0.1}, "loss"),
    ({"interval": 0}, "interval"),
    ({"interval": "-1ms"}, "interval"),
    ({"interval": "soon"}, "interval"),
    ({"seed": -1}, "seed"),
    ({"source": 1000}, "source"),
    ({"quorum": 0}, "quorum"),
    ({"quorum": 1.5}, "quorum"),
    ({"partition_rounds": -1}, "partition_rounds"),
    ({"partition_start": 0}, "partition_start"),
    ({"crash_fraction": 1.0}, "crash_fraction"),
    ({"crash_at": 0}, "crash_at"),
    ({"crashes": {1000: 1}}, "crashes node"),
    ({"churn": 2}, "churn"),
    ({"churn_downtime": 0}, "churn_downtime"),
    ({"rounds": 0}, "rounds"),
    ({"max_rounds": 0}, "max_rounds"),
    ({"message_bytes": 0}, "message_bytes"),
    ({"backend": "gpu"}, "backend"),
])
def test_bad_input_names_the_field(params, name):
    with pytest.raises(ParameterError) as info:
        simulate(**params)
    assert info.value.name == name


def test_staleness_bad_input():
    with pytest.raises(ParameterError, match="nodes"):
        staleness(MAX_STALENESS_NODES + 1)
    with pytest.raises(ParameterError, match="measure"):
        staleness(10, measure=0)
    with pytest.raises(ParameterError, match="fanout"):
        staleness(10, fanout=10)
