"""Headless tests of the explorers: set control values, read results, compare with theory.

Closed forms used as the independent reference: the M/M/1 time in system is exponential
with rate mu - lambda; Erlang C gives P(wait) for M/M/c; the roofline time is
max(flops / peak, bytes / bandwidth).
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from magnum_lib import hardware
from magnum_lib.widgets import catalog_model, queue_model
from magnum_lib.widgets.catalog_explorer import CatalogExplorer, catalog_explorer
from magnum_lib.widgets.queue_explorer import QueueExplorer, queue_explorer

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
JOBS = 20_000


# --- queue model: closed forms ------------------------------------------------------

@pytest.mark.parametrize("lam,mu", [(500.0, 666.7), (1.0, 10.0), (9.0, 10.0)])
def test_mm1_tail_is_exponential(lam, mu):
    for t in (0.0, 0.5 / (mu - lam), 3.0 / (mu - lam)):
        assert queue_model.mmc_sojourn_tail(t, 1, lam, mu) == pytest.approx(math.exp(-(mu - lam) * t), rel=1e-12)


@pytest.mark.parametrize("lam,mu", [(500.0, 666.7), (2.0, 3.0)])
def test_mm1_p99_closed_form(lam, mu):
    assert queue_model.mmc_sojourn_quantile(0.99, 1, lam, mu) == pytest.approx(math.log(100) / (mu - lam), rel=1e-9)


@pytest.mark.parametrize("c,lam,mu", [(2, 3.0, 2.0), (4, 10.0, 3.0), (10, 8.0, 1.0)])
def test_mmc_tail_properties(c, lam, mu):
    ts = np.linspace(0.0, 20.0 / mu, 50)
    tail = [queue_model.mmc_sojourn_tail(t, c, lam, mu) for t in ts]
    assert tail[0] == pytest.approx(1.0)
    assert all(a >= b for a, b in itertools.pairwise(tail)), "a tail probability never increases"
    # Mean of a non-negative variable = integral of its tail; Erlang C gives it independently.
    erlang = queue_model.theory.erlang_c(c, lam, mu)
    mean_theory = erlang / (c * mu - lam) + 1.0 / mu
    t = np.linspace(0.0, 60.0 / min(mu, c * mu - lam), 20001)
    mean_numeric = np.trapezoid([queue_model.mmc_sojourn_tail(x, c, lam, mu) for x in t], t)
    assert mean_numeric == pytest.approx(mean_theory, rel=1e-4)


def test_tail_branch_where_wait_and_service_rates_coincide():
    # c*mu - lam == mu takes the (1 + mu t) e^{-mu t} branch; it must join its neighbours.
    c, mu, t = 2, 3.0, 0.4
    at = queue_model.mmc_sojourn_tail(t, c, mu, mu)
    near = queue_model.mmc_sojourn_tail(t, c, mu * (1 + 1e-7), mu)
    assert at == pytest.approx(near, rel=1e-5)


def test_quantile_rejects_bad_q():
    for q in (0.0, 1.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="q must be in"):
            queue_model.mmc_sojourn_quantile(q, 1, 1.0, 2.0)


@pytest.mark.parametrize("c,lam", [(1, 333.0), (2, 500.0), (4, 500.0)])
def test_simulated_scenario_agrees_with_theory(c, lam):
    # Loads <= 0.5: at higher load successive latencies are so correlated that 20,000 pods
    # pin the p99 down only to ~10% (one standard deviation at load 0.75).
    sc = queue_model.evaluate(lam, 1.5, c, jobs=JOBS, seed=3)
    assert sc.stable and sc.result is not None
    assert sc.load == pytest.approx(lam * 1.5e-3 / c)
    assert sc.p_wait == pytest.approx(sc.theory_p_wait, abs=0.03)
    assert sc.mean_ms == pytest.approx(sc.theory_mean_ms, rel=0.08)
    assert sc.p99_ms == pytest.approx(sc.theory_p99_ms, rel=0.12)
    # Independent M/M/1 reference for c = 1.
    if c == 1:
        mu = 1e3 / 1.5
        assert sc.theory_p99_ms == pytest.approx(math.log(100) / (mu - lam) * 1e3, rel=1e-9)


def test_unstable_scenario_has_no_result():
    sc = queue_model.evaluate(1000.0, 1.0, 1, jobs=1000)
    assert not sc.stable and sc.result is None and sc.load == pytest.approx(1.0)
    assert math.isnan(sc.p99_ms) and not sc.sla_met
    assert sc.latencies_ms().size == 0


@pytest.mark.parametrize("kwargs,field", [
    ({"arrival_rate": 0.0}, "arrival_rate"), ({"arrival_rate": -5.0}, "arrival_rate"),
    ({"arrival_rate": float("nan")}, "arrival_rate"), ({"decision_ms": 0.0}, "decision_ms"),
    ({"decision_ms": float("inf")}, "decision_ms"), ({"replicas": 0}, "replicas"),
    ({"replicas": 1.5}, "replicas"), ({"replicas": True}, "replicas"),
])
def test_evaluate_rejects_bad_values(kwargs, field):
    args = {"arrival_rate": 100.0, "decision_ms": 1.0, "replicas": 1, **kwargs}
    with pytest.raises(ValueError, match=field):
        queue_model.evaluate(**args, jobs=1000)


@pytest.mark.parametrize("bad", ["fast", None, True])
def test_evaluate_rejects_non_numbers(bad):
    with pytest.raises(TypeError, match="arrival_rate"):
        queue_model.evaluate(bad, 1.0, 1, jobs=1000)


# --- queue explorer -------------------------------------------------------------------

@pytest.fixture(scope="module")
def qx() -> QueueExplorer:
    return queue_explorer(jobs=JOBS, seed=0)


def _reset(explorer: QueueExplorer, arrival_rate=500.0, decision_ms=1.5, replicas=1):
    explorer.controls["arrival_rate"].value = arrival_rate
    explorer.controls["decision_ms"].value = decision_ms
    explorer.controls["replicas"].value = replicas


def test_explorer_exposes_widget_controls_result(qx):
    import ipywidgets as widgets

    assert isinstance(qx.widget, widgets.Box)
    assert set(qx.controls) == {"arrival_rate", "decision_ms", "replicas"}
    assert all(not c.continuous_update for c in qx.controls.values())
    _reset(qx)
    assert qx.result is not None and qx.result.jobs == JOBS
    assert bytes(qx.image.value).startswith(PNG_MAGIC)
    assert "p99" in qx.readout.value and "Erlang C" in qx.readout.value


def test_more_replicas_lower_the_p99(qx):
    _reset(qx)
    p99 = []
    for c in (1, 2, 4):
        qx.controls["replicas"].value = c
        p99.append(qx.result.p99)
    assert p99[0] > p99[1] > p99[2] * 0.999
    # ... but never below the decision floor ln(100) * d (exponential decisions).
    assert qx.scenario.theory_p99_ms >= math.log(100) * 1.5 - 1e-9


def test_higher_arrival_rate_raises_latency(qx):
    _reset(qx)
    lows = qx.result.time_in_system_mean
    qx.controls["arrival_rate"].value = 600.0
    assert qx.result.time_in_system_mean > lows
    assert qx.scenario.load == pytest.approx(0.9)


def test_overload_shows_unstable_message_and_recovers(qx):
    _reset(qx)
    qx.controls["arrival_rate"].value = 2000.0   # 3x the capacity of one 1.5 ms scheduler
    assert qx.result is None and qx.scenario.load >= 1
    assert "unstable" in qx.readout.value and "without bound" in qx.readout.value
    assert bytes(qx.image.value).startswith(PNG_MAGIC)
    qx.controls["replicas"].value = 4              # 2000 / (4 * 666.7) = 0.75: stable again
    assert qx.result is not None and qx.scenario.load == pytest.approx(0.75)
    assert "unstable" not in qx.readout.value


def test_figure_is_reused_not_recreated(qx):
    _reset(qx)
    fig, axes, n_artists = qx.figure, list(qx.figure.axes), len(qx.figure.axes[0].get_children())
    png_before, updates = qx.image.value, qx.updates
    qx.controls["decision_ms"].value = 1.0
    qx.controls["arrival_rate"].value = 3000.0     # unstable
    qx.controls["arrival_rate"].value = 400.0
    assert qx.figure is fig and qx.figure.axes == axes
    assert len(qx.figure.axes[0].get_children()) == n_artists
    assert qx.updates == updates + 3
    assert qx.image.value != png_before


def test_same_setting_same_answer(qx):
    _reset(qx, replicas=2)
    first = qx.result.p99
    _reset(qx, replicas=3)
    _reset(qx, replicas=2)
    assert qx.result.p99 == first


def test_sla_verdict_matches_p99():
    ex = queue_explorer(jobs=5000, seed=1, arrival_rate=100.0, decision_ms=0.5)
    assert ex.scenario.p99_ms < 5.0 and ex.scenario.sla_met and "SLA met" in ex.readout.value
    ex.controls["decision_ms"].value = 3.0
    assert ex.scenario.p99_ms > 5.0 and not ex.scenario.sla_met and "SLA missed" in ex.readout.value


@pytest.mark.parametrize("jobs", [0, 99, 2.5, True])
def test_explorer_rejects_bad_job_counts(jobs):
    with pytest.raises(ValueError, match="jobs"):
        queue_explorer(jobs=jobs)


# --- catalog model and explorer ---------------------------------------------------------

@pytest.fixture(scope="module")
def catalog():
    return hardware.load_catalog()


def test_roofline_is_min_of_peak_and_bandwidth(catalog):
    acc = catalog["h100_sxm"]
    ridge = acc.peak("bf16") / acc.mem_bandwidth_Bps
    i = np.array([ridge / 10, ridge, ridge * 10])
    got = catalog_model.roofline(acc, "bf16", i)
    assert got[0] == pytest.approx(ridge / 10 * acc.mem_bandwidth_Bps)
    assert got[1] == pytest.approx(acc.peak("bf16")) and got[2] == pytest.approx(acc.peak("bf16"))


def test_request_scenario_memory_and_compute_bound(catalog):
    acc = catalog["mi300x"]
    mem = catalog_model.evaluate(catalog, "mi300x", 1e12, 10e9, "bf16")
    assert mem.cost.bound == "memory" and mem.cost.time_s == pytest.approx(10e9 / acc.mem_bandwidth_Bps)
    comp = catalog_model.evaluate(catalog, "MI300X", 1e15, 1e9, "bf16")
    assert comp.cost.bound == "compute" and comp.cost.time_s == pytest.approx(1e15 / acc.peak("bf16"))
    assert comp.achieved_flops == pytest.approx(acc.peak("bf16"))
    assert set(comp.others) == {k for k, a in catalog.items() if "bf16" in a.peak_flops}


def test_request_on_a_device_without_the_precision(catalog):
    sc = catalog_model.evaluate(catalog, "k80", 1e12, 1e9, "bf16")
    assert sc.cost is None and "bf16" in sc.error and math.isnan(sc.achieved_flops)


@pytest.mark.parametrize("flops,nbytes,field", [(0.0, 1e9, "flops"), (-1.0, 1e9, "flops"),
                                                (1e9, float("nan"), "bytes_moved"), (1e9, 0, "bytes_moved")])
def test_request_rejects_bad_sizes(catalog, flops, nbytes, field):
    with pytest.raises(ValueError, match=field):
        catalog_model.evaluate(catalog, "h100_sxm", flops, nbytes)


def test_unknown_device_is_a_clear_error(catalog):
    with pytest.raises(ValueError, match="tpu_v9"):
        catalog_model.evaluate(catalog, "tpu_v9", 1e9, 1e9)


def test_claim_rows_only_for_that_device(catalog):
    rows = catalog_model.claim_rows(catalog, "h100")
    assert rows and {r["device"] for r in rows} == {"h100_sxm"}
    assert catalog_model.claim_rows(catalog, "k80") == []


@pytest.fixture(scope="module")
def cx(catalog) -> CatalogExplorer:
    return catalog_explorer(catalog)


def test_catalog_explorer_drives_headless(cx, catalog):
    assert set(cx.controls) == {"device", "precision", "gflop", "gbytes"}
    cx.controls["precision"].value = "bf16"
    cx.controls["gflop"].value = 1000.0
    cx.controls["gbytes"].value = 10.0
    cx.controls["device"].value = "h100_sxm"
    t_h100 = cx.result.time_s
    assert t_h100 == pytest.approx(10e9 / catalog["h100_sxm"].mem_bandwidth_Bps)
    assert "peak_tflops" in cx.readout.value and "989" in cx.readout.value
    fig, png = cx.figure, cx.image.value
    cx.controls["device"].value = "mi300x"
    assert cx.result.time_s < t_h100 and cx.figure is fig and cx.image.value != png
    cx.controls["device"].value = "k80"
    assert cx.result is None and "not available" in cx.readout.value
    assert "no figures" in cx.readout.value
    cx.controls["precision"].value = "fp32"
    assert cx.result is not None
    cx.controls["gflop"].value = 1e6
    cx.controls["gbytes"].value = 1e-3
    assert cx.result.bound == "compute"
    assert cx.result.time_s == pytest.approx(1e15 / catalog["k80"].peak("fp32"))
