"""Headless tests of the gossip explorer (notebook 05) and its model.

Independent references: push gossip reaches everyone in log_(1+k) N + ln N / k rounds
(within -1..+2 of the simulated mean); the informed set grows at most (1 + k)-fold per
round, so a majority of N needs at least log_(1+k)(N/2) rounds; bandwidth is
fanout x datagram / interval; a partition of R rounds delays "everyone" past round R.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from magnum_lib.gossip import theory
from magnum_lib.gossip.dissemination import message_size
from magnum_lib.widgets import gossip_model
from magnum_lib.widgets.gossip_explorer import BENCH_STEPS, GossipExplorer, gossip_explorer

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# --- model ----------------------------------------------------------------------------

def test_scenario_agrees_with_push_theory():
    sc = gossip_model.evaluate(4096, 1, 1.0, 0.0, 0)
    assert sc.ok and sc.theory_applies
    expected = theory.push_rounds_expected(4096, 1)
    assert expected - 1 <= sc.spread.rounds_to_all <= expected + 3  # one seed: a little wider
    assert abs(sc.spread.rounds_to_quorum - sc.theory_quorum_rounds) <= 1
    assert sc.quorum_ms == pytest.approx(sc.spread.rounds_to_quorum * 1.0)


def test_interval_scales_time_and_bandwidth_not_rounds():
    fast = gossip_model.evaluate(2000, 3, 1.0, 0.0, 0)
    slow = gossip_model.evaluate(2000, 3, 200.0, 0.0, 0)
    assert fast.spread.rounds_to_all == slow.spread.rounds_to_all
    assert slow.all_ms == pytest.approx(200 * fast.all_ms)
    assert fast.mbit_per_node == pytest.approx(200 * slow.mbit_per_node)
    # push: every node sends k datagrams of 88 B per round
    assert fast.mbit_per_node == pytest.approx(3 * message_size() * 8 * 1000 / 1e6)
    assert slow.stale_ms(0.99) == pytest.approx(200 * fast.stale_ms(0.99))


@pytest.mark.parametrize("k", [1, 2, 4, 8])
def test_more_fanout_never_slower_and_bounded_by_growth(k):
    lo = gossip_model.evaluate(10_000, k, 1.0, 0.0, 0)
    hi = gossip_model.evaluate(10_000, 2 * k, 1.0, 0.0, 0)
    assert hi.spread.rounds_to_all <= lo.spread.rounds_to_all
    assert lo.spread.rounds_to_quorum >= math.log(5_000) / math.log(1 + k) - 1e-9


def test_partition_delays_everyone_and_stretches_staleness():
    calm = gossip_model.evaluate(2000, 2, 1.0, 0.0, 0)
    cut = gossip_model.evaluate(2000, 2, 1.0, 0.0, 40)
    assert not cut.theory_applies
    assert cut.spread.rounds_to_all > 40 > calm.spread.rounds_to_all
    assert cut.stale_ms(0.99) >= 35 > calm.stale_ms(0.99)
    grid = cut.grid()
    side = math.ceil(math.sqrt(2000))
    assert grid.shape == (side, side) and np.isnan(grid.ravel()[2000:]).all()
    # node 0 is in the top half: the bottom half (nodes >= 1000) learns only after the heal
    assert np.nanmin(grid.ravel()[1000:2000]) > 40 and grid.ravel()[0] == 0


def test_loss_slows_spread():
    clean = gossip_model.evaluate(4000, 2, 1.0, 0.0, 0)
    lossy = gossip_model.evaluate(4000, 2, 1.0, 0.5, 0)
    assert lossy.spread.rounds_to_all > clean.spread.rounds_to_all


@pytest.mark.parametrize("kwargs,word", [
    ({"nodes": 100, "fanout": 100}, "fanout"), ({"loss": 1.0}, "loss"), ({"interval_ms": 0.0}, "interval"),
    ({"mode": "shout"}, "mode"), ({"partition_rounds": -1}, "partition"),
])
def test_bad_settings_give_a_message_not_an_exception(kwargs, word):
    args = {"nodes": 500, "fanout": 2, "interval_ms": 1.0, "loss": 0.0, "partition_rounds": 0, **kwargs}
    sc = gossip_model.evaluate(**args)
    assert not sc.ok and word in sc.message and sc.spread is None
    assert math.isnan(sc.quorum_ms) and math.isnan(sc.mbit_per_node) and sc.grid().shape == (1, 1)


def test_fanout_for_quorum_and_message_bytes():
    k = gossip_model.fanout_for_quorum(600_000, 2)
    assert gossip_model.mean_field_quorum_rounds(600_000, k) <= 2 < gossip_model.mean_field_quorum_rounds(600_000, k - 1)
    assert (1 + k) ** 2 >= 300_000  # growth bound: (1 + k)^2 must cover a majority
    assert gossip_model.fanout_for_quorum(10_000, 5) == 5
    assert gossip_model.message_bytes_for(67e6, 3, 1e-3) == pytest.approx(67e6 / 8 / 3000)


def test_run_live_anywhere_works_outside_and_inside_an_event_loop():
    import asyncio

    kw = dict(endpoints=4, interval="5ms", duration="0.5s", fanout=2, seed=0)
    assert gossip_model.run_live_anywhere(**kw).converged

    async def inside():
        return gossip_model.run_live_anywhere(**kw)

    assert asyncio.run(inside()).converged


# --- explorer -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gx() -> GossipExplorer:
    return gossip_explorer(seed=0)


def _reset(x: GossipExplorer, **values):
    base = {"nodes": 4096, "fanout": 1, "interval_ms": 1.0, "loss": 0.0, "partition": 0, "mode": "push"}
    for name, value in {**base, **values}.items():
        x.controls[name].value = value


def test_explorer_exposes_widget_controls_result(gx):
    import ipywidgets as widgets

    assert isinstance(gx.widget, widgets.Box)
    assert set(gx.controls) == {"nodes", "fanout", "interval_ms", "loss", "partition", "mode"}
    assert all(not c.continuous_update for n, c in gx.controls.items() if n != "mode")
    _reset(gx)
    assert gx.result is not None and gx.result.nodes == 4096
    assert bytes(gx.image.value).startswith(PNG_MAGIC)
    assert "magnum-readout" in gx.readout.value and "mean field" in gx.readout.value
    assert gx.css_class == "magnum-gossip-explorer"


def test_sliders_move_the_model(gx):
    _reset(gx)
    q1 = gx.result.rounds_to_quorum
    gx.controls["fanout"].value = 4
    assert gx.result.rounds_to_quorum < q1
    gx.controls["mode"].value = "pushpull"
    assert gx.result.mode == "pushpull"
    gx.controls["interval_ms"].value = 10.0
    assert gx.scenario.quorum_ms == pytest.approx(10 * gx.result.rounds_to_quorum)
    gx.controls["partition"].value = 30
    assert gx.result.rounds_to_all > 30 and "theory n/a" in gx.readout.value
    _reset(gx)


def test_figure_is_reused_and_redrawn(gx):
    _reset(gx)
    fig, image, n = gx.figure, gx._image, gx.updates
    png = bytes(gx.image.value)
    gx.controls["nodes"].value = 900
    assert gx.figure is fig and gx._image is image and gx.updates == n + 1
    assert gx._image.get_array().shape == (30, 30)
    assert bytes(gx.image.value) != png
    _reset(gx)


def test_fanout_too_big_for_staleness_panel_is_handled():
    x = gossip_explorer(nodes=200, fanout=16)
    assert x.scenario.ok and x.scenario.stale is not None
    sc = gossip_model.evaluate(200, 150, 1.0, 0.0, 0)
    assert sc.ok and sc.stale is None and math.isnan(sc.stale_ms(0.5))


def test_invalid_state_shows_a_message_and_recovers():
    x = gossip_explorer(nodes=100, fanout=16)
    x.controls["loss"].value = 0.9
    assert x.result is not None
    x._error_text.set_visible(False)
    bad = gossip_model.evaluate(100, 100, 1.0, 0.0, 0)
    x.draw(bad)
    assert x._error_text.get_visible() and "fanout" in x._error_text.get_text()
    assert "invalid" in x.readout_html(bad)
    x.controls["fanout"].value = 2
    assert x.result is not None and not x._error_text.get_visible()


def test_bench_steps_are_valid_controls(gx):
    for name, value in BENCH_STEPS:
        assert name in gx.controls
        gx.controls[name].value = value
        assert gx.scenario.ok
    _reset(gx)
