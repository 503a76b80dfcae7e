"""The instructor's guide (notebooks/INSTRUCTOR.md) covers every notebook and every Predict.

The guide has one section per notebook, headed ``## NN · Title (`NN_name.ipynb`)``, and in
it a ``### Predict answers`` subsection: a numbered list with at least one item per Predict
question of the notebook, whether a ``### Predict`` section or an inline ``**Predict:**``
paragraph. A question followed by a guess variable (``predict_... = None``) is answered
only if the answers name that variable in backticks, so each answer is tied to its
question, not just counted. These tests read the files only, so they are fast; they fail
when a notebook gains a Predict question, or a new notebook appears, without an answer.
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
_INLINE = re.compile(r"\*\*Predict:\*\*\s*(.*)")
_GUESS = re.compile(r"^(predict_\w+)\s*=\s*None\b", re.M)


def _source(cell: dict) -> str:
    return cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])


def predict_questions_and_guesses(notebook: dict) -> list[tuple[str, list[str]]]:
    """Every Predict question of the notebook, in order, with the guess variables
    (``predict_... = None``) of the code cells between it and the next question.

    A question is the first line after a ``### Predict`` heading, or the text after an
    inline ``**Predict:**`` (bold, with the colon: "Predict, then measure" is not one).
    """
    found = []
    for cell in notebook["cells"]:
        src = _source(cell)
        if cell["cell_type"] == "code":
            if found:
                found[-1][1].extend(_GUESS.findall(src))
            continue
        if cell["cell_type"] != "markdown":
            continue
        lines = src.splitlines()
        for i, line in enumerate(lines):
            inline = _INLINE.search(line)
            if re.match(r"^### Predict\b", line):
                rest = [l.strip() for l in lines[i + 1:] if l.strip()]
                found.append(((rest[0] if rest else "(empty)")[:80], []))
            elif inline:
                found.append(((inline.group(1).strip() or "(empty)")[:80], []))
    return found


def predict_questions(notebook: dict) -> list[str]:
    """Every Predict question of the notebook (see :func:`predict_questions_and_guesses`)."""
    return [q for q, _ in predict_questions_and_guesses(notebook)]


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


def answers_block(section: str) -> str:
    """The text of the section's ``### Predict answers`` subsection ("" if none)."""
    start = section.find(_ANSWERS_HEADING)
    if start < 0:
        return ""
    body = section[start + len(_ANSWERS_HEADING):]
    nxt = re.search(r"^### ", body, re.M)
    return body[:nxt.start()] if nxt else body


def answer_items(section: str) -> list[int]:
    """The numbers of the items of the section's ``### Predict answers`` list."""
    return [int(n) for n in _NUMBERED_ITEM.findall(answers_block(section))]


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
    found = predict_questions_and_guesses(json.loads(path.read_text(encoding="utf-8")))
    questions = [q for q, _ in found]
    section = notebook_sections(guide).get(path.name[:2], "")
    items = answer_items(section)
    assert items == list(range(1, len(items) + 1)), f"{path.name}: answers must be numbered 1, 2, 3, ..."
    missing = questions[len(items):]
    assert len(items) >= len(questions), (
        f"{path.name} has {len(questions)} Predict questions (headings and inline), INSTRUCTOR.md answers "
        f"{len(items)}; add answers for: {missing}")
    block = answers_block(section)
    unanswered = [(q, g) for q, guesses in found for g in guesses if f"`{g}`" not in block]
    assert not unanswered, (f"{path.name}: INSTRUCTOR.md's Predict answers never name these guess variables "
                            f"(answer each question where it names its variable): {unanswered}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_predict_has_a_guess_variable(path):
    """Every Predict question, heading or inline, leaves a variable for the learner's guess."""
    found = predict_questions_and_guesses(json.loads(path.read_text(encoding="utf-8")))
    assert all(guesses for _, guesses in found), \
        f"{path.name}: a Predict question without a predict_... = None cell: {[q for q, g in found if not g]}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_notebook_has_prompts_and_pitfalls(guide, path):
    section = notebook_sections(guide).get(path.name[:2], "")
    for heading in ("### Discussion prompts", "### Pitfalls"):
        assert heading in section, f"{path.name}: its section has no '{heading}'"


def test_the_guide_covers_the_day(guide):
    for needle in ("faux-magnum doctor", "make test", "Binder", "environment.yml", "postBuild",
                   "make lab", "make reset", "scripts/reset_notebooks.sh", "## The agenda"):
        assert needle in guide, f"INSTRUCTOR.md does not mention {needle!r}"


def _minutes(hhmm: str) -> int:
    h, m = hhmm.split(":")
    return int(h) * 60 + int(m)


def test_the_agenda_adds_up(guide):
    """Each slot's length matches its times, slots are contiguous, every notebook has a slot,
    a break comes at least every 2 h 30 min, and the stated total is the sum of the Time lines."""
    rows = re.findall(r"^\| (\d\d:\d\d)-(\d\d:\d\d) \| (\d+) min \| ([^|]*)\|", guide, re.M)
    assert rows, "no agenda table"
    end = None
    since_break = 0
    for start, stop, length, what in rows:
        assert _minutes(stop) - _minutes(start) == int(length), (start, stop, length)
        assert end is None or start == end, f"gap or overlap before {start}"
        end = stop
        since_break = 0 if ("break" in what or "lunch" in what) else since_break + int(length)
        assert since_break <= 150, f"no break for {since_break} min before {stop}"
    slotted = set(re.findall(r"\*\*(\d\d)\*\*", " ".join(r[3] for r in rows)))
    assert slotted == {p.stem[:2] for p in NOTEBOOKS}
    times = []
    for path in NOTEBOOKS:
        text = "".join(_source(c) for c in json.loads(path.read_text(encoding="utf-8"))["cells"])
        times.append(int(re.search(r"\*\*Time:\*\* about (\d+) minutes", text).group(1)))
    total = sum(times)
    assert f"{total // 60} h {total % 60} min before breaks" in guide, f"the notebooks add up to {total} min"
    listed = re.search(r'"Time" line: ([\d, and\s]+) minutes', guide).group(1)
    assert [int(x) for x in re.findall(r"\d+", listed)] == times, "the guide lists other Time lines"


def test_the_notebooks_readme_links_the_guide():
    assert "(INSTRUCTOR.md)" in (NB_DIR / "README.md").read_text(encoding="utf-8")


# The helpers above must be able to fail: check them on small inputs with known answers.

def _md(text: str) -> dict:
    return {"cell_type": "markdown", "source": text}


def _code(text: str) -> dict:
    return {"cell_type": "code", "source": text}


def test_predict_questions_counts_headings_and_inline_not_mentions():
    nb = {"cells": [_md("## 1. A\n\n### Predict\n\nHow many?\n"), _code("### Predict\npredict_a = None  # guess"),
                    _md("**Predict:** inline, how long?\n\n### Predict\nWhich one?"), _md("### Predictions"),
                    _md("**Predict, then measure.** is the method, not a question"), _code("predict_c = None"),
                    _code("x = predict_c  # not a guess cell")]}
    assert predict_questions(nb) == ["How many?", "inline, how long?", "Which one?"]
    assert predict_questions_and_guesses(nb) == [("How many?", ["predict_a"]), ("inline, how long?", []),
                                                 ("Which one?", ["predict_c"])]


def test_sections_and_answers_are_read_per_notebook():
    text = ("# Guide\n\n## 01 · One (`01_one.ipynb`)\n\n### Predict answers\n\n1. **a** x\n2. **b** y\n"
            "   continued 3. not an item\n\n### Pitfalls\n\n1. not an answer\n\n## Agenda\n\n1. nor this\n\n"
            "## 02 · Two (`02_two.ipynb`)\n\n### Discussion prompts\n\n* z\n")
    sections = notebook_sections(text)
    assert set(sections) == {"01", "02"}
    assert "Agenda" not in sections["01"]
    assert answer_items(sections["01"]) == [1, 2]
    assert answer_items(sections["02"]) == []
    assert "1. not an answer" not in answers_block(sections["01"]) and "**b** y" in answers_block(sections["01"])
