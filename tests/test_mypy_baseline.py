"""The type errors may only shrink: mypy's errors now are those of mypy-baseline.txt.

A new (file, error) pair, or one more of an existing pair, fails; so does an entry that is
gone (rewrite the list: ``python scripts/mypy_baseline.py --update``). engine/, units.py and
hardware.py are checked strictly and may have no entry at all. About 20-40 s of CPU with a
cold cache (kept in the system temp folder), a few seconds warm.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.once  # run once (make unit): static types

ROOT = Path(__file__).resolve().parents[1]
STRICT = ("src/magnum_lib/engine/", "src/magnum_lib/units.py", "src/magnum_lib/hardware.py")


def _script():
    spec = importlib.util.spec_from_file_location("mypy_baseline", ROOT / "scripts" / "mypy_baseline.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_normalize_drops_line_numbers_and_notes():
    report = ("src/magnum_lib/a.py:12: error: Bad thing  [misc]\n"
              "src/magnum_lib/a.py:12: note: See here\n"
              "src/magnum_lib/b.py:3:7: error: Other  [arg-type]\n"
              "Found 2 errors in 2 files\n")
    assert _script().normalize(report) == ["src/magnum_lib/a.py: Bad thing  [misc]",
                                          "src/magnum_lib/b.py: Other  [arg-type]"]


def test_compare_finds_new_repeated_and_fixed_errors():
    compare = _script().compare
    base = ["a.py: X  [misc]", "b.py: Y  [misc]"]
    assert compare(base, base) == ([], [])
    assert compare(base + ["a.py: X  [misc]"], base) == (["a.py: X  [misc]"], [])  # one more of a pair
    assert compare(base + ["c.py: Z  [misc]"], base) == (["c.py: Z  [misc]"], [])
    assert compare(base[:1], base) == ([], ["b.py: Y  [misc]"])


def test_strict_modules_have_no_baseline_entry():
    entries = _script().read_baseline()
    assert entries, "mypy-baseline.txt is empty: delete this ratchet rather than keep an empty one"
    assert [e for e in entries if e.startswith(STRICT)] == []


def test_mypy_errors_are_exactly_the_baseline(monkeypatch):
    pytest.importorskip("mypy")
    script = _script()
    monkeypatch.chdir(ROOT)  # mypy names files relative to the working directory
    new, gone = script.compare(script.run_mypy(), script.read_baseline())
    assert new == [], f"{len(new)} new mypy error(s) (fix them; the baseline may only shrink): {new[:20]}"
    assert gone == [], (f"{len(gone)} baseline error(s) fixed: run `python scripts/mypy_baseline.py --update` "
                        f"and commit the shorter mypy-baseline.txt: {gone[:20]}")
