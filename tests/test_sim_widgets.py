"""The whole-system explorer (notebook 07), driven without a browser."""
import numpy as np

from magnum_lib.widgets import system_model
from magnum_lib.widgets.system_explorer import system_explorer


def test_explorer_answers_and_follows_its_controls():
    e = system_explorer(seed=0)
    first = e.result
    assert first is not None and e.image.value[:4] == b"\x89PNG"
    assert "decision latency" in e.readout.value
    e.controls["load"].value = 0.3
    low = e.result
    assert low["rate_per_region"] < first["rate_per_region"]
    e.controls["rtt_us"].value = 2000.0
    assert e.result["decision_latency_ms"]["breakdown"]["rtt"]["mean"] > 0.9
    e.controls["preset"].value = "borg_like"
    assert "borg_like" in e.readout.value
    assert e.updates == 4


def test_model_matches_the_simulator_and_reports_bad_settings():
    sc = system_model.evaluate("magnum_v2", load=0.5, seed=1)
    assert sc.error is None and np.all(np.diff(sc.latency_ms) >= 0)
    assert sc.summary["requests"]["started"] == sc.latency_ms.size
    bad = system_model.evaluate("magnum_v2", load=0.5, schedulers=0)
    assert bad.summary is None and "schedulers" in bad.error
