"""The claim checks of notebooks 01-03 (C3, C7-C16, C33): their rules, inputs and notebooks.

``test_claim_checks.py`` runs every check with its defaults and perturbations; here: each
judge's branches on hand-made numbers (so a rule cannot silently lose one), bad inputs
rejected at the boundary, and every notebook claim-check section ending in ``checks.show``.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from magnum_lib import checks, claims
from magnum_lib.base.validate import ParameterError
from magnum_lib.claims import NOT_REPRODUCED, NOT_TESTABLE, REFUTED, REPRODUCED, SET_BY_INPUT

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
OURS = {"01": ("C3", "C7"), "02": ("C8", "C9", "C10", "C11", "C12"),
        "03": ("C13", "C14", "C15", "C16", "C33")}


def test_c23_is_not_testable_and_has_no_check():
    assert claims.get("C23").verdict == NOT_TESTABLE
    assert "C23" not in checks.REGISTRY


@pytest.mark.parametrize("nb", sorted(OURS))
def test_each_notebook_prints_its_verdicts_through_checks_show(nb):
    path = next(NOTEBOOKS.glob(f"{nb}_*.ipynb"))
    code = "\n".join("".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
                     if c["cell_type"] == "code")
    for cid in OURS[nb]:
        assert re.search(rf'checks\.show\("{cid}"', code), f"{path.name} never shows {cid}'s verdict"
        assert claims.get(cid).verdict != NOT_TESTABLE


def test_c3_judge_reads_the_mean_of_a_lone_pod_against_50_100_ms():
    base = {"decision_ms": 5.0, "load": 0.05, "pods": 1000, "p95_ms": 1, "p99_ms": 1, "p999_ms": 1}
    assert checks.judge("C3", {**base, "mean_ms": 5.0}).verdict == REFUTED
    assert checks.judge("C3", {**base, "mean_ms": 70.0}).verdict == REPRODUCED
    assert checks.judge("C3", {**base, "mean_ms": 400.0}).verdict == REFUTED   # too slow is wrong too


def test_c7_judge_compares_the_needed_speedup_with_amdahls_cap():
    base = {"nodes": 50_000, "decision_us": 400.0, "capacity_per_s": 2500.0, "demand_per_s": 1e6,
            "amdahl_cap": 10.0, "serial_fraction": 0.1}
    assert checks.judge("C7", {**base, "speedup_needed": 400.0}).verdict == REPRODUCED
    assert checks.judge("C7", {**base, "speedup_needed": 5.0}).verdict == REFUTED
    assert "one loop keeps up" in checks.judge("C7", {**base, "speedup_needed": 0.2}).because


def test_c8_judge_three_ways():
    base = {"nodes": 1, "jobs": 1, "period_s": 30.0, "gap": 0.0}
    assert checks.judge("C8", {**base, "plan_s": 0.3}).verdict == SET_BY_INPUT
    assert checks.judge("C8", {**base, "plan_s": 20.0}).verdict == REPRODUCED
    assert checks.judge("C8", {**base, "plan_s": 40.0}).verdict == REFUTED


def test_c9_judge_needs_every_placed_job_to_get_its_node_group():
    base = {"horizon_s": 30.0, "hints": 10, "placed": 10, "lifetime_min_s": 30.0, "lifetime_max_s": 30.0,
            "groups_mean": 3.0, "first_group_holds_node": 1.0}
    assert checks.judge("C9", base).verdict == SET_BY_INPUT
    assert checks.judge("C9", {**base, "hints": 9}).verdict == NOT_REPRODUCED
    assert checks.judge("C9", {**base, "first_group_holds_node": 0.9}).verdict == NOT_REPRODUCED


def test_c11_judge_within_2x_of_900_ms_is_the_articles_figure():
    base = {"nodes": 50_000, "jobs": 50_000, "cores": 128, "exponent": 2.5, "steps": 1e11,
            "ns_per_step": 3.0, "one_core_s": 100.0, "matrix_gb": 20.0}
    assert checks.judge("C11", {**base, "predicted_s": 6.0}).verdict == REFUTED
    assert checks.judge("C11", {**base, "predicted_s": 1.2}).verdict == REPRODUCED
    assert checks.judge("C11", {**base, "predicted_s": 0.01}).verdict == NOT_REPRODUCED


def test_c12_judge_measures_the_hint_against_a_random_node():
    base = {"per": "node", "rate_per_node": 100.0, "age_s": 30.0, "good_theory": 0.66, "random_node": 0.66}
    assert checks.judge("C12", {**base, "good_sim": 0.66, "advantage": 0.0}).verdict == REFUTED
    assert checks.judge("C12", {**base, "good_sim": 0.98, "advantage": 0.94}).verdict == REPRODUCED
    assert checks.judge("C12", {**base, "good_sim": 0.8, "advantage": 0.4}).verdict == NOT_REPRODUCED


def test_c15_evicts_the_lowest_priority_job_of_two():
    m = checks.measure("C15")
    assert m["victims"] == ["low_priority"] and m["reason"].startswith("accepted")
    assert m["checkpoint_ms"] == pytest.approx(80e9 / m["bandwidth_Bps"] * 1e3)
    assert checks.judge("C15", {**m, "victims": ["mid_priority"]}).verdict == REFUTED


def test_c16_runs_the_articles_command_exactly():
    m = checks.measure("C16")
    assert " ".join(["faux-magnum", *m["argv"][:-1]]) == claims.get("C16").figures[0]
    assert m["status"] == 0 and m["expiry_after_ms"] == 100.0


@pytest.mark.parametrize(("cid", "inputs", "field"), [
    ("C3", {"load": 1.0}, "load"),
    ("C3", {"floor_pods_per_s": -5}, "floor_pods_per_s"),
    ("C7", {"serial_fraction": 0}, "serial_fraction"),
    ("C7", {"decisions_per_node_s": "many"}, "decisions_per_node_s"),
    ("C8", {"period_s": 0}, "period_s"),
    ("C9", {"horizon_s": float("inf")}, "horizon_s"),
    ("C10", {"score": "inverse"}, "score"),
    ("C11", {"jobs": 60_000}, "jobs"),
    ("C12", {"per": "rack"}, "per"),
    ("C12", {"change_every_s": -0.01}, "change_every_s"),
    ("C16", {"count": 0}, "count"),
])
def test_bad_inputs_are_refused_at_the_boundary(cid, inputs, field):
    with pytest.raises(ParameterError, match=field):
        checks.measure(cid, **inputs)
