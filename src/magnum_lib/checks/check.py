"""One claim check: the experiment (``measure``), the rule that turns its numbers into a
verdict (``judge``), and the inputs under which that verdict must change (``perturbations``).

Keeping the three apart is what makes a check able to fail: the tests run ``judge(measure())``
and compare it with the verdict recorded in ``claims.yaml``, then run it again under every
perturbation (a longer round, a blind placement, a slower scan) and require a different
verdict. A check whose verdict no input can move is a check that cannot fail.
"""
from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from magnum_lib import claims
from magnum_lib.base.validate import ParameterError
from magnum_lib.claims import Verdict


@dataclass(frozen=True)
class ClaimCheck:
    """The experiment behind one claim's verdict.

    ``measure(**inputs)`` runs the experiment and returns its numbers (a dict, units in the
    keys: ``p95_ms``); ``judge(numbers)`` returns a :class:`~magnum_lib.claims.Verdict`.
    ``defaults`` are the inputs the recorded verdict was measured with (small enough to run
    in a test in seconds); each entry of ``perturbations`` overrides some of them, and the
    verdict under it must differ from the recorded one.

    ``speed`` names the compiled module whose speed the verdict rests on (empty when the
    verdict does not depend on speed). Such a verdict is only measured on that kernel:
    :meth:`measurable` is False when it is not built (an install without a C compiler) or
    when the inputs ask for ``backend="python"``.
    """

    claim: str
    measure: Callable[..., dict]
    judge: Callable[[dict], Verdict]
    defaults: Mapping[str, Any] = field(default_factory=dict)
    perturbations: tuple[Mapping[str, Any], ...] = ()
    about: str = ""
    speed: str = ""

    def __post_init__(self):
        claims.get(self.claim)   # an unknown id raises here, when the registry is built
        for p in self.perturbations:
            unknown = set(p) - set(self.defaults)
            if unknown:
                raise ParameterError("perturbations", f"{self.claim}: {sorted(unknown)} are not inputs of the check")

    def inputs(self, **overrides) -> dict:
        unknown = set(overrides) - set(self.defaults)
        if unknown:
            raise ParameterError("inputs", f"{self.claim} takes {sorted(self.defaults)}, not {sorted(unknown)}")
        return {**self.defaults, **overrides}

    def run(self, **overrides) -> Verdict:
        """Measure with the defaults (or ``overrides``) and judge."""
        return self.judge(self.measure(**self.inputs(**overrides)))

    def measurable(self, **overrides) -> bool:
        """Whether this install can measure the verdict with these inputs (see ``speed``)."""
        if not self.speed:
            return True
        if self.inputs(**overrides).get("backend") == "python":
            return False
        try:
            return importlib.util.find_spec(self.speed) is not None
        except ImportError:   # its package itself is missing
            return False
