"""The instructor's guide (notebooks/INSTRUCTOR.md) covers every notebook and every Predict.

The guide has one section per notebook, headed ``## NN · Title (`NN_name.ipynb`)``, and in
it a ``### Predict answers`` subsection: a numbered list with one item per ``### Predict``
section of the notebook (more are fine: some notebooks also ask inline). These tests read
the files only, so they are fast; they fail when a notebook gains a Predict section, or a
new notebook appears, without an answer in the guide.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NB_DIR = ROOT / "notebooks"
GUIDE = NB_DIR / "INSTRUCTOR.md"
NOTEBOOKS = sorted(NB_DIR.glob("[0-9][0-9]_*.ipynb"))

_NOTEBOOK_HEADING = re.compile(r"^## (\d\d) · ", re.M)
_ANSWERS_HEADING = "### Predict answers"
_NUMBERED_ITEM = re.compile(r"^(\d+)\.\s+\S", re.M)


def predict_questions(notebook: dict) -> list[str]:
    """The first line after each ``### Predict`` heading of the notebook's markdown cells."""
    questions = []
    for cell in notebook["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        lines = src.splitlines()
        for i, line in enumerate(lines):
            if re.match(r"^### Predict\b", line):
                rest = [l.strip() for l in lines[i + 1:] if l.strip()]
                questions.append(rest[0][:80] if rest else "(empty)")
    return questions


def notebook_sections(guide: str) -> dict[str, str]:
    """Map a notebook number ("03") to the text of its ``## 03 · ...`` section."""
    starts = [(m.start(), m.group(1)) for m in _NOTEBOOK_HEADING.finditer(guide)]
    sections = {}
    for k, (pos, number) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(guide)
        next_h2 = re.search(r"^## ", guide[pos + 3:end], re.M)       # a non-notebook section ends it too
        if next_h2:
            end = pos + 3 + next_h2.start()
        assert number not in sections, f"INSTRUCTOR.md has two sections for notebook {number}"
        sections[number] = guide[pos:end]
    return sections


def answer_items(section: str) -> list[int]:
    """The numbers of the items of the section's ``### Predict answers`` list."""
    start = section.find(_ANSWERS_HEADING)
    if start < 0:
        return []
    body = section[start + len(_ANSWERS_HEADING):]
    nxt = re.search(r"^### ", body, re.M)
    return [int(n) for n in _NUMBERED_ITEM.findall(body[:nxt.start()] if nxt else body)]


@pytest.fixture(scope="module")
def guide() -> str:
    assert GUIDE.is_file(), "notebooks/INSTRUCTOR.md is missing"
    return GUIDE.read_text(encoding="utf-8")


def test_there_are_notebooks_to_cover():
    assert len(NOTEBOOKS) >= 2


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_notebook_is_named_and_has_a_section(guide, path):
    assert path.name in guide, f"INSTRUCTOR.md never names {path.name}"
    sections = notebook_sections(guide)
    number = path.name[:2]
    assert number in sections, f"INSTRUCTOR.md has no '## {number} · ...' section for {path.name}"
    assert path.name in sections[number], f"the '## {number}' section does not name {path.name}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_predict_has_an_answer(guide, path):
    questions = predict_questions(json.loads(path.read_text(encoding="utf-8")))
    section = notebook_sections(guide).get(path.name[:2], "")
    items = answer_items(section)
    assert items == list(range(1, len(items) + 1)), f"{path.name}: answers must be numbered 1, 2, 3, ..."
    missing = questions[len(items):]
    assert len(items) >= len(questions), (
        f"{path.name} has {len(questions)} '### Predict' sections, INSTRUCTOR.md answers {len(items)}; "
        f"add answers for: {missing}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_notebook_has_prompts_and_pitfalls(guide, path):
    section = notebook_sections(guide).get(path.name[:2], "")
    for heading in ("### Discussion prompts", "### Pitfalls"):
        assert heading in section, f"{path.name}: its section has no '{heading}'"


def test_the_guide_covers_the_day(guide):
    for needle in ("faux-magnum doctor", "make test", "Binder", "environment.yml", "postBuild",
                   "make lab", "make reset", "scripts/reset_notebooks.sh", "## The agenda"):
        assert needle in guide, f"INSTRUCTOR.md does not mention {needle!r}"


def test_the_notebooks_readme_links_the_guide():
    assert "(INSTRUCTOR.md)" in (NB_DIR / "README.md").read_text(encoding="utf-8")


# The helpers above must be able to fail: check them on small inputs with known answers.

def _md(text: str) -> dict:
    return {"cell_type": "markdown", "source": text}


def test_predict_questions_counts_headings_not_mentions():
    nb = {"cells": [_md("## 1. A\n\n### Predict\n\nHow many?\n"), {"cell_type": "code", "source": "### Predict"},
                    _md("**Predict:** inline, not a heading\n\n### Predict\nWhich one?"), _md("### Predictions")]}
    assert predict_questions(nb) == ["How many?", "Which one?"]


def test_sections_and_answers_are_read_per_notebook():
    text = ("# Guide\n\n## 01 · One (`01_one.ipynb`)\n\n### Predict answers\n\n1. **a** x\n2. **b** y\n"
            "   continued 3. not an item\n\n### Pitfalls\n\n1. not an answer\n\n## Agenda\n\n1. nor this\n\n"
            "## 02 · Two (`02_two.ipynb`)\n\n### Discussion prompts\n\n* z\n")
    sections = notebook_sections(text)
    assert set(sections) == {"01", "02"}
    assert "Agenda" not in sections["01"]
    assert answer_items(sections["01"]) == [1, 2]
    assert answer_items(sections["02"]) == []
