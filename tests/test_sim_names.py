"""The simulator core's arrays and parameters travel under names that explain themselves.

They were a dict called ``A`` (``run.A``, ``core.A``) and ``core.p``; now ``arrays`` and
``params``. This test keeps the one-letter names from coming back: an AST scan of the
package's Python (a name, argument or attribute ``A``) and a scan of the sim core's
Cython, with cases that show each scan can fail.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from magnum_lib.sim.config import make_config
from magnum_lib.sim.model import build_region

pytestmark = pytest.mark.once  # a static scan, and one small run per backend

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src" / "magnum_lib"
BANNED = {"A"}
# ``A`` where it is the textbook name of something else (not the core's arrays).
ALLOWED = {"replay/fairness.py": "Gavel's LP: A is its constraint matrix (scipy's A_ub)"}


def one_letter_names(source: str) -> list[tuple[int, str]]:
    """(line, kind) of every name, argument or attribute in ``BANNED`` in Python source."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and node.id in BANNED:
            found.append((node.lineno, "name"))
        elif isinstance(node, ast.arg) and node.arg in BANNED:
            found.append((node.lineno, "argument"))
        elif isinstance(node, ast.Attribute) and node.attr in BANNED:
            found.append((node.lineno, "attribute"))
    return found


# In Cython: an identifier A that is not in a comment (prose such as "A push ..." is in
# comments and docstrings; a docstring line starting with "A " is prose, not code).
_CODE_A = re.compile(r"(?<![\w.'\"])A(?=\s*[\[\],)=:.])|\.A\b|\bobject A\b")


def cython_one_letter_lines(source: str) -> list[int]:
    """Lines of Cython source that use an identifier ``A`` in code."""
    return [n for n, line in enumerate(source.splitlines(), 1) if _CODE_A.search(line.split("#", 1)[0])]


def test_the_scans_find_the_old_names():
    old = ("class Core:\n    def __init__(self, A, params):\n        self.A = A\n\n"
           "def f(run):\n    A = run.A\n    return A['cnt']\n")
    assert sorted(one_letter_names(old)) == [(2, "argument"), (3, "attribute"), (3, "name"),
                                            (6, "attribute"), (6, "name"), (7, "name")]
    assert one_letter_names('"""A request arrives."""\nx = {"A": 1}\n') == []  # prose and strings
    pyx = ("    cdef public object A  # the arrays\n    def __init__(self, A, params):\n"
           "        self._bind(A, params)\n        self.run = A['run']\n")
    assert cython_one_letter_lines(pyx) == [1, 2, 3, 4]
    assert cython_one_letter_lines("# A push that would break\n    A lease reaches its node.\n") == []


def test_no_python_module_names_the_arrays_A():
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel not in ALLOWED:
            bad += [f"{rel}:{line} ({kind})" for line, kind in one_letter_names(path.read_text(encoding="utf-8"))]
    assert bad == [], f"call the core's arrays `arrays` (and its parameters `params`), not A: {bad}"


def test_no_sim_cython_names_the_arrays_A():
    paths = sorted((PKG / "sim").glob("*.pyx")) + sorted((PKG / "sim").glob("*.px[di]"))
    assert paths
    bad = [f"{p.name}:{n}" for p in paths for n in cython_one_letter_lines(p.read_text(encoding="utf-8"))]
    assert bad == []


@pytest.mark.parametrize("backend", ["python", "compiled"])
def test_the_core_exposes_arrays_and_params_by_name(backend):
    if backend == "compiled":
        pytest.importorskip("magnum_lib.sim._core")
    run = build_region(make_config("magnum_v2", duration_s=0.02, seed=3), backend=backend)
    assert run.core.arrays is run.arrays
    assert run.core.params["n_nodes"] == len(run.arrays["node_dev"])
    assert not hasattr(run, "A") and not hasattr(run.core, "A") and not hasattr(run.core, "p")
