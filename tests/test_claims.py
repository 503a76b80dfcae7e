"""The claims list (magnum_lib/data/claims.yaml) against ARTICLE_CLAIMS.md and the notebooks."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from magnum_lib import claims
from magnum_lib.base.validate import ParameterError

pytestmark = pytest.mark.once  # run once (make unit): claims.yaml and notebook 00's table

ROOT = Path(__file__).resolve().parents[1]
NB_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NB_DIR.glob("[0-9][0-9]_*.ipynb"))
# Notebooks whose claim checks must state one of the article's figures verbatim for every
# claim they cite (the others are written in parallel; widen this once they follow).
FIGURES_CHECKED = ("00", "01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11")


def _text(path: Path, kind: str | None = None) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if kind is None or c["cell_type"] == kind)


def test_the_list_has_every_claim_once_in_order():
    assert claims.ids() == tuple(f"C{i}" for i in range(1, 52))


def test_each_claim_is_checked_somewhere_or_says_why_not():
    for c in claims.all_claims():
        assert c.notebooks or c.verdict == claims.NOT_TESTABLE, c.id
        assert all(n in claims.NOTEBOOK_TITLES for n in c.notebooks), c.id
        assert c.figures or not c.notebooks or c.id in {"C51"}, c.id


def test_planned_notebooks_carry_the_planned_claims():
    planned = {"06": range(34, 39), "07": (1, 2, 17, 25, 26, 44, 49, 50), "08": range(39, 45), "09": range(45, 49)}
    for nb, numbers in planned.items():
        for n in numbers:
            assert nb in claims.get(f"C{n}").notebooks, (nb, n)


def test_figures_are_the_articles():
    shared = Path("/work/shared/ARTICLE_CLAIMS.md")
    if not shared.is_file():
        pytest.skip("ARTICLE_CLAIMS.md is not on this machine")
    text = re.sub(r"\s+", " ", shared.read_text(encoding="utf-8"))
    blocks = dict(re.findall(r"- (C\d+)\. (.*?)(?= - C\d+\. | ## |$)", text))
    for c in claims.all_claims():
        for fig in c.figures:
            assert fig in blocks[c.id], f"{c.id}: {fig!r} is not in the article's claim as listed"


def test_get_and_bad_ids():
    assert claims.get("C24").figures[0] == "~3.6 million"
    with pytest.raises(ParameterError, match="claim_id"):
        claims.get("C99")
    assert claims.cited("C1, C23 and C51; not PC12x or C") == {"C1", "C23", "C51"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_cited_id_is_on_the_list(path):
    unknown = claims.cited(_text(path)) - set(claims.ids())
    assert not unknown, f"{path.name} cites {sorted(unknown)}, not on the claims list"


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.stem[:2] in FIGURES_CHECKED], ids=lambda p: p.stem)
def test_every_claim_check_names_its_claim(path):
    for line in _text(path, "markdown").splitlines():
        if re.match(r"^#+ .*claim check\b", line, re.I) and not re.search(r"claim checks\b", line, re.I):
            assert claims.cited(line), f"{path.name}: {line.strip()!r} names no claim id"


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.stem[:2] in FIGURES_CHECKED], ids=lambda p: p.stem)
def test_cited_claims_state_the_articles_figure(path):
    text = re.sub(r"\s+", " ", _text(path))
    for cid in sorted(claims.cited(text)):
        c = claims.get(cid)
        if c.figures:
            assert any(f in text for f in c.figures), f"{path.name} cites {cid} but states none of {c.figures}"


@pytest.mark.parametrize("nb", FIGURES_CHECKED)
def test_a_notebook_cites_the_claims_the_list_says_it_checks(nb):
    path = next((p for p in NOTEBOOKS if p.stem.startswith(nb + "_")), None)
    assert path is not None
    missing = {c.id for c in claims.checked_in(nb)} - claims.cited(_text(path))
    assert not missing, f"the list says {path.name} checks {sorted(missing)}, but it never cites them"


def test_notebook_00_table_is_the_claims_list():
    """00 shows ``claims.markdown_table()`` verbatim (verdict column included), so it cannot go
    stale: regenerate it with ``python scripts/update_claims_table.py``."""
    text = _text(next(p for p in NOTEBOOKS if p.stem.startswith("00_")), "markdown")
    assert claims.markdown_table() in text, "notebook 00's table differs: run scripts/update_claims_table.py"
    for c in claims.all_claims():
        row = re.search(rf"^\| {c.id} \|.*$", text, re.M).group(0)
        assert f"**{c.verdict}**" in row, c.id
        for nb in c.notebooks:
            assert f"**{nb}**" in row, f"{c.id}: the table does not say notebook {nb} checks it"