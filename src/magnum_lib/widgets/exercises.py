"""Exercise plumbing shared by the notebooks (see notebooks/README.md, "Exercises").

Each exercise cell leaves the student's answer as ``None`` and ends with
``load_solution("01_ex1", globals())``. That call does nothing for a student; when the
test runner sets ``MAGNUM_NB_SOLUTIONS=1`` it runs ``notebooks/solutions/01_ex1.py`` in
the notebook's namespace, so the check cell that follows truly asserts in CI. Students
who are stuck type ``%load solutions/01_ex1.py`` in a cell to see and run our answer.
"""
from __future__ import annotations

import os
from pathlib import Path

ENV = "MAGNUM_NB_SOLUTIONS"
_REPO_SOLUTIONS = Path(__file__).resolve().parents[3] / "notebooks" / "solutions"


def solutions_enabled() -> bool:
    """True when ``MAGNUM_NB_SOLUTIONS=1`` (set by ``make test`` for nbval)."""
    return os.environ.get(ENV, "").strip() not in ("", "0", "false", "no")


def solution_path(name: str) -> Path:
    """``solutions/<name>.py`` next to the running notebook, else the repository's copy."""
    if not name.replace("_", "").isalnum():
        raise ValueError(f"solution name must look like '01_ex1', got {name!r}")
    local = Path.cwd() / "solutions" / f"{name}.py"
    path = local if local.is_file() else _REPO_SOLUTIONS / f"{name}.py"
    if not path.is_file():
        raise FileNotFoundError(f"no solution file for {name!r} (looked at {local} and {path})")
    return path


def load_solution(name: str, namespace: dict) -> None:
    """Run solution ``name`` in ``namespace`` when solutions are enabled, else do nothing.

    Returns None so the notebook cell shows no output.
    """
    if not solutions_enabled():
        return
    path = solution_path(name)
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)  # noqa: S102


def pending(answer, name: str) -> bool:
    """True (with a hint printed) while the student's ``answer`` is still None.

    Under ``MAGNUM_NB_SOLUTIONS=1`` an unanswered exercise is an error, so CI can never
    skip a check silently.
    """
    if answer is not None:
        return False
    if solutions_enabled():
        raise AssertionError(f"exercise {name}: answer is still None although {ENV}=1 loaded the solution")
    print(f"Exercise {name} not attempted yet: replace None in the cell above "
          f"(stuck? run `%load solutions/{name}.py` in a new cell).")
    return True
