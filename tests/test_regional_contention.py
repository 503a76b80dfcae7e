"""Lease contention against the birthday bound, herding, parity, and the CLI.

Tolerances come from the binomial standard deviation: a rate p measured over T trials has
sd sqrt(p (1 - p) / T); each test states how many sd its tolerance is.
"""
import json
import math

import pytest

from magnum_lib.cli import main
from magnum_lib.regional import contention_ref
from magnum_lib.regional.contention import birthday_bound, expected_lease_failure_rate, simulate_contention
from tests.conftest import import_compiled


def test_closed_forms_match_the_issue():
    assert birthday_bound(50_000, 2) == pytest.approx(2.0e-5, rel=1e-3)
    assert birthday_bound(50_000, 10) == pytest.approx(9.0e-4, rel=1e-2)
    # C(C-1)/(2N)/C for C << N
    assert expected_lease_failure_rate(50_000, 10) == pytest.approx(9 / (2 * 50_000), rel=1e-3)


def _within(measured, p, trials, sds):
    sd = math.sqrt(p * (1 - p) / trials)
    assert abs(measured - p) <= sds * sd, (measured, p, sd)


def test_birthday_bound_n50000_c10_compiled():
    """10^6 trials: p = 9.0e-4 has sd 3.0e-5 (3.3%), so 10% relative is 3 sd."""
    mod = import_compiled("magnum_lib.regional._contention")
    r = simulate_contention(50_000, 10, slots=1, trials=1_000_000, seed=11, module=mod)
    p = birthday_bound(50_000, 10)
    assert abs(r.round_conflict_rate - p) <= 0.10 * p
    _within(r.lease_failure_rate * 10, expected_lease_failure_rate(50_000, 10) * 10, 1_000_000, 3.5)


def test_birthday_bound_n50000_c2_compiled():
    """10^8 trials (about 4 s compiled): p = 2.0e-5 gives ~2,000 conflicts, sd 2.2%, so the
    issue's 10% relative is 4.5 sd."""
    mod = import_compiled("magnum_lib.regional._contention")
    r = simulate_contention(50_000, 2, slots=1, trials=100_000_000, seed=12, module=mod)
    p = birthday_bound(50_000, 2)
    assert abs(r.round_conflict_rate - p) <= 0.10 * p
    # With C = 2 a conflict refuses exactly one of the two leases.
    assert r.lease_failure_rate == pytest.approx(r.round_conflict_rate / 2)


def test_birthday_bound_small_cluster_any_backend():
    """N=1000, C=10: p = 0.0441; 2 * 10^4 trials gives sd 3.3%, so 10% is 3 sd."""
    r = simulate_contention(1000, 10, slots=1, trials=20_000, seed=13)
    p = birthday_bound(1000, 10)
    assert abs(r.round_conflict_rate - p) <= 0.10 * p
    assert r.lease_failure_rate == pytest.approx(expected_lease_failure_rate(1000, 10), rel=0.15)
    # Every accepted lease occupies one slot of an empty cluster.
    assert r.utilization == pytest.approx(10 * (1 - r.lease_failure_rate) / 1000)


def test_least_loaded_herds_from_a_shared_view():
    kw = dict(nodes=500, concurrent=10, slots=4, load=0.5, staleness="2ms", trials=3000, seed=5)
    rates = {p: simulate_contention(policy=p, **kw) for p in ("random", "least-loaded", "two-choices")}
    ll, rnd, two = (rates[p].lease_failure_rate for p in ("least-loaded", "random", "two-choices"))
    assert ll > 10 * rnd  # every scheduler picks the same emptiest node
    assert rates["least-loaded"].round_conflict_rate == 1.0  # 10 leases, 4 slots: always
    assert rnd < two * 3 and two < ll / 10  # two-choices stays far from the herd


def test_two_choices_beats_random_when_fresh_and_nears_it_when_stale():
    """Mitzenmacher's 'old information' lesson: fresh views help two-choices, stale ones don't."""
    kw = dict(nodes=200, concurrent=20, slots=4, load=0.75, trials=4000, seed=3)
    fresh = {p: simulate_contention(policy=p, staleness=0, **kw).lease_failure_rate
             for p in ("random", "two-choices")}
    stale = {p: simulate_contention(policy=p, staleness="1s", **kw).lease_failure_rate
             for p in ("random", "two-choices")}
    assert fresh["two-choices"] < 0.7 * fresh["random"]
    assert stale["two-choices"] == pytest.approx(stale["random"], rel=0.1)


def test_priorities_turn_refusals_into_preemptions():
    kw = dict(nodes=100, concurrent=10, slots=2, load=0.9, trials=2000, seed=4)
    flat = simulate_contention(priorities=1, **kw)
    ranked = simulate_contention(priorities=4, **kw)
    assert flat.preemptions == 0 and ranked.preemptions > 0
    assert ranked.lease_failure_rate < flat.lease_failure_rate


@pytest.mark.parametrize("policy", ["random", "least-loaded", "two-choices"])
def test_parity_compiled_vs_reference(policy):
    compiled = import_compiled("magnum_lib.regional._contention")
    kw = dict(nodes=300, concurrent=8, slots=3, load=0.6, staleness="5ms", trials=500, seed=9,
              priorities=3, policy=policy)
    a = simulate_contention(module=compiled, **kw).to_dict()
    b = simulate_contention(module=contention_ref, **kw).to_dict()
    for key in ("wall_s", "backend"):
        a.pop(key), b.pop(key)
    assert a == b


def test_cli_json_keys(capsys):
    argv = ["contention", "--nodes", "1000", "--concurrent", "10", "--slots", "1", "--policy",
            "random", "--staleness", "2ms", "--trials", "2000", "--seed", "1", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("round_conflict_rate", "lease_failure_rate", "utilization", "preemptions", "wall_s"):
        assert key in out
    assert main(argv[:-1]) == 0
    assert "birthday bound" in capsys.readouterr().out


@pytest.mark.parametrize("flag, value", [("--nodes", "0"), ("--concurrent", "x"), ("--slots", "0"),
                                         ("--trials", "-1"), ("--seed", "1.5"), ("--policy", "best"),
                                         ("--staleness", "soon"), ("--load", "2"), ("--churn", "-1"),
                                         ("--priorities", "0")])
def test_cli_bad_input_exits_2_naming_the_flag(flag, value, capsys):
    argv = {"--nodes": "10", "--concurrent": "2", "--slots": "1", "--policy": "random",
            "--trials": "10", "--seed": "0"}
    argv[flag] = value
    assert main(["contention"] + [f"{k}={v}" for k, v in argv.items()]) == 2
    err = capsys.readouterr().err.strip()
    assert flag in err and len(err.splitlines()) == 1
