"""Every claim's verdict is recorded, recomputed from a measurement, and able to change.

The vocabulary is :data:`magnum_lib.claims.VERDICTS`. For each claim with a check, the
check's default run must give the verdict ``claims.yaml`` records, and each perturbation
(an input the verdict depends on, moved) must give a different one: a check that no input
can move cannot fail, and is a defect.
"""
from __future__ import annotations

from dataclasses import replace

import pytest

import magnum_lib
from magnum_lib import checks, claims
from magnum_lib.base.validate import ParameterError
from magnum_lib.claims import NOT_TESTABLE, VERDICTS, Verdict

# Claims whose check is not written yet (issue 19 stays open while this is not empty). Each
# must still say "TODO" and have no check, so the set can only shrink: a claim that gets its
# check and verdict fails here until it is removed from the set.
PENDING: set[str] = set()
COMPILED = magnum_lib.backend() == "compiled"
TESTABLE = [c.id for c in claims.all_claims() if c.verdict != NOT_TESTABLE]
PERTURBED = [(cid, i) for cid in sorted(checks.REGISTRY, key=lambda s: int(s[1:]))
             for i in range(len(checks.REGISTRY[cid].perturbations))]


def test_every_claim_has_a_verdict_from_the_vocabulary_and_a_reason():
    for c in claims.all_claims():
        if c.id in PENDING:
            assert c.verdict == "TODO" and c.id not in checks.REGISTRY, f"{c.id} is done: remove it from PENDING"
            continue
        assert c.verdict in VERDICTS, c.id
        assert len(c.because.split()) >= 5, f"{c.id}: say why in a sentence"


@pytest.mark.parametrize("cid", TESTABLE)
def test_every_testable_claim_has_a_check_that_can_move(cid):
    if cid in PENDING:
        pytest.xfail(f"{cid}: check not written yet (issue 19)")
    check = checks.get(cid)
    assert check.perturbations, f"{cid}: name at least one input under which the verdict changes"


# The measurements run on the compiled backend: the parity tests already show the pure-Python
# kernels give the same numbers, and some checks take a minute each in pure Python. Several
# verdicts rest on how fast the release build decides (`speed`), so the bounds-checked debug
# build (make test-debug) leaves them out.
needs_compiled = pytest.mark.skipif(not COMPILED, reason="claim checks are measured on the compiled backend")


@needs_compiled
@pytest.mark.speed
@pytest.mark.parametrize("cid", sorted(checks.REGISTRY, key=lambda s: int(s[1:])))
def test_the_measurement_gives_the_recorded_verdict(cid):
    v = checks.run(cid)
    assert isinstance(v, Verdict) and v.claim == cid
    assert v.verdict == claims.get(cid).verdict, str(v)


@needs_compiled
@pytest.mark.speed
@pytest.mark.parametrize(("cid", "i"), PERTURBED)
def test_each_perturbation_changes_the_verdict(cid, i):
    check = checks.get(cid)
    v = check.run(**check.perturbations[i])
    assert v.verdict != claims.get(cid).verdict, f"{cid} under {dict(check.perturbations[i])}: still {v}"


def test_show_prints_and_refuses_a_stale_verdict(capsys):
    v = checks.show("C24")
    assert str(v) in capsys.readouterr().out
    with pytest.raises(AssertionError, match="claims.yaml records"):
        checks.show("C24", cores_per_gpu=18)


def test_bad_requests():
    with pytest.raises(ParameterError, match="claim_id"):
        checks.get("C99")
    with pytest.raises(ParameterError, match="no registered check"):
        checks.get("C6")
    with pytest.raises(ParameterError, match="inputs"):
        checks.run("C24", round_ms=3)
    with pytest.raises(ParameterError, match="verdict"):
        Verdict("C1", "plausible", "a word that is not a verdict")
    with pytest.raises(ParameterError, match="because"):
        Verdict("C1", "refuted", " ")


# -- verdicts that rest on a compiled kernel's speed (issue 20: the pure-Python backend) ------
SPEED = sorted(cid for cid, c in checks.REGISTRY.items() if c.speed)


def test_the_loop_checks_are_marked_as_resting_on_the_compiled_loop():
    assert {"C5", "C19"} <= set(SPEED)


@pytest.mark.parametrize("cid", SPEED)
def test_on_the_python_backend_show_prints_the_recorded_verdict_and_does_not_measure(cid, capsys, monkeypatch):
    measured = []
    check = replace(checks.get(cid), measure=lambda **kw: measured.append(kw) or {})
    monkeypatch.setitem(checks.REGISTRY, cid, check)
    v = checks.show(cid, backend="python")
    out = capsys.readouterr().out.splitlines()
    rec = claims.get(cid)
    assert "compiled kernel's speed" in out[0] and "not re-measured" in out[0]
    assert out[1] == f"{cid}: {rec.verdict}. {rec.because}"
    assert (v.verdict, v.because, v.figures) == (rec.verdict, rec.because, {"recorded": True})
    assert not check.measurable(backend="python")
    assert not measured


def test_a_speed_check_whose_kernel_is_not_built_is_not_measured(capsys, monkeypatch):
    # An install without a compiler: the default inputs (backend="compiled") name a kernel that is absent.
    absent = replace(checks.get("C19"), speed="magnum_lib.node._no_such_kernel", measure=None)
    assert not absent.measurable()
    monkeypatch.setitem(checks.REGISTRY, "C19", absent)
    v = checks.show("C19")        # does not raise, does not measure (measure is None)
    assert v.figures == {"recorded": True} and "not re-measured" in capsys.readouterr().out
    assert not replace(checks.get("C19"), speed="no_such_package._kernel").measurable()
    assert checks.get("C24").measurable()       # a check that is not about speed always measures


@needs_compiled
@pytest.mark.parametrize("cid", SPEED)
def test_with_the_compiled_loop_show_measures_and_can_still_fail(cid, capsys):
    check = checks.get(cid)
    assert check.measurable()
    v = checks.show(cid)
    assert "recorded" not in v.figures and "decision_ns" in v.figures
    with pytest.raises(AssertionError, match="claims.yaml records"):   # a perturbation is still measured
        checks.show(cid, **check.perturbations[0])
