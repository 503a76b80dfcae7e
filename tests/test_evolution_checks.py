"""The claim checks of notebook 08 (C39-C44, :mod:`magnum_lib.checks.evolution`) and its exercises.

The judges are tested on synthetic measurements (each branch of the vocabulary), the measures
on bad input, and notebook 08's exercise checks against the solution (must pass), against what
the notebook shows above them (must fail) and against the naive answers (must fail).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from magnum_lib.base.validate import ParameterError
from magnum_lib.checks import evolution as ev
from magnum_lib.claims import NOT_REPRODUCED, REPRODUCED, SET_BY_INPUT

pytestmark = pytest.mark.once  # run once (make unit): the evolution exercises' checks; the presets' parity is tests/test_sim_core.py's

ROOT = Path(__file__).resolve().parents[1]


def test_growth_exponent_and_crossing():
    w = (0.5, 1.0, 2.0)
    assert ev.growth_exponent(w, [100, 200, 400]) == pytest.approx(1.0)
    assert ev.growth_exponent(w, [3.7, 3.7, 3.7]) == pytest.approx(0.0)
    assert ev.crossing_run_s(w, [100, 200, 400], 200) == pytest.approx(1.0)
    assert ev.crossing_run_s(w, [100, 200, 400], 300) == pytest.approx(2 ** (np.log(1.5) / np.log(2)) * 1.0)
    assert ev.crossing_run_s(w, [100, 200, 400], 50) is None


def _growing(p95, windows=(0.5, 1.0, 2.0), preset="borg_like"):
    return {"preset": preset, "windows_s": windows, "p95_ms": list(p95)}


def test_judge_growing_each_verdict():
    assert ev.judge_growing("C39", _growing([460, 920, 1840])).verdict == SET_BY_INPUT        # crosses 1 s
    assert ev.judge_growing("C39", _growing([46, 92, 184])).verdict == NOT_REPRODUCED         # grows, short of it
    assert ev.judge_growing("C39", _growing([950, 980, 1000])).verdict == REPRODUCED           # steady at ~1 s
    assert ev.judge_growing("C39", _growing([0.2, 0.2, 0.2])).verdict == NOT_REPRODUCED       # steady, far off
    v = ev.judge_growing("C41", _growing([12.5, 38.3, 125.7], (0.15, 0.3, 0.6), "cheetah"))
    assert v.verdict == SET_BY_INPUT and 0.3 < v.figures["crossing_run_s"] < 0.4


def _rounds(p95_at, slope, icept, r2=1.0, round_ms=3.7):
    sweep = (0.5, 1.0, 2.0, 5.0, 10.0)
    return {"preset": "magnum_v2", "round_ms": round_ms, "p95_ms": p95_at, "sweep_ms": sweep,
            "slope": slope, "intercept_ms": icept, "r2": r2}


def test_judge_round_each_verdict():
    assert ev.judge_round("C43", _rounds(3.71, 0.95, 0.25)).verdict == SET_BY_INPUT
    assert ev.judge_round("C43", _rounds(3.71, 0.05, 3.5)).verdict == REPRODUCED      # on it, and not the round's
    off = ev.judge_round("C43", _rounds(14.5, 0.95, 0.25, round_ms=15))
    assert off.verdict == NOT_REPRODUCED and "3.6 ms round" in off.because
    assert ev.judge_round("C42", _rounds(3.59, 0.95, 0.07)).verdict == NOT_REPRODUCED
    assert ev.judge_round("C42", _rounds(3.59, 0.95, 0.07, r2=0.5)).verdict == NOT_REPRODUCED


def test_judge_c44_each_verdict():
    base = {"leases": 25_000, "refused": 3, "right_calls": 0.99988, "right_calls_ci": (0.9996, 0.99996),
            "fixed": 3, "fix_ms_p50": 3.86, "fix_ms_max": 3.91, "round_ms": 3.7, "load": 0.3}
    assert ev.judge_c44(base).verdict == NOT_REPRODUCED
    assert ev.judge_c44({**base, "fix_ms_p50": 0.68, "fix_ms_max": 0.7}).verdict == REPRODUCED
    low = ev.judge_c44({**base, "right_calls": 0.94, "fix_ms_max": 0.7})
    assert low.verdict == NOT_REPRODUCED and "below the claim" in low.because
    assert "no refused lease" in ev.judge_c44({**base, "fixed": 0}).because


@pytest.mark.parametrize("bad", [(1.0,), (2.0, 1.0), (0.0, 1.0), "abc", 3])
def test_bad_windows(bad):
    with pytest.raises(ParameterError, match="windows"):
        ev.measure_windows("borg_like", bad)


def test_bad_rounds_and_load():
    with pytest.raises(ParameterError, match="round_ms"):
        ev.measure_rounds("magnum_v2", -1.0)
    with pytest.raises(ParameterError, match="sweep_ms"):
        ev.measure_rounds("magnum_v2", 3.7, sweep_ms=(1.0, 2.0))
    with pytest.raises(ParameterError, match="load"):
        ev.measure_c44(load=0)


def test_v2_with_its_features_off_is_v1():
    from magnum_lib.sim import simulate
    kw = dict(cluster="classroom", duration_s=0.05, seed=3)
    a = simulate("magnum_v2", **kw, **ev.V2_FEATURES_OFF)
    b = simulate("magnum_v1", **kw)
    assert a["decision_latency_ms"] == b["decision_latency_ms"]
    assert a["lease_failure_rate"] == b["lease_failure_rate"]


# --- notebook 08's exercises: the solution passes, what the notebook shows does not ----------

def _check_cell(name: str) -> str:
    nb = json.loads((ROOT / "notebooks" / "08_the_evolution.ipynb").read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if cell["cell_type"] == "code" and f'"{name}")' in src and "pending(" in src:
            return src
    raise AssertionError(f"no check cell for {name}")


def _passes(name: str, var: str, answer) -> bool:
    from magnum_lib.sim import simulate
    from magnum_lib.widgets import system_model
    done = []
    ns = {"np": np, "simulate": simulate, "system_model": system_model, "WORK": dict(ev.WORK),
          "pending": lambda a, n: a is None, "passed": done.append, var: answer}
    try:
        exec(compile(_check_cell(name), name, "exec"), ns)  # noqa: S102
    except AssertionError:
        return False
    return done == [name]


def _solution(name: str, var: str):
    ns = {"system_model": __import__("magnum_lib.widgets.system_model", fromlist=["x"])}
    exec((ROOT / "notebooks" / "solutions" / f"{name}.py").read_text(encoding="utf-8"), ns)  # noqa: S102
    return ns[var]


def test_ex1_solution_passes_and_the_ring_of_1000_or_ln_n_does_not():
    assert _passes("08_ex1", "ex1_max_share", _solution("08_ex1", "ex1_max_share"))
    from magnum_lib.widgets import system_model
    shown = [system_model.ring_max_share_theory(1000, 1), 7.58, 7.5]   # section 5 prints these for 1,000 nodes
    naive = [float(np.log(5000)), 5000.0, 1.0]
    for a in shown + naive:
        assert not _passes("08_ex1", "ex1_max_share", a), a


def test_ex2_solution_passes_and_the_vnodes_shown_do_not():
    assert _passes("08_ex2", "ex2_vnodes", _solution("08_ex2", "ex2_vnodes"))
    for a in (1, 4, 16, 64, 1000):   # the table of section 5; "more is better"
        assert not _passes("08_ex2", "ex2_vnodes", a), a


def test_ex3_solution_passes_and_what_the_notebook_shows_does_not():
    assert _passes("08_ex3", "ex3_knobs", _solution("08_ex3", "ex3_knobs"))
    shown = [{}, {"ring_vnodes": 64}, {"policy": "two-choices"}, {"policy": "hints"}]   # sections 2-5 run these
    naive = [{"ring_vnodes": 1024}, {"hetero_aware": True}, {"policy": "scan"}, {"policy": "random"},
             {"node_queue": 8}, {"load": 0.01}, {"duration_s": 0.01}, {"training_fraction": 0.0}]
    for a in shown + naive:
        assert not _passes("08_ex3", "ex3_knobs", a), a
