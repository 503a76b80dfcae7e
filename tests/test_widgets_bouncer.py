"""Headless tests of the Bouncer explorer (notebook 04): set controls, read the scenario.

Independent references: Mitzenmacher's queue-length tail lambda^((d^i - 1)/(d - 1)) and
the M/M/1 mean 1/(1 - lambda) (written out here, not taken from the library); the hedging
identity "a copy is sent for a fraction P(X > t_h)" (counted here from the latencies);
the roofline max(flops / peak, bytes / bandwidth) for the article's device table.
"""
from __future__ import annotations

import numpy as np
import pytest

from magnum_lib.hardware import cost_matrix, default_catalog
from magnum_lib.widgets import bouncer_model
from magnum_lib.widgets.bouncer_explorer import BENCH_STEPS, BouncerExplorer, bouncer_explorer

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SMALL = {"servers": 300, "jobs": 60_000, "requests": 150, "seed": 2}


@pytest.fixture(scope="module")
def explorer():
    return bouncer_explorer(**SMALL)


# --- the model ------------------------------------------------------------------------

def test_scenario_agrees_with_mitzenmacher():
    sc = bouncer_model.evaluate(0.8, 2, 5.0, 20.0, servers=1000, jobs=200_000, requests=100, seed=1)
    tail = [0.8 ** (2 ** i - 1) for i in range(1, 6)]  # lambda^((d^i-1)/(d-1)) with d = 2
    assert sc.theory_tail[:5] == pytest.approx(tail, rel=1e-12)
    assert np.asarray(sc.queue_tail[:4]) == pytest.approx(tail[:4], abs=0.01)
    assert sc.mean_ms == pytest.approx(sc.theory_mean_ms, rel=0.03)
    assert sc.random_mean_ms == pytest.approx(1 / (1 - 0.8))


def test_more_choices_shorten_the_queues():
    means = [bouncer_model.evaluate(0.9, d, 5.0, 20.0, **SMALL).mean_ms for d in (1, 2, 3)]
    assert means[0] > 2 * means[1] > 2 * means[2] * 0.9
    assert means[1] > means[2]


def test_hedging_extra_load_is_the_fraction_slower_than_the_delay():
    sc = bouncer_model.evaluate(0.9, 2, 3.0, 20.0, **SMALL)
    assert sc.extra_load == pytest.approx(np.mean(sc.latency_ms > 3.0), abs=1e-12)
    assert np.all(sc.hedged_ms <= sc.latency_ms)            # a hedge never makes a request slower
    assert np.all(sc.hedged_ms[sc.latency_ms <= 3.0] == sc.latency_ms[sc.latency_ms <= 3.0])
    assert sc.p99_hedged_ms < sc.p99_ms


def test_hedge_delay_zero_copies_everything():
    hedged, extra = bouncer_model.hedge(np.array([1.0, 2.0, 3.0, 4.0]), 0.0, seed=0)
    assert extra == 1.0 and np.all(hedged <= [1.0, 2.0, 3.0, 4.0])
    with pytest.raises(ValueError, match="hedge_ms"):
        bouncer_model.hedge(np.ones(3), -1.0)


def test_ccdf_points_are_a_tail():
    lat = np.random.default_rng(0).exponential(1.0, 10_000)
    t, tail = bouncer_model.ccdf_points(lat)
    assert np.all(np.diff(t) >= 0) and np.all(np.diff(tail) < 0)
    assert tail[0] == 1.0 and tail[-1] == pytest.approx(1e-4)
    mid = len(t) // 2
    assert np.mean(lat > t[mid]) == pytest.approx(tail[mid], rel=0.1)


def test_cheapest_policy_saves_energy_and_random_misses():
    sc = bouncer_model.evaluate(0.5, 2, 5.0, 20.0, requests=400, servers=300, jobs=20_000, seed=1)
    cheap, fast, rand = (sc.placements[k] for k in ("cheapest_meeting_sla", "fastest_first", "random"))
    assert cheap.energy_j < fast.energy_j
    assert cheap.sla_attainment >= fast.sla_attainment - 0.01
    assert rand.sla_attainment < 0.6
    assert sc.best_policy == "cheapest_meeting_sla" and sc.sla_feasible


def test_impossible_sla_is_flagged_not_raised():
    sc = bouncer_model.evaluate(0.5, 2, 5.0, 1.0, **SMALL)   # no device runs 2 TFLOP in 1 ms
    assert not sc.sla_feasible
    assert all(p.sla_attainment < 0.5 for p in sc.placements.values())


def test_bad_inputs_name_the_parameter():
    with pytest.raises(ValueError, match="mix"):
        bouncer_model.evaluate(mix="9 TPUs", **SMALL)
    with pytest.raises(ValueError, match="sla_ms"):
        bouncer_model.evaluate(sla_ms=0.0, **SMALL)
    with pytest.raises(ValueError, match="load"):
        bouncer_model.evaluate(load=1.0, **SMALL)


def test_article_catalog_uses_the_article_figures_and_keeps_the_rest():
    real, art = default_catalog(), bouncer_model.article_catalog()
    assert art["h100_sxm"].peak("bf16") == 50e12 and art["mi300x"].peak("bf16") == 45e12
    assert art["mtia_v2"].peak("bf16") == 40e12
    assert art["mi300x"].mem_bandwidth_Bps == pytest.approx(2 * real["h100_sxm"].mem_bandwidth_Bps)
    assert art["mtia_v2"].tdp_w == pytest.approx(0.3 * real["h100_sxm"].tdp_w)
    assert art["a100_sxm"] == real["a100_sxm"]              # no claim: untouched
    assert art["h100_sxm"].tdp_w == real["h100_sxm"].tdp_w
    # Roofline by hand: 2 TFLOP at 50 TFLOPS = 40 ms on the article's H100.
    cm = cost_matrix(["h100_sxm"], [2e12], [0.2e9], catalog=art)
    assert cm.time_s[0, 0] == pytest.approx(max(2e12 / 50e12, 0.2e9 / real["h100_sxm"].mem_bandwidth_Bps))


# --- the explorer ---------------------------------------------------------------------

def test_explorer_builds_with_a_png_and_readout(explorer):
    assert isinstance(explorer, BouncerExplorer)
    assert bytes(explorer.image.value).startswith(PNG_MAGIC)
    assert "magnum-readout" in explorer.readout.value and "mean time in system" in explorer.readout.value
    assert "magnum-bouncer-explorer" in explorer.widget._dom_classes
    assert set(explorer.controls) == {"load", "choices", "hedge_ms", "sla_ms", "mix"}
    assert all(getattr(c, "continuous_update", False) is False
               for k, c in explorer.controls.items() if k != "mix")


def test_controls_drive_the_scenario(explorer):
    explorer.controls["choices"].value = 1
    random_mean = explorer.scenario.mean_ms
    explorer.controls["choices"].value = 2
    assert explorer.scenario.choices == 2 and explorer.scenario.mean_ms < random_mean / 2
    assert explorer.result is explorer.scenario.market
    explorer.controls["hedge_ms"].value = 2.0
    cheap = explorer.scenario.extra_load
    explorer.controls["hedge_ms"].value = 10.0
    assert explorer.scenario.extra_load < cheap
    explorer.controls["mix"].value = "4 H100"
    assert set(explorer.scenario.devices) == {"h100_sxm"}
    assert "4 H100" in explorer.readout.value
    explorer.controls["mix"].value = bouncer_model.DEFAULT_MIX


def test_bad_states_show_a_message(explorer):
    explorer.controls["sla_ms"].value = 1.0
    assert "no device" in explorer.readout.value and explorer._sla_text.get_visible()
    explorer.controls["sla_ms"].value = 20.0
    assert not explorer._sla_text.get_visible()
    explorer.controls["hedge_ms"].value = 0.0
    assert explorer.scenario.extra_load == 1.0
    assert "+100% load" in explorer.readout.value and explorer._hedge_text.get_visible()
    explorer.controls["hedge_ms"].value = 5.0


def test_figure_is_reused_and_redrawn(explorer):
    fig, axes, png = explorer.figure, list(explorer._axes), bytes(explorer.image.value)
    before = explorer.updates
    explorer.controls["load"].value = 0.7
    assert explorer.figure is fig and list(explorer._axes) == axes and len(fig.axes) == 3
    assert explorer.updates == before + 1
    assert bytes(explorer.image.value).startswith(PNG_MAGIC) and bytes(explorer.image.value) != png
    explorer.controls["load"].value = 0.9


def test_blitted_frame_matches_a_full_redraw(explorer):
    explorer.controls["hedge_ms"].value = 3.0    # same axis ranges: a blitted frame
    blitted = bytes(explorer.image.value)
    explorer._background = None                  # force a full redraw of the same state
    full = explorer._render()
    assert blitted == full
    explorer.controls["hedge_ms"].value = 5.0


def test_bench_steps_are_valid_controls():
    for name, value in BENCH_STEPS:
        assert name in ("load", "choices", "hedge_ms", "sla_ms", "mix")
        if name == "mix":
            assert value in bouncer_model.MIXES
