"""The article's claims C1-C51 as data: id, exact figures, unit, the notebook that checks it.

The list lives in ``magnum_lib/data/claims.yaml`` (restated from the project's
ARTICLE_CLAIMS.md). Notebooks cite a claim by its id; ``tests/test_claims.py`` checks that
every id a notebook cites is on this list and that notebook 00's table covers all of them.

>>> from magnum_lib import claims
>>> claims.get("C24").figures[0]
'~3.6 million'
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import yaml

from magnum_lib._resources import data_path
from magnum_lib.engine.errors import ParameterError

ID_PATTERN = re.compile(r"\bC(\d{1,2})\b")
NOTEBOOK_TITLES = {
    "00": "welcome", "01": "why Kubernetes cries", "02": "the Oracle", "03": "the Conductor",
    "04": "the Bouncer", "05": "gossip", "06": "heterogeneous hell", "07": "the whole system",
    "08": "the evolution", "09": "the future", "10": "the policy arena",
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
    untestable: str | None = None

    @property
    def number(self) -> int:
        return int(self.id[1:])


@lru_cache(maxsize=1)
def all_claims() -> tuple[Claim, ...]:
    """Every claim, in the article's order (C1 first)."""
    raw = yaml.safe_load(data_path("claims.yaml").read_text(encoding="utf-8"))["claims"]
    out = tuple(Claim(id=r["id"], section=r["section"], claim=r["claim"], figures=tuple(r["figures"]),
                      unit=r["unit"], notebooks=tuple(r["notebooks"]), untestable=r.get("untestable"))
                for r in raw)
    for c in out:   # a shipped file with a hole in it is a bug, caught at import by the tests
        if bool(c.notebooks) == bool(c.untestable):
            raise ValueError(f"{c.id}: give either the notebooks that check it or why it cannot be tested")
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
    """The table of claims notebook 00 shows: id, the article's figures, where it is checked."""
    rows = ["| id | the article's claim | figure(s) | checked in |", "|---|---|---|---|"]
    for c in all_claims():
        where = (", ".join(f"**{n}** {NOTEBOOK_TITLES[n]}" for n in c.notebooks) if c.notebooks
                 else f"not tested: {c.untestable}")
        figs = "; ".join(f"`{f}`" if "|" not in f else f for f in c.figures) or "-"
        rows.append(f"| {c.id} | {c.claim} | {figs} | {where} |")
    return "\n".join(rows)
