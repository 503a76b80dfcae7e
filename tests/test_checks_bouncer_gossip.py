"""The claim checks of notebooks 04 and 05 (magnum_lib.checks.bouncer, .gossip).

``tests/test_claim_checks.py`` runs each with its defaults and its perturbations; here: the
inputs they refuse, and the relations their verdicts rest on (the figure follows the input
for "set by an input"; the flaw is in the rule for "refuted").
"""
from __future__ import annotations

import pytest

from magnum_lib import checks
from magnum_lib.base.validate import ParameterError
from magnum_lib.claims import NOT_REPRODUCED, REFUTED, REPRODUCED, SET_BY_INPUT

MINE = ("C5", "C18", "C19", "C20", "C22", "C28", "C29", "C30", "C32")


@pytest.mark.parametrize(("cid", "inputs", "field"), [
    ("C5", {"backend": "rust"}, "backend"),
    ("C19", {"quantum": "0us"}, "quantum"),
    ("C19", {"seed": -1}, "seed"),
    ("C18", {"inbox": "spinlock"}, "inbox"),
    ("C18", {"stall_s": 0}, "stall_s"),
    ("C18", {"ops": 0}, "ops"),
    ("C20", {"save_GBps": -5.0}, "save_GBps"),
    ("C22", {"requests": 10}, "requests"),
    ("C22", {"service_p99_ms": 0}, "service_p99_ms"),
    ("C29", {"nodes": 1}, "nodes"),
    ("C29", {"mode": "shout"}, "mode"),
    ("C30", {"clock": "lamport"}, "clock"),
    ("C30", {"trials": 0}, "trials"),
    ("C32", {"merge": "or"}, "merge"),
    ("C32", {"nodes": 4, "fanout": 4}, "fanout"),
])
def test_bad_inputs_are_refused_with_the_field_named(cid, inputs, field):
    with pytest.raises(ParameterError, match=field):
        checks.run(cid, **inputs)


def test_the_digest_period_must_be_whole_ticks():
    with pytest.raises(ValueError, match="period"):
        checks.run("C28", period="2.5ms")


@pytest.mark.parametrize("cid", MINE)
def test_each_verdict_says_why_with_numbers(cid):
    v = checks.run(cid)
    assert any(ch.isdigit() for ch in v.because), v
    assert v.figures, "the numbers the verdict rests on"


@pytest.mark.parametrize(("quantum", "per_s"), [("100us", 10_000), ("250us", 4_000), ("2ms", 500)])
def test_c19_the_wake_up_rate_is_one_over_the_quantum(quantum, per_s):
    m = checks.measure("C19", quantum=quantum)
    assert m["boundaries_per_s"] == pytest.approx(per_s, rel=0.01)
    expected = SET_BY_INPUT if per_s == 4_000 else NOT_REPRODUCED
    assert checks.judge("C19", m).verdict == expected


def test_c18_a_locked_queue_makes_a_try_operation_wait_for_the_stalled_holder():
    ring = checks.measure("C18", stall_s=0.05, ops=100)
    locked = checks.measure("C18", inbox="locked", stall_s=0.05, ops=100)
    assert locked["max_op_us"] >= 0.8 * 50_000 > 10 * ring["max_op_us"]
    assert ring["delivery_wait_ms"] >= 40 and locked["delivery_wait_ms"] >= 40   # back-pressure either way


def test_c20_pausing_is_judged_at_its_cost():
    fast, slow = checks.measure("C20"), checks.measure("C20", save_GBps=32.0)
    assert fast["save_us"] < 100 < 1_000 < slow["save_us"]
    assert fast["pausing"]["p99_ms"] < slow["pausing"]["p99_ms"]
    assert fast["waiting"] == slow["waiting"]   # without pausing the save cost is never paid


def test_c22_the_price_of_a_copy_is_the_service_tail_past_the_threshold():
    for p99 in (5.0, 10.0):
        m = checks.measure("C22", service_p99_ms=p99, requests=50_000)
        assert m["extra_load"] == pytest.approx(m["extra_load_theory"], abs=0.004)
        assert m["hedged"]["p999_ms"] < m["unhedged"]["p999_ms"]


def test_c29_time_to_quorum_is_rounds_times_interval():
    a, b = checks.measure("C29", nodes=5_000), checks.measure("C29", nodes=5_000, interval="2ms")
    assert a["rounds_to_quorum"] == b["rounds_to_quorum"]
    assert b["time_to_quorum_ms"] == pytest.approx(2 * a["time_to_quorum_ms"])


def test_c30_vector_clocks_keep_what_scalar_generations_drop():
    vc, gen = checks.measure("C30", trials=50), checks.measure("C30", clock="generation", trials=50)
    assert vc["concurrent"] == gen["concurrent"] > 0
    assert vc["detected"] == vc["concurrent"] and vc["lost_silently"] == 0
    assert gen["detected"] == 0 and gen["lost_silently"] == gen["concurrent"]
    assert checks.judge("C30", vc).verdict == REPRODUCED


def test_c32_the_article_merge_never_copies_the_generation():
    m = checks.measure("C32", nodes=8, rounds=20)
    assert m["generation_recorded"] == [5] and m["phantom_busy_peers"] == m["peers"]
    assert checks.judge("C32", m).verdict == REFUTED
    fixed = checks.measure("C32", nodes=8, rounds=20, merge="lww")
    assert fixed["generation_recorded"] == [6] and fixed["up_to_date_peers"] == fixed["peers"]
