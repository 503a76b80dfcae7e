"""Headless tests of the Conductor explorer (notebook 03) and its model.

Independent references: on empty one-slot nodes, random placement's round conflict rate is
the birthday bound 1 - prod_{i<C}(1 - i/N) (checked within five standard errors);
least-loaded from one shared view sends every lease to the same node, so C schedulers on
S-slot nodes conflict in every round once C > S; a lock serialises C decisions, mean
(C + 1) / 2 steps, worst C; a checkpoint is memory / bandwidth; the node's validator
refuses a lease that expired before it arrived.
"""
from __future__ import annotations

import math

import pytest

from magnum_lib.regional.contention import birthday_bound
from magnum_lib.widgets import conductor_model as cm
from magnum_lib.widgets.conductor_explorer import BENCH_STEPS, ConductorExplorer, conductor_explorer

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# --- model ----------------------------------------------------------------------------

def test_random_on_empty_one_slot_nodes_is_the_birthday_bound():
    sc = cm.evaluate(0.0, 20, 0.0, "random", nodes=5000, slots=1, trials=20_000, priorities=1)
    p = birthday_bound(5000, 20)
    assert sc.birthday == pytest.approx(p)
    assert abs(sc.conflict_rate - p) < 5 * math.sqrt(p * (1 - p) / 20_000)
    assert sc.preemptions_per_1000() == 0


def test_least_loaded_herds_at_every_staleness():
    for staleness in (0.0, 2.0, 20.0):
        sc = cm.evaluate(staleness, 10, 0.5, "least-loaded")
        assert sc.conflict_rate > 0.99  # 10 leases, one node, 8 slots
        assert sc.results["random"].round_conflict_rate < 0.5
        assert sc.results["two-choices"].round_conflict_rate < 0.5


def test_conflicts_grow_with_staleness_load_and_concurrency():
    base = cm.evaluate(2.0, 10, 0.7, "random")
    assert cm.evaluate(20.0, 10, 0.7, "random").conflict_rate > base.conflict_rate
    assert cm.evaluate(2.0, 10, 0.9, "random").conflict_rate > base.conflict_rate
    assert cm.evaluate(2.0, 30, 0.7, "random").conflict_rate > base.conflict_rate
    failures = [r.lease_failure_rate for r in base.sweep]
    assert failures == sorted(failures) and len(base.sweep) == len(cm.LOAD_SWEEP)
    assert [round(r.load, 6) for r in base.sweep] == list(cm.LOAD_SWEEP)


def test_latency_model_speculative_vs_lock():
    step = cm.DECISION_US + cm.RTT_US
    assert cm.locking_latency_us(1) == (step, step)
    assert cm.locking_latency_us(10) == (5.5 * step, 10 * step)
    assert cm.speculative_latency_us(0.0) == step
    assert cm.speculative_latency_us(0.5) == 2 * step
    assert cm.speculative_latency_us(1.0) == math.inf
    sc = cm.evaluate(2.0, 16, 0.7, "two-choices")
    assert sc.speculative_us < sc.locking_mean_us < sc.locking_worst_us


def test_checkpoint_seconds_and_lease_timeout_use_the_library_rules():
    assert cm.checkpoint_seconds("80GB") == pytest.approx(3.2)  # 80e9 / 25e9
    assert cm.checkpoint_seconds(80 * 10**9, "63GB/s") == pytest.approx(80 / 63)
    with pytest.raises(ValueError):
        cm.checkpoint_seconds("80GB", 0)
    trip_ms = (cm.DECISION_US + cm.RTT_US / 2) / 1e3
    assert cm.lease_survives_trip(100.0) and cm.lease_survives_trip(trip_ms * 1.01)
    assert not cm.lease_survives_trip(trip_ms) and not cm.lease_survives_trip(0.01)


def test_bad_states_give_a_message_not_an_exception():
    expired = cm.evaluate(timeout_ms=0.01)
    assert not expired.lease_alive and expired.message == cm.EXPIRED_MESSAGE
    full = cm.evaluate(load=1.0)
    assert full.view_full and full.message == cm.FULL_MESSAGE and full.speculative_us == math.inf
    assert cm.evaluate().message == ""


@pytest.mark.parametrize("kwargs,word", [({"policy": "busiest"}, "policy"), ({"staleness_ms": -1.0}, "staleness"),
                                         ({"timeout_ms": float("nan")}, "timeout"), ({"load": 1.5}, "load"),
                                         ({"concurrent": 0}, "concurrent")])
def test_invalid_inputs_name_the_field(kwargs, word):
    with pytest.raises(ValueError, match=word):
        cm.evaluate(**kwargs)


def test_same_seed_same_answer():
    a, b = cm.evaluate(5.0, 12, 0.8, "two-choices"), cm.evaluate(5.0, 12, 0.8, "two-choices")
    assert a.conflict_rate == b.conflict_rate and a.failure_rate == b.failure_rate


# --- explorer -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cx() -> ConductorExplorer:
    return conductor_explorer()


def test_explorer_exposes_widget_controls_result(cx):
    import ipywidgets as widgets

    assert isinstance(cx.widget, widgets.Box)
    assert set(cx.controls) == {"staleness_ms", "concurrent", "load", "policy", "timeout_ms"}
    assert bytes(cx.image.value).startswith(PNG_MAGIC)
    assert "magnum-readout" in cx.readout.value and "magnum-conductor-explorer" in cx.widget._dom_classes
    assert cx.result is cx.scenario.result


def test_controls_drive_the_scenario_and_reuse_the_figure(cx):
    fig, n = cx.figure, cx.updates
    cx.controls["policy"].value = "least-loaded"
    herd = cx.scenario.conflict_rate
    cx.controls["policy"].value = "two-choices"
    assert cx.scenario.conflict_rate < herd and cx.scenario.policy == "two-choices"
    cx.controls["concurrent"].value = 20
    assert cx.scenario.concurrent == 20 and cx.scenario.locking_worst_us == pytest.approx(20 * 120.0)
    assert "two-choices" in cx.readout.value and "C = 20" in cx.readout.value
    assert cx.figure is fig and cx.updates == n + 3
    cx.controls["policy"].value = "random"
    cx.controls["concurrent"].value = 10


def test_explorer_shows_bad_states_as_messages(cx):
    cx.controls["timeout_ms"].value = 0.01
    assert not cx.scenario.lease_alive and "expires" in cx.readout.value and cx._expired_text.get_visible()
    cx.controls["timeout_ms"].value = 100.0
    assert cx.scenario.lease_alive and not cx._expired_text.get_visible()


def test_bench_steps_are_valid_control_values(cx):
    for name, value in BENCH_STEPS:
        cx.controls[name].value = value
        assert cx.scenario is not None
    assert {name for name, _ in BENCH_STEPS} == set(cx.controls)
