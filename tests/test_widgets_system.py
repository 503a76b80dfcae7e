"""Headless tests of the system explorer (notebooks 07, 08) and its model.

Independent references: the decision latency's parts add up to its mean (every ns is
charged once); the first round wait never exceeds one round period; the lease's trip is
RTT/2 exactly; one lock allows 1 / (c_decision + RTT) decisions/s; the largest of n
exponential ring spacings has mean H_n; a node's share with v virtual nodes is about
Gamma(v)/v; two choices beat one (Azar, Broder, Karlin, Upfal 1999).
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from magnum_lib.widgets import system_model
from magnum_lib.widgets.system_explorer import BENCH_STEPS, SystemExplorer, readout_html, system_explorer

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FAST = dict(duration_s=0.1)


@pytest.fixture(scope="module")
def base():
    return system_model.evaluate(**FAST)


# --- model ----------------------------------------------------------------------------

def test_budget_parts_add_up_to_the_mean(base):
    assert base.ok
    parts = system_model.budget(base.result)
    total = sum(v["mean"] for k, v in parts.items() if k != "total")
    assert total == pytest.approx(parts["total"]["mean"], abs=1e-6)
    assert parts["round_wait"]["mean"] > parts["scheduling"]["mean"]
    # a request waits at most one 3.7 ms round for its first placement
    assert base.result["decision_latency_ms"]["breakdown"]["round_wait"]["p999"] <= 3.7 + 1e-6


def test_journey_is_contiguous_and_ends_on_the_device(base):
    segs = system_model.journey(base.result)
    assert segs[0].start_ms == 0.0 and segs[0].layer.startswith("region")
    for a, b in itertools.pairwise(segs):
        assert a.end_ms == pytest.approx(b.start_ms) and a.ms >= 0
    assert segs[-1].layer.startswith("device")
    start = system_model.decision_ms(base.result)
    assert start == pytest.approx(sum(s.ms for s in segs if not s.layer.startswith("device")))


def test_rtt_knob_is_half_rtt_per_lease_trip():
    for rtt_us in (0.0, 400.0):
        sc = system_model.evaluate(rtt_us=rtt_us, **FAST)
        rtt = sc.result["decision_latency_ms"]["breakdown"]["rtt"]
        assert rtt["p50"] == pytest.approx(rtt_us / 2 / 1e3, abs=1e-9)


def test_a_retried_request_pays_a_round():
    # at load 1.0 (8% of leases refused on the classroom; at 0.8 it is 0.35%, too few to trace)
    rid, res = system_model.find_retried_request(range(0, 1500), preset="magnum_v2", duration_s=0.3, seed=0,
                                                 load=1.0)
    layers = [s.layer for s in system_model.journey(res)]
    assert "node validator: refuses" in layers and system_model.decision_ms(res) > 3.7 - 0.5
    assert res["trace"]["request"] == rid


def test_schedulers_apply_only_to_region_scoped_presets():
    assert system_model.knobs_for("magnum_v2", 0.8, 1.0, 100.0, 7, 2.0)["schedulers"] == 7
    assert "schedulers" not in system_model.knobs_for("borg_like", 0.8, 1.0, 100.0, 7, 2.0)
    sc = system_model.evaluate("borg_like", schedulers=7, **FAST)
    assert sc.ok and sc.result["preset_config"]["schedulers"] == sc.result["preset_config"]["cells_per_region"]


@pytest.mark.parametrize("kwargs,word", [({"load": -1.0}, "load"), ({"gossip_interval_ms": 0.0}, "gossip_interval"),
                                         ({"rtt_us": math.nan}, "rtt_us"), ({"preset": "k8s"}, "preset"),
                                         ({"schedulers": 0}, "schedulers")])
def test_bad_settings_give_a_message_not_an_exception(kwargs, word):
    sc = system_model.evaluate(**{**FAST, **kwargs})
    assert not sc.ok and word in sc.message and sc.result is None
    assert math.isnan(sc.pct("p95")) and math.isnan(sc.started_fraction)
    html = readout_html(sc)
    assert "invalid" in html and "magnum-readout" in html


def test_same_setting_same_run_on_both_backends():
    a = system_model.evaluate(seed=3, backend="compiled", **FAST)
    b = system_model.evaluate(seed=3, backend="python", **FAST)
    assert a.result["decision_latency_ms"] == b.result["decision_latency_ms"]
    assert a.result["trace"] == b.result["trace"]


def test_locks_serialize_leases_do_not():
    rows = system_model.leases_vs_locks((1, 8), duration_s=0.2)
    by = {(r["mode"], r["schedulers"]): r for r in rows}
    assert system_model.lock_capacity_per_s() == pytest.approx(1 / (250e-9 + 100e-6))
    # 8 x 1,500/s = 12,000/s exceeds the lock's ~10,000 decisions/s; leases stay at a round
    assert by["locks", 8]["p95_ms"] > 10 * by["leases", 8]["p95_ms"]
    assert by["leases", 8]["p95_ms"] < 10 and by["locks", 1]["p95_ms"] < 10
    assert by["locks", 8]["lease_failure_rate"] < 0.01


def test_partition_raises_refusals_and_never_overbooks():
    px = system_model.partition_experiment(0.5, start_s=0.02, partition_s=0.1, duration_s=0.15)
    assert px["gossip"]["lease_failure_rate"] > px["calm"]["lease_failure_rate"]
    assert px["utilization_max"] <= 1.0 + 1e-9
    # Only the true partition loses leases (each comes back when it expires, 100 ms later).
    assert px["calm"]["leases"]["refused_expired"] == px["gossip"]["leases"]["refused_expired"] == 0
    assert px["true"]["leases"]["refused_expired"] > 0
    assert px["true"]["p95_ms"] > px["gossip"]["p95_ms"]
    assert system_model.consistent_wait_ms(0.1, 0.5) == pytest.approx(50.0)
    with pytest.raises(ValueError, match="q"):
        system_model.consistent_wait_ms(0.1, 1.5)


def test_one_size_pauses_more_and_meets_fewer_slas():
    # Blind placement leaves slow, less urgent copies on devices: more urgent leases pause them
    # (micro-preemption) instead of being refused, and the paused classes miss their SLA.
    cm = system_model.cost_model_vs_one_size(duration_s=0.2)
    good, blind = cm["cost_model"], cm["one_size"]
    assert blind["preemptions"]["inference_paused"] > 2 * good["preemptions"]["inference_paused"]
    assert blind["sla_attainment"]["llm_decode"] < good["sla_attainment"]["llm_decode"]


# --- consistent hashing against theory --------------------------------------------------

def test_ring_shares_partition_the_ring():
    sh = system_model.ring_shares(500, 8, seed=1)
    assert sh.shape == (500,) and (sh > 0).all() and sh.sum() == pytest.approx(1.0)
    with pytest.raises(ValueError):
        system_model.ring_shares(0)


def test_largest_spacing_has_mean_harmonic_number():
    n = 1000
    maxima = [system_model.ring_shares(n, 1, seed=s).max() * n for s in range(40)]
    # max of n exponential spacings: mean H_n, sd pi / sqrt(6) (Gumbel); 40 seeds -> se 0.2
    assert abs(np.mean(maxima) - system_model.ring_max_share_theory(n, 1)) < 4 * (math.pi / math.sqrt(6)) / math.sqrt(40)


@pytest.mark.parametrize("v", [16, 64])
def test_virtual_nodes_follow_the_gamma_share(v):
    n = 1000
    maxima = [system_model.ring_shares(n, v, seed=s).max() * n for s in range(10)]
    assert abs(np.mean(maxima) / system_model.ring_max_share_theory(n, v) - 1) < 0.08


def test_two_choices_beat_hashing_and_random():
    n, m = 1000, 20_000
    two = system_model.two_choices_max_load(n, m, seed=0)
    assert two <= system_model.balls_max_load_theory(n, m, 2) + 2 / (m / n)   # m/n + ln ln n / ln 2 + O(1)
    assert system_model.random_max_load(n, m, seed=0) > two
    assert system_model.hash_max_load(n, m, vnodes=1, seed=0) > system_model.hash_max_load(n, m, vnodes=64, seed=0) > two


# --- explorer ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def explorer():
    return system_explorer()


def test_explorer_renders_a_png_and_a_readout(explorer):
    assert isinstance(explorer, SystemExplorer)
    assert bytes(explorer.image.value[:8]) == PNG_MAGIC
    assert "magnum-readout" in explorer.readout.value and "decision latency" in explorer.readout.value
    assert "magnum-system-explorer" in explorer.widget._dom_classes
    assert explorer.result["decision_latency_ms"]["p95"] > 0


def test_explorer_answers_each_control(explorer):
    before = explorer.updates
    explorer.controls["rtt_us"].value = 2000
    slow = explorer.result["decision_latency_ms"]["breakdown"]["rtt"]["mean"]
    assert slow == pytest.approx(1.0) and "RTT 2000 µs" in explorer.readout.value
    explorer.controls["rtt_us"].value = 100
    explorer.controls["preset"].value = "cheetah"
    assert explorer.result["preset_config"]["policy"] == "hash" and "cheetah" in explorer.readout.value
    explorer.controls["preset"].value = "magnum_v2"
    assert explorer.updates == before + 4


def test_seed_button_adds_a_spread_and_a_change_clears_it(explorer):
    explorer.seeds_button.click()
    assert explorer.spread is not None and explorer.spread.shape == (5,)
    assert "over seeds" in explorer.readout.value
    explorer.controls["load"].value = 0.6
    assert explorer.spread is None and "over seeds" not in explorer.readout.value
    explorer.controls["load"].value = 0.8


def test_css_class_can_be_renamed_for_notebook_08():
    e = system_explorer(css_class="magnum-evolution-explorer", preset="borg_like")
    assert "magnum-evolution-explorer" in e.widget._dom_classes and e.result["preset_config"]["policy"] == "scan"


def test_bench_steps_are_valid_controls(explorer):
    for name, value in BENCH_STEPS:
        control = explorer.controls[name]
        if hasattr(control, "options"):
            assert value in control.options
        else:
            assert control.min <= value <= control.max


def test_presets_button_draws_every_preset_and_a_change_clears_it(explorer):
    explorer.presets_button.click()
    assert set(explorer.others) == set(system_model.PRESET_NAMES)
    assert explorer.others["magnum_v2"][1] == pytest.approx(explorer.result["decision_latency_ms"]["p95"])
    # the same setting run on its own gives the same figure (seeded, deterministic)
    alone = system_model.evaluate("cheetah", 0.8, 1.0, 100.0, 2, 2.0)
    assert explorer.others["cheetah"][1] == pytest.approx(alone.pct("p95"))
    assert "every preset here" in explorer.readout.value
    assert sum(line.get_visible() for line in explorer._other_lines) == len(system_model.PRESET_NAMES) - 1
    explorer.controls["hedge"].value = 1.0
    assert explorer.others is None and "every preset here" not in explorer.readout.value
    assert not any(line.get_visible() for line in explorer._other_lines)
    explorer.controls["hedge"].value = 2.0
