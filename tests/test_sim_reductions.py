"""Reductions: with the right knobs the whole system becomes a model with a known answer."""
import numpy as np
import pytest

import magnum_lib
from magnum_lib.engine import theory
from magnum_lib.engine.metrics import batch_means
from magnum_lib.gossip.dissemination import simulate as disseminate
from magnum_lib.node.balance import theory_time_in_system
from magnum_lib.regional.contention import expected_lease_failure_rate
from magnum_lib.sim import RequestClass, contract, make_config
from magnum_lib.sim.model import build_region, core_module, run_region

# Runs the compiled kernels through the default backend: part of `make test-debug`.
pytestmark = pytest.mark.kernel

H100_BF16 = 989.4e12
MS = 1e-3
# The reference backend is ~30x slower: it runs the same checks on 5x fewer requests (the
# tolerances are in standard errors, so they widen by themselves); parity tests make sure
# both backends give the same numbers on the same inputs.
SCALE = 0.2 if magnum_lib.backend() == "python" else 1.0


def _plain(**kw):
    """One class of 1 ms mean exponential service on H100s, Poisson arrivals, no overheads."""
    cls = (RequestClass("x", flops=H100_BF16 * 0.4 * MS, bytes_moved=0.0, sla_s=1.0, priority=1, share=1.0),)
    base = dict(mix=(("h100_sxm", 1.0),), classes=cls, service="exp", training_fraction=0.0,
                diurnal_amplitude=0.0, burst_factor=1.0, rtt_s=0.0, c_round_s=0.0, c_decision_s=0.0,
                c_node_s=0.0, c_validate_s=0.0, round_s=1e-7, preempt="none", quantum_s=0.0, hedge_factor=0.0,
                digest_interval_s=0.0, cells_per_region=1, schedulers=1, piggyback=False)
    base.update(kw)
    return make_config(None, **base)


def _waits(run, warmup=0.2):
    arrays = run.arrays
    done = arrays["status"] == contract.ST_DONE
    k = int(warmup * len(done))
    dl = (arrays["start"] - arrays["arr"])[k:][done[k:]] / 1e9
    tis = (arrays["finish"] - arrays["arr"])[k:][done[k:]] / 1e9
    return dl, tis


@pytest.mark.parametrize("c, load", [(1, 0.7), (4, 0.8), (16, 0.9)])
def test_one_node_group_zero_rtt_fresh_view_is_mmc(c, load):
    lam = load * c * 1000.0
    cfg = _plain(nodes_per_cell=1, devices_per_node=c, rate=lam, duration_s=SCALE * min(40.0, 80_000 / lam),
                 view="fresh", node_queue=10**6, seed=c)
    run = run_region(build_region(cfg))
    wait, tis = _waits(run)
    m, se = batch_means(wait, 20)
    expect = theory.mmc_wait_mean(c, lam, 1000.0)
    assert abs(m - expect) < 4 * se + 0.02 * expect, (m, se, expect)
    m2, se2 = batch_means(tis, 20)
    assert abs(m2 - theory.mmc_time_in_system_mean(c, lam, 1000.0)) < 4 * se2 + 0.01 * m2


@pytest.mark.parametrize("policy, d", [("random", 1), ("two-choices", 2)])
def test_random_and_two_choices_give_the_supermarket_model(policy, d):
    n, load = 400, 0.9
    # at least 0.8 s: M/M/1 at 0.9 relaxes from empty in ~1/(mu (1 - sqrt(rho))^2) ~ 0.4 s,
    # and a shorter run's mean is biased low by more than its standard error
    cfg = _plain(nodes_per_cell=n, devices_per_node=1, rate=load * n * 1000.0, duration_s=max(0.8, 1.5 * SCALE),
                 view="fresh", node_queue=10**6, policy=policy, seed=11)
    run = run_region(build_region(cfg))
    _, tis = _waits(run, warmup=0.3)
    expect = theory_time_in_system(load, d) * MS  # mean field, N -> infinity
    m, se = batch_means(tis, 20)
    # finite N and two draws that may coincide put two-choices a little above mean field
    assert abs(m - expect) < 4 * se + 0.06 * expect, (m, se, expect)
    if d == 1:
        assert abs(m - 1.0 / (1000.0 - load * 1000.0)) < 4 * se + 0.03 * m


@pytest.mark.parametrize("nodes, schedulers", [(100, 10), (1000, 40)])
def test_concurrent_schedulers_on_a_stale_view_hit_the_birthday_bound(nodes, schedulers):
    """S schedulers each place one lease per round on the same (fresh at round start) view
    of N empty one-device nodes: refusals = S - distinct nodes, the contention formula."""
    cfg = _plain(nodes_per_cell=nodes, devices_per_node=1, rate=2000.0, duration_s=10.0 * SCALE, view="round",
                 round_s=1.0, node_queue=0, schedulers=schedulers, policy="random", max_attempts=1, seed=7)
    run = build_region(cfg)
    arrays = run.arrays
    R = (len(arrays["arr"]) // schedulers) * schedulers
    arrays["arr"][:] = (np.arange(len(arrays["arr"])) // schedulers) * 10**9 + 5 * 10**8
    arrays["arr"][R:] = arrays["arr"][R - 1]  # the leftover requests join the last full round... drop them:
    params = list(run.params)
    params[contract.PARAMS.index("n_req")] = R
    core = core_module().Core(arrays, np.array(params, dtype=np.int64))
    core.advance(2**62)
    cnt = arrays["cnt"]
    rate = cnt[contract.K_REFUSED] / cnt[contract.K_LEASES]
    expect = expected_lease_failure_rate(nodes, schedulers)
    se = np.sqrt(expect * (1 - expect) / cnt[contract.K_LEASES])
    assert cnt[contract.K_LEASES] == R
    assert abs(rate - expect) < 4 * se, (rate, expect, se)


def test_gossip_staleness_agrees_with_the_dissemination_simulator():
    n = 500
    cfg = _plain(nodes_per_cell=n, devices_per_node=1, rate=n * 500.0 * SCALE, duration_s=1.0, view="gossip",
                 fanout=2, gossip_loss=0.05, node_queue=0, seed=3, max_attempts=1000)
    run = run_region(build_region(cfg))
    cnt = run.arrays["cnt"]
    age_ms = cnt[contract.K_VIEW_AGE_NS] / cnt[contract.K_VIEW_SAMPLES] / 1e6
    # An independent run of the dissemination layer alone, same fan-out and loss.
    g = disseminate(nodes=n, fanout=2, mode="pushpull", loss=0.05, seed=12345)
    rounds = g.infection_round[1:]
    m = run.params[contract.PARAMS.index("ring_m")]
    # Sampled just before and just after every 1 ms tick, an entry's age averages its lag plus
    # half a tick over the interval.
    expect_ms = 1.0 * (0.5 + np.minimum(rounds, m - 1).mean())
    assert abs(age_ms - expect_ms) / expect_ms < 0.08, (age_ms, expect_ms)


def test_digest_marks_full_nodes_and_false_positives_at_the_bloom_rate():
    from magnum_lib.gossip.bloom import expected_fp_rate, optimal_params
    from magnum_lib.sim.model import _digest

    cfg = _plain(nodes_per_cell=5000, devices_per_node=2, rate=1000.0, duration_s=0.01, view="gossip",
                 bloom_fp=0.05, seed=1)
    run = build_region(cfg)
    arrays = run.arrays
    rng = np.random.default_rng(0)
    full = rng.random(5000) < 0.4
    arrays["run"][:] = np.where(full, 2, 0)
    arrays["view_busy"][:] = 0
    _digest(run, 10**7)
    looks_full = arrays["view_busy"] >= arrays["node_dev"] - arrays["view_train"]
    assert looks_full[full].all(), "no false negatives"
    fp = looks_full[~full].mean()
    m, k = optimal_params(int(full.sum()), 0.05)
    expect = expected_fp_rate(int(full.sum()), m, k)
    assert abs(fp - expect) < 4 * np.sqrt(expect / (~full).sum()) + 0.005, (fp, expect)
    assert fp > 0, "false positives are part of the digest"
