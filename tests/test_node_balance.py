"""Load balancing across nodes: supermarket theory, herding, batch sampling, placement, parity.

Expected figures come from closed forms (Mitzenmacher 1996; Sparrow, SOSP 2013; the
balls-into-bins bounds), invariants, or the other backend -- never from this code's output.
"""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magnum_lib import backend
from magnum_lib.base.validate import ParameterError
from magnum_lib.node import balance_ref
from magnum_lib.node.balance import (
    balls_into_bins,
    batch_sampling,
    supermarket,
    theory_queue_tail,
    theory_time_in_system,
    theory_zero_wait,
)
from tests.conftest import import_compiled

COMPILED = backend() == "compiled"

# ------------------------------------------------------------------ supermarket theory
#
# The published values are for N -> infinity; we use N = 1000 (the issue's minimum), where
# the finite-N bias measured over 12 seeds is below +0.6% on the mean and +0.004 on the tail.
# Tolerances follow from the seed-to-seed standard deviation (SD) of the estimates at
# N = 1000, measured once over 12 seeds: at load 0.9, d = 2 the mean time in system has
# SD 0.54% of the mean and each tail fraction SD 0.0045 with 600k jobs; both shrink like
# 1/sqrt(jobs). d = 1 (independent M/M/1 queues at 0.9) mixes slowly: SD 1.3% at 3M jobs.
# Job counts are chosen so the issue's tolerance is >= 4 SD (after the small bias).
#
# The python reference runs about 100x slower, so under MAGNUM_PUREPYTHON=1 only the case
# marked python-sized runs (60k jobs: SD 0.71%, so 3% is over 4 SD). The other
# cases still cover the reference: test_parity_* proves it returns bit-identical results to
# the compiled kernel on the same inputs.

MEAN_CASES = [  # (choices, load, theory from the issue, tolerance, jobs compiled, jobs python)
    (2, 0.5, 1.2657, 0.03, 1_000_000, 60_000),  # python: SD 0.71% at 60k jobs
    (2, 0.7, 1.6145, 0.03, 1_000_000, None),
    (2, 0.8, 1.9474, 0.03, 1_000_000, None),
    (2, 0.9, 2.6141, 0.03, 3_000_000, None),
    (3, 0.9, 2.0279, 0.03, 1_000_000, None),
    (1, 0.9, 10.0, 0.05, 5_000_000, None),  # M/M/1: SD ~1.0% at 5M jobs
]


@functools.cache
def _run(choices, load, jobs):
    policy = "random" if choices == 1 else "power_of_d"
    return supermarket(servers=1000, load=load, choices=choices, policy=policy, jobs=jobs, seed=11)


def _jobs(compiled_jobs, python_jobs):
    jobs = compiled_jobs if COMPILED else python_jobs
    if jobs is None:
        pytest.skip("compiled-sized theory check (the reference is covered by the parity tests)")
    return jobs


@pytest.mark.parametrize("choices, load, expected, tol, jobs_c, jobs_py", MEAN_CASES)
def test_mean_time_in_system_matches_mean_field_theory(choices, load, expected, tol, jobs_c, jobs_py):
    jobs = _jobs(jobs_c, jobs_py)
    r = _run(choices, load, jobs)
    assert theory_time_in_system(load, choices) == pytest.approx(expected, abs=1e-4)
    assert r.time_in_system_mean == pytest.approx(expected, rel=tol)
    # Utilization of a work-conserving system is the load (SD of tail[0] <= 0.003 here).
    assert r.queue_tail[0] == pytest.approx(load, abs=0.01)
    # Little's law per server: mean jobs per server = sum_i P(>= i jobs) = lambda x W.
    if r.max_queue <= len(r.queue_tail):
        assert sum(r.queue_tail) == pytest.approx(load * r.time_in_system_mean, rel=0.02)


def test_queue_tail_at_load_09_matches_doubly_exponential_decay():
    # lambda^((d^i - 1)/(d - 1)) = 0.729, 0.478, 0.206 for i = 2, 3, 4: within 0.01. With 3M jobs
    # the SD of each fraction is about 0.0045 x sqrt(0.6/3) = 0.002.
    jobs = _jobs(3_000_000, None)
    r = supermarket(servers=1000, load=0.9, choices=2, jobs=jobs, seed=5)
    assert theory_queue_tail(0.9, 2)[1:4] == pytest.approx((0.729, 0.478, 0.206), abs=5e-4)
    for i, expected in ((2, 0.729), (3, 0.478), (4, 0.206)):
        assert r.queue_tail[i - 1] == pytest.approx(expected, abs=0.01)


def test_queue_tail_at_load_05_python_sized():
    # d = 2, load 0.5: s_2 = 0.5^3 = 0.125, s_3 = 0.5^7 = 0.0078. With 60k jobs the SD of s_2 is
    # 0.0025 (12 seeds): 0.01 is 4 SD. Runs on both backends (the run is shared with the mean test).
    r = _run(2, 0.5, _jobs(*MEAN_CASES[0][4:]))
    for i, expected in ((1, 0.5), (2, 0.125), (3, 0.5**7)):
        assert r.queue_tail[i - 1] == pytest.approx(expected, abs=0.01)


def test_random_policy_has_geometric_tail_of_mm1():
    # Random placement splits the Poisson stream: independent M/M/1 queues, P(>= i) = lambda^i.
    r = supermarket(servers=1000, load=0.5, policy="random", jobs=60_000 if not COMPILED else 400_000,
                    seed=2)
    for i in range(1, 5):
        assert r.queue_tail[i - 1] == pytest.approx(0.5**i, abs=0.01)


def test_more_choices_never_hurt_much_and_two_beat_one():
    # The "power of two choices": d = 2 cuts the mean at load 0.9 from 10 to 2.61.
    kw = dict(servers=200, load=0.9, jobs=15_000, seed=4)  # held for 20 of 20 seeds tried
    one = supermarket(policy="random", **kw).time_in_system_mean
    two = supermarket(choices=2, **kw).time_in_system_mean
    three = supermarket(choices=3, **kw).time_in_system_mean
    assert three < two < 0.5 * one


def test_zero_wait_of_single_task_jobs_is_one_minus_load_to_the_d():
    # Mean field: the d probed servers are each busy w.p. lambda, so P(some idle) = 1 - lambda^d.
    # At load 0.9 and 1M jobs the SD is about 0.001 and the finite-N bias -0.004 (d = 2). The
    # python-sized run uses load 0.5, where 30k jobs (60 s) cover the M/M/1 relaxation time
    # (about 12 s at 0.5; about 400 s at 0.9, too slow for the reference).
    load, jobs = (0.9, 1_000_000) if COMPILED else (0.5, 30_000)
    for d in (1, 2):
        policy = "random" if d == 1 else "power_of_d"
        r = supermarket(servers=1000, load=load, choices=d, policy=policy, jobs=jobs, seed=6)
        assert r.zero_wait == pytest.approx(r.theory()["zero_wait"], abs=0.02)


def _binomial_se(p: float, trials: int) -> float:
    """Standard error of a success fraction over ``trials`` independent trials."""
    return math.sqrt(p * (1 - p) / trials)


def test_batch_sampling_in_the_dynamic_model_approaches_the_closed_forms():
    # 400k jobs per rule on 1000 servers, 10 seeds (mean, seed-to-seed SD, theory):
    #   random   0.001083  SD 0.000047  theory 0.000977 (binomial SE 0.000049: jobs ~independent)
    #   per-task 0.0595    SD 0.00085   theory 0.0563   (2.3x binomial: correlated queue state)
    #   batch    0.5822    SD 0.0029    theory 0.5881   (3.8x binomial: the idle count drifts)
    # Each tolerance is the closed form's finite-N gap (measured mean - theory, rounded up:
    # collisions, finite N, correlated probes) plus 4 SD, so it is below the value itself:
    # a rate of 0, or half the true one, fails.
    _jobs(1, None)
    trials = 400_000
    r = batch_sampling(model="dynamic", trials=trials, seed=2)
    assert r.servers == 1000 and r.model == "dynamic"
    random_tol = 0.00012 + 4 * _binomial_se(r.random_theory, trials)  # 3.2e-4, a third of 9.8e-4
    assert random_tol < r.random_theory / 2
    assert r.random == pytest.approx(r.random_theory, abs=random_tol)
    assert r.per_task == pytest.approx(r.per_task_theory, abs=0.0035 + 4 * 0.00085)
    assert r.batch == pytest.approx(r.batch_theory, abs=0.006 + 4 * 0.0029)
    assert r.random < r.per_task < r.batch


# ------------------------------------------------------------------ stale view and herding


def test_fresh_view_beats_power_of_two_and_stale_view_herds():
    # Over 20 seeds: fresh mean <= 1.09 s and longest queue <= 7; stale mean >= 39 s, queue >= 155.
    kw = dict(servers=200, load=0.9, jobs=15_000, seed=8, policy="least_loaded_stale")
    fresh = supermarket(refresh=0.005, **kw)  # under one arrival per refresh: join-the-shortest
    stale = supermarket(refresh=20.0, **kw)  # 3,600 arrivals see the same "least loaded" servers
    # Fresh least-loaded is at least as good as the N -> infinity power-of-two value...
    assert fresh.time_in_system_mean < theory_time_in_system(0.9, 2)
    # ... while a 20 s old view herds jobs onto a few servers: worse than random (M/M/1: 10 s).
    assert stale.time_in_system_mean > theory_time_in_system(0.9, 1)
    assert stale.max_queue > 5 * fresh.max_queue


# ------------------------------------------------------------------ invariants (hypothesis)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(servers=st.integers(1, 40), load=st.floats(0.05, 0.95), d=st.integers(1, 6),
       policy=st.sampled_from(["random", "power_of_d", "least_loaded_stale", "batch"]),
       jobs=st.integers(1, 300), seed=st.integers(0, 2**32), refresh=st.floats(0.01, 5.0),
       warmup=st.floats(0.0, 0.9), tasks=st.integers(1, 4))
def test_supermarket_invariants(servers, load, d, policy, jobs, seed, refresh, warmup, tasks):
    d = min(d, servers)
    if policy == "batch":
        tasks = min(tasks, servers // d)
    r = supermarket(servers=servers, load=load, choices=d, policy=policy, jobs=jobs, seed=seed,
                    refresh=refresh, warmup=warmup, tasks=tasks)
    tail = np.array(r.queue_tail)
    assert tail.shape == (10,)
    assert np.all((tail >= 0) & (tail <= 1 + 1e-12))
    assert np.all(np.diff(tail) <= 1e-12)  # P(>= i+1 jobs) <= P(>= i jobs)
    assert r.events == jobs + jobs * tasks  # every job arrives, every task leaves
    assert r.measured_jobs == jobs - int(warmup * jobs)
    assert r.time_in_system.size == r.measured_jobs * tasks
    assert 0 <= r.zero_wait <= 1
    assert r.job_time_mean >= r.time_in_system_mean - 1e-12  # a job waits for its slowest task
    assert np.all(r.time_in_system >= 0)
    assert r.p50 <= r.p99 <= r.time_in_system.max() + 1e-9
    assert r.max_queue >= 1
    # The tail stops at 10 levels, max_queue does not: every level the window saw occupied
    # (tail > 0, a prefix since the tail is non-increasing) is at most the deepest queue.
    assert r.max_queue >= np.count_nonzero(tail)
    if r.max_queue < 10:
        assert tail[r.max_queue] == 0.0  # no server ever held max_queue + 1 jobs


@pytest.mark.parametrize("backend_name", ["compiled", "python"])
def test_max_queue_is_not_capped_at_the_tail_levels(backend_name):
    # One job of 25 tasks on one empty server: all 25 queue there at once, deeper than the
    # 10 tail levels.
    if backend_name == "compiled":
        import_compiled("magnum_lib.node._balance")
    r = supermarket(servers=1, load=0.5, choices=1, policy="random", jobs=1, tasks=25, seed=0,
                    backend=backend_name)
    assert r.max_queue == 25


def test_same_seed_same_result_and_seeds_differ():
    a = supermarket(servers=50, load=0.8, jobs=3000, seed=1)
    b = supermarket(servers=50, load=0.8, jobs=3000, seed=1)
    c = supermarket(servers=50, load=0.8, jobs=3000, seed=2)
    assert np.array_equal(a.time_in_system, b.time_in_system) and a.queue_tail == b.queue_tail
    assert not np.array_equal(a.time_in_system, c.time_in_system)


def test_result_to_dict_and_theory():
    r = supermarket(servers=20, load=0.5, jobs=500, seed=0)
    d = r.to_dict()
    assert {"time_in_system_mean", "queue_tail", "p99", "events", "wall_s"} <= set(d)
    assert isinstance(d["queue_tail"], list) and len(d["queue_tail"]) == 10
    assert r.theory()["time_in_system_mean"] == pytest.approx(1.2657, abs=1e-4)
    with pytest.raises(ValueError, match="least_loaded_stale"):
        supermarket(servers=20, load=0.5, jobs=50, policy="least_loaded_stale").theory()


# ------------------------------------------------------------------ parity


PARITY_CASES = [  # servers, load, policy, choices, tasks, refresh_ns, jobs, warmup, seed
    (50, 0.9, balance_ref.POWER_OF_D, 2, 1, 0, 3000, 500, 7),
    (50, 0.7, balance_ref.RANDOM, 1, 1, 0, 3000, 0, 8),
    (40, 0.8, balance_ref.STALE, 1, 1, 300_000_000, 3000, 100, 9),
    (3, 0.5, balance_ref.POWER_OF_D, 3, 1, 0, 500, 10, 2**63 + 12345),
    (1, 0.95, balance_ref.POWER_OF_D, 1, 1, 0, 400, 399, 1),
    (60, 0.5, balance_ref.BATCH, 2, 10, 0, 500, 100, 3),
    (60, 0.5, balance_ref.POWER_OF_D, 2, 10, 0, 500, 100, 3),
    (60, 0.6, balance_ref.STALE, 2, 4, 10**8, 500, 100, 4),
]


@pytest.mark.parametrize("args", PARITY_CASES)
def test_parity_supermarket_kernels(args):
    compiled = import_compiled("magnum_lib.node._balance")
    ref = balance_ref.simulate_supermarket(*args)
    fast = compiled.simulate_supermarket(*args)
    assert set(ref) == set(fast)
    assert np.array_equal(ref["time_in_system"], fast["time_in_system"])
    assert np.array_equal(ref["tail_area"], fast["tail_area"])  # bit for bit, not approx
    for key in ("window_ns", "events", "max_queue", "zero_wait"):
        assert ref[key] == fast[key]


@settings(max_examples=15, deadline=None)
@given(servers=st.integers(1, 30), load=st.floats(0.05, 0.95), d=st.integers(1, 5),
       policy=st.sampled_from(["random", "power_of_d", "least_loaded_stale", "batch"]),
       jobs=st.integers(1, 200), seed=st.integers(0, 2**31), tasks=st.integers(1, 3))
def test_parity_public_api(servers, load, d, policy, jobs, seed, tasks):
    import_compiled("magnum_lib.node._balance")
    d = min(d, servers)
    tasks = min(tasks, servers // d) if policy == "batch" else tasks
    kw = dict(servers=servers, load=load, choices=d, policy=policy, jobs=jobs, seed=seed,
              refresh=0.3, tasks=tasks)
    a, b = supermarket(backend="compiled", **kw), supermarket(backend="python", **kw)
    assert (a.backend, b.backend) == ("compiled", "python")
    assert np.array_equal(a.time_in_system, b.time_in_system)
    assert a.queue_tail == b.queue_tail and a.max_queue == b.max_queue and a.p99 == b.p99
    assert a.zero_wait == b.zero_wait


def test_parity_placement_kernels():
    compiled = import_compiled("magnum_lib.node._balance")
    for n, decisions, d, seed in ((10_000, 20_000, 2, 5), (7, 500, 7, 2**64 - 1), (1, 10, 1, 0)):
        a, b = np.zeros(n, np.int64), np.zeros(n, np.int64)
        assert balance_ref.place_power_of_d(a, decisions, d, seed) == \
            compiled.place_power_of_d(b, decisions, d, seed)
        assert np.array_equal(a, b)


def test_splitmix64_matches_published_reference_outputs():
    # The first outputs of SplitMix64 seeded with 1234567 (the reference implementation by
    # Vigna, splitmix64.c, as listed in the test vectors of many ports).
    state, out = 1234567, []
    for _ in range(3):
        state, x = balance_ref.splitmix64(state)
        out.append(x)
    assert out == [6457827717110365317, 3203168211198807973, 9817491932198370423]


# ------------------------------------------------------------------ balls into bins


def test_power_of_two_gap_stays_small_and_random_gap_grows():
    n, per_bin = 2000, 10
    two = balls_into_bins(servers=n, balls=per_bin * n, choices=2, seed=1)
    one = balls_into_bins(servers=n, balls=per_bin * n, choices=1, seed=1)
    for r in (one, two):
        assert int(r.loads.sum()) == r.balls and r.mean_load == per_bin
    # Berenbrink et al.: gap = ln ln n / ln 2 + O(1) for d = 2 (3.0 here); allow O(1) = 3.
    assert two.gap <= math.log(math.log(n)) / math.log(2) + 3
    # Random: the max of n Poisson(10) loads is about sqrt(2 x 10 x ln n) = 12.3 above the mean.
    assert one.gap >= 0.5 * math.sqrt(2 * per_bin * math.log(n))
    assert two.loads.min() > one.loads.min()  # d = 2 also fills the emptiest bins


# ------------------------------------------------------------------ batch sampling


def test_zero_wait_closed_forms_match_the_issue():
    t = theory_zero_wait(0.5, tasks=10, choices=2)
    assert t["random"] == pytest.approx(0.5**10) and t["random"] == pytest.approx(0.00098, abs=1e-5)
    assert t["per_task"] == pytest.approx(0.75**10) and t["per_task"] == pytest.approx(0.0563, abs=1e-4)
    # P(>= 10 idle among 20 probes), each idle w.p. 1/2 = (2^19 + C(20,10)/2) / 2^20.
    assert t["batch"] == pytest.approx((2**19 + math.comb(20, 10) / 2) / 2**20)
    assert t["batch"] == pytest.approx(0.588, abs=5e-4)


def test_batch_sampling_measured_within_5_standard_errors_of_closed_forms():
    # The snapshot model is the closed forms' own model: each rule's success count over the
    # trials is binomial, so each estimate is within 5 of its standard errors
    # sqrt(p (1 - p) / trials) of theory (random: 5 x 9.9e-5 = 4.9e-4, half the value).
    trials = 100_000
    r = batch_sampling(load=0.5, tasks=10, choices=2, trials=trials, seed=1)
    for measured, theory in ((r.random, 0.5**10), (r.per_task, 0.75**10), (r.batch, r.batch_theory)):
        assert measured == pytest.approx(theory, abs=5 * _binomial_se(theory, trials))
    assert r.to_dict()["batch_theory"] == pytest.approx(0.588, abs=5e-4)


@settings(max_examples=30, deadline=None)
@given(load=st.floats(0.01, 0.99), tasks=st.integers(1, 12), d=st.integers(1, 4),
       trials=st.integers(1, 2000), seed=st.integers(0, 2**32))
def test_batch_sampling_orders_the_rules(load, tasks, d, trials, seed):
    # On the same probes: random success => per-task success => batch success.
    r = batch_sampling(load=load, tasks=tasks, choices=d, trials=trials, seed=seed)
    assert 0 <= r.random <= r.per_task <= r.batch <= 1
    assert r.random_theory <= r.per_task_theory <= r.batch_theory + 1e-12
    if d == 1:  # one probe per task: the three rules coincide
        assert r.random == r.per_task == r.batch


# ------------------------------------------------------------------ bad inputs


@pytest.mark.parametrize("kwargs, name", [
    (dict(load=0.0), "load"), (dict(load=1.0), "load"), (dict(load=-0.1), "load"),
    (dict(load=1.5), "load"), (dict(load=float("nan")), "load"), (dict(load="0.5"), "load"),
    (dict(servers=0), "servers"), (dict(servers=2.5), "servers"),
    (dict(servers=10, choices=11), "choices"), (dict(choices=0), "choices"),
    (dict(policy="jsq"), "policy"), (dict(jobs=0), "jobs"), (dict(seed=-1), "seed"),
    (dict(refresh=0.0), "refresh"), (dict(refresh=1e-12), "refresh"), (dict(warmup=1.0), "warmup"),
    (dict(warmup=-0.1), "warmup"), (dict(servers=1, choices=1, load=1e-9, jobs=10**7), "jobs"),
    (dict(backend="gpu"), "backend"), (dict(tasks=0), "tasks"),
    (dict(policy="batch", servers=10, choices=2, tasks=6), "choices"),
    (dict(tasks=10, jobs=10**7), "jobs"),
])
def test_supermarket_bad_input_names_the_parameter(kwargs, name):
    args = dict(servers=100, load=0.5, choices=2, jobs=100) | kwargs
    with pytest.raises(ParameterError) as info:
        supermarket(**args)
    assert info.value.name == name
    assert str(info.value).startswith(name)


@pytest.mark.parametrize("call, name", [
    (lambda: balls_into_bins(servers=0), "servers"),
    (lambda: balls_into_bins(servers=5, choices=6), "choices"),
    (lambda: balls_into_bins(balls=-1), "balls"),
    (lambda: batch_sampling(load=1.0), "load"),
    (lambda: batch_sampling(tasks=0), "tasks"),
    (lambda: batch_sampling(choices=0), "choices"),
    (lambda: batch_sampling(trials=0), "trials"),
    (lambda: batch_sampling(model="fluid"), "model"),
    (lambda: batch_sampling(model="dynamic", servers=15), "choices"),
    (lambda: theory_zero_wait(0.0), "load"),
    (lambda: theory_time_in_system(0.5, 0), "choices"),
    (lambda: theory_queue_tail(1.2, 2), "load"),
])
def test_other_bad_inputs(call, name):
    with pytest.raises(ParameterError) as info:
        call()
    assert info.value.name == name


@pytest.mark.parametrize("module_name", ["magnum_lib.node.balance_ref", "magnum_lib.node._balance"])
def test_kernels_reject_bad_direct_calls(module_name):
    module = (balance_ref if module_name.endswith("_ref") else import_compiled(module_name))
    good = [10, 0.5, balance_ref.POWER_OF_D, 2, 1, 0, 100, 10, 1]
    for index, bad in ((0, 0), (1, 1.0), (2, 7), (3, 11), (4, 0), (6, 0), (7, 100)):
        args = list(good)
        args[index] = bad
        with pytest.raises(ValueError):
            module.simulate_supermarket(*args)
    with pytest.raises(ValueError):
        module.simulate_supermarket(10, 0.5, balance_ref.STALE, 1, 1, 0, 100, 10, 1)
    with pytest.raises(ValueError):  # batch: 3 x 4 probes > 10 servers
        module.simulate_supermarket(10, 0.5, balance_ref.BATCH, 3, 4, 0, 100, 10, 1)
    with pytest.raises(ValueError):
        module.place_power_of_d(np.zeros(3, np.int64), 10, 4, 0)
