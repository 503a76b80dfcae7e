"""Headless tests of the Oracle explorer (notebook 02) and its model.

Independent references: the LP bound is a lower bound of every plan and the exact
planners reach it; the heatmap's devices add up to the placed jobs' demand, computed from
the snapshot alone; the article's score puts every communicating job on the slowest tier;
a larger bandwidth weight never moves traffic off the fastest tier (flow); caps and bad
values give a message, not an exception; the figure is reused.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from magnum_lib.planner.plan import plan
from magnum_lib.planner.snapshot import BANDWIDTH_TIERS_GBPS, make_snapshot
from magnum_lib.widgets import oracle_model
from magnum_lib.widgets.oracle_explorer import BENCH_STEPS, OracleExplorer, oracle_explorer, readout_html

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# --- model ----------------------------------------------------------------------------

def test_snapshot_is_the_generator_with_racks_of_32():
    snap = oracle_model.snapshot(16, 128, 0)
    ref = make_snapshot(512, 128, seed=0, group_size=32)
    assert snap.n_nodes == 512 and snap.n_groups == 16
    np.testing.assert_array_equal(snap.node_free, ref.node_free)
    np.testing.assert_array_equal(snap.job_comm, ref.job_comm)
    assert oracle_model.snapshot(16, 128, 0) is snap  # cached: weight and algo re-plan the same fleet


@pytest.mark.parametrize("algo", ["greedy", "article", "assignment", "flow", "lp"])
def test_every_algorithm_is_bounded_below_and_heatmap_adds_up(algo):
    sc = oracle_model.evaluate(8, 48, 0.5, algo, seed=3)
    assert sc.ok and sc.message == ""
    assert sc.cost >= sc.lower_bound - 1e-9 * max(1.0, sc.lower_bound)
    assert sc.ratio == pytest.approx(1.0 + sc.gap)
    assert sc.planning_ms > 0
    # the heatmap, from the snapshot alone: devices demanded by the placed jobs
    placed = sc.plan.job_node >= 0
    assert np.nansum(sc.grid) == sc.snap.job_demand[placed].sum()
    assert sc.grid.shape[0] == len(BANDWIDTH_TIERS_GBPS)
    assert np.isnan(sc.grid).sum() == sc.grid.size - sc.snap.n_groups  # NaN pads the short tiers


def test_rack_grid_rows_are_bandwidth_tiers():
    snap = oracle_model.snapshot(12, 64, 1)
    p = plan(snap, "flow")
    grid, ids = oracle_model.rack_grid(snap, p.job_node)
    for row, bw in enumerate(BANDWIDTH_TIERS_GBPS):
        members = ids[row][ids[row] >= 0]
        assert np.all(snap.group_bandwidth[members] == bw)
    assert sorted(ids[ids >= 0].tolist()) == list(range(snap.n_groups))


def test_exact_planners_agree_and_greedy_is_not_better():
    costs = {a: oracle_model.evaluate(16, 128, 0.5, a, capped=False).cost
             for a in ("assignment", "flow", "lp", "greedy")}
    for a in ("assignment", "lp"):
        assert costs[a] == pytest.approx(costs["flow"], rel=1e-9)
    assert costs["greedy"] >= costs["flow"] * (1 - 1e-9)
    assert oracle_model.evaluate(16, 128, 0.5, "flow").gap == 0.0


def test_article_sends_all_traffic_to_the_slowest_tier():
    art = oracle_model.evaluate(16, 128, 0.5, "article")
    flow = oracle_model.evaluate(16, 128, 0.5, "flow")
    assert art.heavy_fast_share == 0.0 and art.mean_bandwidth_heavy == min(BANDWIDTH_TIERS_GBPS)
    assert flow.mean_bandwidth_heavy > art.mean_bandwidth_heavy
    assert art.gap > 1.0


def test_more_bandwidth_weight_moves_traffic_to_faster_racks():
    comm = [oracle_model.evaluate(16, 128, w, "flow").plan.metrics.comm_time_s for w in (0.0, 0.5, 1.0)]
    assert comm[0] >= comm[1] >= comm[2]  # the optimum of a weighted sum: monotone in the weight
    assert comm[0] > comm[2]


def test_reference_points_cover_every_algorithm_even_above_the_caps():
    ref = oracle_model.reference_points(4, 96, 0.5)  # 96 jobs: above the lp cap
    assert set(ref) == set(oracle_model.ALGORITHMS)
    for algo in ("assignment", "flow", "lp"):
        assert ref[algo][1] == pytest.approx(1.0)
    assert ref["article"][1] > 1.0 and ref["greedy"][1] >= 1.0


@pytest.mark.parametrize("args,word", [
    ((48, 128, 0.5, "assignment"), "capped"), ((16, 128, 0.5, "lp"), "capped"),
    ((1, 64, 0.5, "flow"), "racks"), ((16, 10_000, 0.5, "flow"), "jobs"), ((16, 64, 1.5, "flow"), "weight"),
    ((16, 64, 0.5, "hungarian"), "algo"), ((16.5, 64, 0.5, "flow"), "racks"),
])
def test_refused_settings_give_a_message_not_an_exception(args, word):
    sc = oracle_model.evaluate(*args)
    assert not sc.ok and word in sc.message and sc.plan is None and sc.snap is None
    assert math.isnan(sc.cost) and math.isnan(sc.planning_ms)
    html = readout_html(sc)
    assert "magnum-readout" in html and word in html


def test_caps_lift_when_asked():
    sc = oracle_model.evaluate(16, 128, 0.5, "lp", capped=False)
    assert sc.ok and sc.gap == 0.0


# --- explorer -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def explorer():
    return oracle_explorer(seed=0)


def test_factory_builds_the_explorer_with_reference_points(explorer):
    assert isinstance(explorer, OracleExplorer)
    assert "magnum-oracle-explorer" in explorer.widget._dom_classes
    assert set(explorer.controls) == {"racks", "jobs", "weight", "algo"}
    assert set(explorer.reference) == set(oracle_model.ALGORITHMS)
    assert bytes(explorer.image.value).startswith(PNG_MAGIC)
    assert "<div class='magnum-readout'>" in explorer.readout.value


def test_controls_drive_the_model_and_the_figure_is_reused(explorer):
    fig, image = explorer.figure, explorer.image
    n0 = explorer.updates
    explorer.controls["algo"].value = "article"
    art = explorer.result
    assert art.algo == "article" and art.gap > 1.0 and "article" in explorer.readout.value
    explorer.controls["algo"].value = "flow"
    assert explorer.result.gap == 0.0 and "0 (optimal)" in explorer.readout.value
    explorer.controls["racks"].value = 8
    assert explorer.scenario.nodes == 256 and explorer.result.metrics.placed <= 256
    explorer.controls["racks"].value = 16
    assert explorer.updates == n0 + 4
    assert explorer.figure is fig and explorer.image is image
    assert len(explorer.figure.axes) == 2  # no new axes per change (no colorbar, no legend)
    assert len(explorer.history["flow"]) >= 2 and len(explorer.history["article"]) >= 1


def test_capped_setting_shows_a_message_then_recovers(explorer):
    explorer.controls["algo"].value = "assignment"
    explorer.controls["racks"].value = 48
    assert explorer.result is None and "capped" in explorer.readout.value
    assert bytes(explorer.image.value).startswith(PNG_MAGIC)
    explorer.controls["racks"].value = 16
    assert explorer.result is not None and explorer.result.gap == 0.0
    explorer.controls["algo"].value = "flow"


def test_history_is_bounded():
    ex = oracle_explorer(seed=1, racks=4, jobs=16, reference=False)
    for k in range(50):
        ex.controls["weight"].value = round((k % 20) * 0.05, 2)
    assert len(ex.history["flow"]) <= 40 and ex.reference == {}


def test_bench_steps_stay_within_the_caps():
    c = {"racks": 16, "jobs": 128, "weight": 0.5, "algo": "flow"}
    for name, value in BENCH_STEPS:
        c[name] = value
        cap = oracle_model.CAPS.get(c["algo"])
        if cap:
            assert c["racks"] * oracle_model.RACK_NODES <= cap["nodes"] and c["jobs"] <= cap["jobs"]
    assert {"flow", "assignment"} <= {v for n, v in BENCH_STEPS if n == "algo"}
