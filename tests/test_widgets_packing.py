"""Headless tests of the packing explorer (notebook 06) and its model.

Independent references: a batch under the exclusive policy has utilization exactly
R / (R + X) (compute over compute plus transfers); no schedule can be busier than the work
offered (utilization < load); utilization counted from the Gantt chart's idle gaps equals
compute over makespan.
"""
from __future__ import annotations

import numpy as np
import pytest

from magnum_lib.graph import packing
from magnum_lib.widgets import packing_model as M
from magnum_lib.widgets.packing_explorer import BENCH_STEPS, PackingExplorer, packing_explorer

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# --- model ------------------------------------------------------------------------------

@pytest.mark.parametrize("spread,gb,seed", [(0.0, 8.0, 0), (0.5, 20.0, 1), (1.5, 4.0, 2)])
def test_exclusive_batch_matches_its_closed_form(spread, gb, seed):
    sc = M.evaluate(30, spread, gb, None, "mtia_v2", seed=seed, curve_jobs=20)
    assert sc.utilization["exclusive"] == pytest.approx(sc.exclusive_theory, rel=1e-12)
    # Packing overlaps transfers, so it is never worse than one job at a time here.
    assert sc.utilization["packed"] >= sc.utilization["exclusive"] - 1e-12


@pytest.mark.parametrize("load", [0.3, 0.6, 0.9, 0.99])
def test_utilization_never_exceeds_the_offered_load(load):
    base = M.graphs(40, 0.8, 8.0, "mtia_v2", seed=4)
    jobs = M.with_load(base, load, seed=4)
    span = jobs.arrival_ns.max() - jobs.arrival_ns.min()
    assert span == pytest.approx(base.runtime_ns.sum() / load, abs=1)
    for policy, res in packing.compare_policies(jobs).items():
        assert res.utilization < load, policy


def test_batch_arrivals_are_all_at_zero_and_structure_is_kept():
    base = M.graphs(10, 0.5, 8.0, "h100_sxm", seed=1)
    loaded = M.with_load(base, 0.7, seed=1)
    assert (M.with_load(loaded, None).arrival_ns == 0).all()
    np.testing.assert_array_equal(loaded.runtime_ns, base.runtime_ns)
    np.testing.assert_array_equal(loaded.reserve_bytes, base.reserve_bytes)
    with pytest.raises(ValueError, match="load"):
        M.with_load(base, 0.0)


@pytest.mark.parametrize("policy", packing.POLICIES)
def test_utilization_two_ways_and_schedule_rules(policy):
    res = packing.pack(M.with_load(M.graphs(25, 1.0, 30.0, "mtia_v2", seed=2), 0.8, seed=2), policy)
    idle = M.idle_intervals(res)
    assert (idle[:, 1] > idle[:, 0]).all()
    assert 1 - (idle[:, 1] - idle[:, 0]).sum() / res.makespan_ns == pytest.approx(res.utilization, abs=1e-12)
    order = np.argsort(res.start_ns)
    assert (res.start_ns[order][1:] >= res.end_ns[order][:-1]).all(), "two layers overlap"
    assert res.peak_memory_bytes <= res.jobs.capacity_bytes
    resident = M.max_resident(res)
    assert resident >= 1
    if policy == "exclusive":
        assert resident == 1
    else:  # never more graphs than fit side by side, smallest first
        held = np.sort(res.held_bytes)
        assert resident <= np.searchsorted(np.cumsum(held), res.jobs.capacity_bytes, side="right")


def test_devices_and_memory_pressure():
    cat = M.device_catalog()
    assert cat[M.ARTICLE_MTIA].memory_bytes == 32_000_000_000
    assert cat[M.ARTICLE_MTIA].memory_type == "HBM2e"
    assert cat["mtia_v2"].memory_bytes == 128_000_000_000
    assert {key for _, key in M.DEVICES} <= set(cat)
    assert M.memory_fraction(16.0, "mtia_v2") == pytest.approx(0.125)
    assert M.memory_fraction(16.0, M.ARTICLE_MTIA) == pytest.approx(0.5)
    assert M.memory_fraction(500.0, "h100_sxm") == 1.0


def test_less_memory_means_fewer_resident_graphs_and_less_packing():
    small = M.evaluate(100, 1.0, 16.0, None, M.ARTICLE_MTIA, curve_jobs=20)
    large = M.evaluate(100, 1.0, 16.0, None, "mtia_v2", curve_jobs=20)
    assert small.max_resident < large.max_resident
    assert small.utilization["packed"] < M.TARGET <= large.utilization["packed"]
    assert not small.meets_target and large.meets_target


def test_packed_utilization_falls_as_memory_pressure_rises():
    utils = [M.evaluate(60, 1.0, gb, None, "mtia_v2", curve_jobs=20).utilization["packed"]
             for gb in (4.0, 32.0, 64.0, 128.0)]
    assert utils[0] > M.TARGET > utils[-1]
    assert utils[0] >= utils[2] >= utils[3] - 1e-12


def test_load_curve_is_bounded_cached_and_saturates():
    curve = M.load_curve(0.5, 8.0, "mtia_v2", 40, 0)
    assert M.load_curve(0.5, 8.0, "mtia_v2", 40, 0) is curve
    under = curve.loads < 1
    for p in packing.POLICIES:
        assert (curve.utilization[p][under] < curve.loads[under]).all(), p
    assert curve.batch_utilization["packed"] >= curve.utilization["packed"][under].max()


def test_a_graph_filling_the_device_is_a_message_not_a_crash():
    sc = M.evaluate(10, 0.5, 64.0, None, M.ARTICLE_MTIA, curve_jobs=20)
    assert sc.memory_fraction == 1.0 and sc.max_resident == 1
    assert "only one graph fits" in sc.message
    assert sc.utilization["packed"] == pytest.approx(sc.utilization["exclusive"])
    assert M.evaluate(10, 0.5, 4.0, None, "mtia_v2", curve_jobs=20).message == ""
    for bad in (0.0, -3.0, True, "8"):
        with pytest.raises(ValueError, match="mean_gb"):
            M.evaluate(10, 0.5, bad)


# --- explorer ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def explorer():
    return packing_explorer(curve_jobs=30)


def test_factory_builds_and_renders(explorer):
    assert isinstance(explorer, PackingExplorer)
    assert bytes(explorer.image.value).startswith(PNG_MAGIC)
    assert "magnum-packing-explorer" in explorer.widget._dom_classes
    html = explorer.readout.value
    assert html.startswith("<div class='magnum-readout'>") and "95%" in html and "theory" in html
    assert explorer.result is explorer.scenario.results["packed"]


def test_controls_drive_the_model_and_reuse_the_figure(explorer):
    fig, image = explorer.figure, explorer.image
    updates = explorer.updates
    explorer.controls["jobs"].value = 20
    assert explorer.scenario.jobs == 20 and len(explorer.result.jobs) == 20
    explorer.controls["load"].value = 0.8
    assert explorer.scenario.load == 0.8
    assert explorer.result.utilization < 0.8
    assert explorer._here.get_xdata()[0] == 0.8
    explorer.controls["policy"].value = "exclusive"
    assert explorer.result.policy == "exclusive"
    explorer.controls["device"].value = "h100_sxm"
    assert explorer.scenario.capacity_bytes == 80_000_000_000
    assert explorer.figure is fig and explorer.image is image
    assert explorer.updates == updates + 4
    for name, value in (("load", "batch"), ("policy", "packed"), ("device", "mtia_v2"), ("jobs", 12)):
        explorer.controls[name].value = value
    assert explorer.scenario.load is None


def test_explorer_shows_the_degenerate_state(explorer):
    explorer.controls["device"].value = M.ARTICLE_MTIA
    explorer.controls["mean_gb"].value = 64.0
    assert "only one graph fits" in explorer.readout.value
    assert explorer._note.get_visible()
    explorer.controls["mean_gb"].value = 8.0
    explorer.controls["device"].value = "mtia_v2"
    assert not explorer._note.get_visible()


def test_gantt_draws_every_layer_and_transfer(explorer):
    res = explorer.result
    assert len(explorer._layers.get_paths()) == res.jobs.runtime_ns.size
    assert len(explorer._xfers.get_paths()) == int((res.xfer_start_ns >= 0).sum())
    assert len(explorer._idle.get_paths()) == len(M.idle_intervals(res))


def test_bench_steps_name_real_controls_and_values(explorer):
    for name, value in BENCH_STEPS:
        control = explorer.controls[name]
        options = getattr(control, "options", None)
        if options is not None:
            values = [o[1] if isinstance(o, tuple) else o for o in options]
            assert value in values, (name, value)
        else:
            assert control.min <= value <= control.max, (name, value)
