"""Every claim's verdict is recorded, recomputed from a measurement, and able to change.

The vocabulary is :data:`magnum_lib.claims.VERDICTS`. For each claim with a check, the
check's default run must give the verdict ``claims.yaml`` records, and each perturbation
(an input the verdict depends on, moved) must give a different one: a check that no input
can move cannot fail, and is a defect.
"""
from __future__ import annotations

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
