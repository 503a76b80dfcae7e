"""Downclocking by SLA slack in the whole-system simulator (claim C46, notebook 09)."""
import numpy as np
import pytest

from magnum_lib.base.validate import ParameterError
from magnum_lib.energy import DvfsModel, clock_for_deadline
from magnum_lib.sim import make_config, simulate
from magnum_lib.sim.model import class_costs

KEYS = ("h100_sxm", "mi300x", "mtia_v2")


def _costs(clock, budget=0.5):
    return class_costs(make_config("magnum_v2", "classroom", clock=clock, clock_budget=budget), KEYS)


def test_top_clock_keeps_the_roofline_times_and_draws_at_most_the_tdp():
    t_tdp, e_tdp = _costs("tdp")
    t_top, e_top = _costs("top")
    ok = np.isfinite(t_tdp)
    assert np.array_equal(np.isfinite(t_top), ok)
    assert np.allclose(t_top[ok], t_tdp[ok], rtol=1e-12)
    assert np.all(e_top[ok] <= e_tdp[ok] * (1 + 1e-12))  # memory-bound work idles the cores


def test_sla_clock_stretches_within_the_budget_and_never_costs_energy():
    cfg = make_config("magnum_v2", "classroom", clock="sla", clock_budget=0.5)
    t_top, e_top = _costs("top")
    t_sla, e_sla = _costs("sla")
    ok = np.isfinite(t_top)
    assert np.all(t_sla[ok] >= t_top[ok] * (1 - 1e-12))
    assert np.all(e_sla[ok] <= e_top[ok] * (1 + 1e-12))
    for c, rc in enumerate(cfg.classes):
        for k in np.flatnonzero(ok[c]):
            if t_top[c, k] <= 0.5 * rc.sla_s:  # it could meet the budget: it still does
                assert t_sla[c, k] <= 0.5 * rc.sla_s * (1 + 1e-9)
    assert np.any(t_sla[ok] > t_top[ok] * 1.01), "some class must have been slowed"


def test_clock_for_deadline_never_goes_below_the_least_energy_clock():
    m = DvfsModel()
    assert clock_for_deadline(m, 1.0, 0.0, 100.0) == pytest.approx(m.optimal_clock(1.0, 0.0))
    assert clock_for_deadline(m, 1.0, 0.0, 1.25) == pytest.approx(0.8)
    assert clock_for_deadline(m, 1.0, 0.0, 0.5) == 1.0  # misses anyway: full speed


def test_downclocking_saves_energy_and_costs_sla_in_the_simulator():
    runs = {c: simulate("magnum_v2", cluster="classroom", duration_s=0.3, load=0.5, seed=2, clock=c, clock_budget=1.0)
            for c in ("top", "sla")}
    top, sla = runs["top"], runs["sla"]
    assert sla["energy_per_request_j"] < top["energy_per_request_j"]
    # a service allowed the whole SLA leaves no room for queueing: attainment falls on average
    # (one class may gain, as slower starts reshuffle which device a request lands on)
    mean = lambda r: np.mean(list(r["sla_attainment"].values()))  # noqa: E731
    assert mean(sla) < mean(top)


def test_same_result_on_both_backends():
    kw = dict(cluster="classroom", duration_s=0.1, load=0.5, seed=3, clock="sla")
    a, b = simulate("magnum_v2", backend="python", **kw), simulate("magnum_v2", backend="compiled", **kw)
    assert a["energy_j"] == b["energy_j"] and a["requests"] == b["requests"]


@pytest.mark.parametrize("kw", [dict(clock="fast"), dict(clock_budget=0.0), dict(clock_budget=2.0)])
def test_bad_clock_knobs_are_refused(kw):
    with pytest.raises(ParameterError):
        make_config("magnum_v2", "classroom", **kw)
