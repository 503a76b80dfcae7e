"""The experiment behind every claim's verdict, one module per notebook topic.

>>> from magnum_lib import checks
>>> v = checks.run("C24")
>>> v.verdict
'refuted'
>>> checks.run("C24", cores_per_gpu=18).verdict   # had the article multiplied by 18, it would hold
'reproduced'

A notebook measures (often at a larger size than the defaults), then calls
:func:`show`, which prints the verdict and raises ``AssertionError`` when the measurement
no longer supports the verdict recorded in ``claims.yaml``: a notebook cannot go on
printing a verdict its own numbers contradict. ``tests/test_claim_checks.py`` runs every
check with its defaults and under each of its perturbations.
"""
from __future__ import annotations

from magnum_lib import claims
from magnum_lib.base.validate import ParameterError
from magnum_lib.checks import bouncer, conductor, evolution, future, gossip, hetero, kubernetes, oracle, system, welcome
from magnum_lib.checks.check import ClaimCheck
from magnum_lib.claims import Verdict

# Explicit registration: a module is in the registry because it is named here, not because
# something happened to import it. Add a topic module's CHECKS to this tuple.
_MODULES = (welcome, kubernetes, oracle, conductor, bouncer, gossip, hetero, system, evolution, future)

REGISTRY: dict[str, ClaimCheck] = {}
for _module in _MODULES:
    for _check in _module.CHECKS:
        if _check.claim in REGISTRY:
            raise RuntimeError(f"{_check.claim} is checked twice ({_module.__name__})")
        REGISTRY[_check.claim] = _check


def get(claim_id: str) -> ClaimCheck:
    """The check of claim ``claim_id`` ("C43")."""
    claims.get(claim_id)   # an id that is not a claim says so
    try:
        return REGISTRY[claim_id]
    except KeyError:
        raise ParameterError("claim_id", f"{claim_id} has no registered check "
                             f"(its verdict: {claims.get(claim_id).verdict})") from None


def measure(claim_id: str, **inputs) -> dict:
    """Run the experiment behind ``claim_id`` with its default inputs, or ``inputs``."""
    c = get(claim_id)
    return c.measure(**c.inputs(**inputs))


def judge(claim_id: str, numbers: dict) -> Verdict:
    """The verdict that ``numbers`` (from :func:`measure`, or a notebook's own run) support."""
    return get(claim_id).judge(numbers)


def run(claim_id: str, **inputs) -> Verdict:
    """Measure and judge in one call."""
    return get(claim_id).run(**inputs)


def show(claim_id: str, numbers: dict | None = None, **inputs) -> Verdict:
    """Print the verdict (measuring first unless ``numbers`` are given) and check it.

    Raises ``AssertionError`` when the verdict differs from the one recorded in
    ``claims.yaml``: either the model changed or the recorded verdict is stale.

    A verdict that rests on a compiled kernel's speed (``ClaimCheck.speed``) is not
    measured where that kernel is absent or ``backend="python"`` is asked for: ``show``
    then says so in one line and prints the recorded verdict, marked as recorded
    (``figures["recorded"]`` is True), rather than a verdict measured on the wrong kernel.
    """
    c = get(claim_id)
    if numbers is None and not c.measurable(**inputs):
        rec = claims.get(claim_id)
        print(f"{claim_id}: this verdict rests on the compiled kernel's speed ({c.speed}), which this run "
              f"does not use (pure-Python backend); recorded in claims.yaml, not re-measured:")
        v = Verdict(claim_id, rec.verdict, rec.because, {"recorded": True})
        print(v)
        return v
    v = judge(claim_id, numbers) if numbers is not None else run(claim_id, **inputs)
    print(v)
    recorded = claims.get(claim_id).verdict
    assert v.verdict == recorded, f"{claim_id}: measured {v.verdict!r}, claims.yaml records {recorded!r}"
    return v


__all__ = ["REGISTRY", "ClaimCheck", "Verdict", "get", "judge", "measure", "run", "show"]
