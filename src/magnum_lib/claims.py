"""The article's claims C1-C51 as data: id, exact figures, unit, where it is checked, verdict.

The list lives in ``magnum_lib/data/claims.yaml`` (restated from the project's
ARTICLE_CLAIMS.md). Notebooks cite a claim by its id; ``tests/test_claims.py`` checks that
every id a notebook cites is on this list and that notebook 00's table covers all of them.

Every claim carries one verdict of a fixed vocabulary (:data:`VERDICTS`), recorded in the
YAML with a one-line reason. The experiment behind a verdict lives in
:mod:`magnum_lib.checks`, which computes the verdict again from a measurement; the tests
check that the computed and the recorded verdicts agree, and that perturbing the input the
verdict depends on changes it (so no claim check passes whatever the model does).

>>> from magnum_lib import claims
>>> claims.get("C24").figures[0]
'~3.6 million'
>>> claims.get("C24").verdict
'refuted'
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

import yaml

from magnum_lib._resources import data_path
from magnum_lib.base.validate import ParameterError

ID_PATTERN = re.compile(r"\bC(\d{1,2})\b")

#: The five verdicts a claim check may end in, and what each means.
REPRODUCED = "reproduced"          # the figure emerges from mechanisms the kit models; changing them moves it
SET_BY_INPUT = "set by an input"   # the figure is a parameter we chose (say which): landing on it proves nothing
NOT_REPRODUCED = "not reproduced"  # the kit's mechanisms do not give it (say what it would take)
REFUTED = "refuted"                # the article is wrong (say by how much)
NOT_TESTABLE = "not testable here" # the kit cannot measure it (say why)
VERDICTS = (REPRODUCED, SET_BY_INPUT, NOT_REPRODUCED, REFUTED, NOT_TESTABLE)
NOTEBOOK_TITLES = {
    "00": "welcome", "01": "why Kubernetes cries", "02": "the Oracle", "03": "the Conductor",
    "04": "the Bouncer", "05": "gossip", "06": "heterogeneous hell", "07": "the whole system",
    "08": "the evolution", "09": "the future", "10": "the policy arena", "11": "serving LLMs",
}


@dataclass(frozen=True)
class Claim:
    """One claim: the article's figures verbatim, and where the kit checks it."""

    id: str
    section: str
    claim: str
    figures: tuple[str, ...]
    unit: str
    notebooks: tuple[str, ...]
    verdict: str
    because: str

    @property
    def number(self) -> int:
        return int(self.id[1:])

    @property
    def untestable(self) -> str | None:
        """Why the claim cannot be tested here (None when it can)."""
        return self.because if self.verdict == NOT_TESTABLE else None


@dataclass(frozen=True)
class Verdict:
    """What one claim check concluded: the verdict, why (with the numbers), and the numbers.

    ``because`` is one sentence that says which input sets the figure, by how much the
    article is off, or what it would take; ``figures`` holds the measured numbers it rests on.
    """

    claim: str
    verdict: str
    because: str
    figures: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        if not isinstance(self.claim, str) or not re.fullmatch(r"C\d{1,2}", self.claim):
            raise ParameterError("claim", f"must be a claim id like 'C43', got {str(self.claim)[:12]!r}")
        if self.verdict not in VERDICTS:
            raise ParameterError("verdict", f"must be one of {VERDICTS}, got {str(self.verdict)[:40]!r}")
        if not isinstance(self.because, str) or not self.because.strip():
            raise ParameterError("because", "must say why, in one sentence")

    def __str__(self) -> str:
        return f"{self.claim}: {self.verdict}. {self.because}"

    def _repr_markdown_(self) -> str:
        return f"**{self.claim}: {self.verdict}.** {self.because}"


@lru_cache(maxsize=1)
def all_claims() -> tuple[Claim, ...]:
    """Every claim, in the article's order (C1 first)."""
    raw = yaml.safe_load(data_path("claims.yaml").read_text(encoding="utf-8"))["claims"]
    out = tuple(Claim(id=r["id"], section=r["section"], claim=r["claim"], figures=tuple(r["figures"]),
                      unit=r["unit"], notebooks=tuple(r["notebooks"]), verdict=r["verdict"],
                      because=r["because"])
                for r in raw)
    for c in out:   # a shipped file with a hole in it is a bug, caught at import by the tests
        if c.verdict not in VERDICTS and c.verdict != "TODO":
            raise ValueError(f"{c.id}: verdict {c.verdict!r} is not one of {VERDICTS}")
        if not c.notebooks and c.verdict != NOT_TESTABLE:
            raise ValueError(f"{c.id}: a claim no notebook checks must be {NOT_TESTABLE!r}, with the reason")
    return out


def get(claim_id: str) -> Claim:
    """The claim with id ``claim_id`` ("C1".."C51")."""
    for c in all_claims():
        if c.id == claim_id:
            return c
    raise ParameterError("claim_id", f"no claim {str(claim_id)[:12]!r} (known: C1..C{len(all_claims())})")


def ids() -> tuple[str, ...]:
    return tuple(c.id for c in all_claims())


def cited(text: str) -> set[str]:
    """Claim ids ("C7") mentioned in ``text``."""
    return {f"C{m}" for m in ID_PATTERN.findall(text)}


def checked_in(notebook: str) -> tuple[Claim, ...]:
    """The claims notebook ``notebook`` ("03") checks."""
    return tuple(c for c in all_claims() if notebook in c.notebooks)


def markdown_table() -> str:
    """The table of claims notebook 00 shows: id, the article's figures, where it is checked, verdict."""
    rows = ["| id | the article's claim | figure(s) | checked in | verdict |", "|---|---|---|---|---|"]
    for c in all_claims():
        where = ", ".join(f"**{n}** {NOTEBOOK_TITLES[n]}" for n in c.notebooks) if c.notebooks else "-"
        figs = "; ".join(f"`{f}`" if "|" not in f else f for f in c.figures) or "-"
        because = c.because.replace("|", "/")
        rows.append(f"| {c.id} | {c.claim} | {figs} | {where} | **{c.verdict}**: {because} |")
    return "\n".join(rows)
