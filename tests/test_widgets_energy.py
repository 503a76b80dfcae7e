"""Headless tests of the energy explorer (notebook 09): the model's closed forms drive it."""
import pytest

from magnum_lib.energy import DvfsModel
from magnum_lib.widgets import energy_model
from magnum_lib.widgets.energy_explorer import EnergyExplorer, energy_explorer

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_compute_bound_at_slack_two_halves_the_clock():
    sc = energy_model.evaluate(compute_ratio=4.0, static_fraction=0.3, slack=2.0)
    m = DvfsModel(static_fraction=0.3)
    assert sc.sla_clock == pytest.approx(0.5)
    # energy = power x time = (0.3 + 0.7 * 0.5 * 0.65^2) x 2
    assert 1 - sc.sla_energy_saving == pytest.approx((0.3 + 0.7 * 0.5 * 0.65 ** 2) * 2)
    assert sc.optimal_clock == pytest.approx(m.optimal_clock(), abs=1e-3)


def test_memory_bound_keeps_its_run_time():
    sc = energy_model.evaluate(compute_ratio=0.5, slack=2.0)
    assert sc.time_ratio.min() == pytest.approx(1.0) and sc.time_ratio.max() == pytest.approx(1.0)
    assert sc.sla_energy_saving == pytest.approx(1 - sc.sla_power_ratio)


def test_explorer_answers_every_control():
    e = energy_explorer()
    assert isinstance(e, EnergyExplorer) and bytes(e.image.value).startswith(PNG_MAGIC)
    first = e.scenario.sla_energy_saving
    e.controls["compute_ratio"].value = 0.5
    assert e.scenario.sla_energy_saving > first
    # memory-bound: even with no slack, the clock can halve without stretching the run
    e.controls["slack"].value = 1.0
    assert e.scenario.sla_clock == pytest.approx(0.5) and e.scenario.sla_energy_saving > 0.2
    e.controls["compute_ratio"].value = 4.0
    assert e.scenario.sla_clock == pytest.approx(1.0) and e.scenario.sla_energy_saving == pytest.approx(0.0)
    e.controls["static_fraction"].value = 0.0
    assert "energy saved" in e.readout.value and e.updates == 5


def test_bad_model_input_is_refused():
    with pytest.raises(ValueError):
        energy_model.evaluate(compute_ratio=0.0)
