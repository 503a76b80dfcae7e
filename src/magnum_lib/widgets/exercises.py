"""Exercise plumbing shared by the notebooks (see notebooks/README.md, "Exercises").

Each exercise cell leaves the student's answer as ``None`` and ends with
``load_solution("01_ex1", globals())``. That call does nothing for a student; when the
test runner sets ``MAGNUM_NB_SOLUTIONS=1`` it runs ``notebooks/solutions/01_ex1.py`` in
the notebook's namespace, so the check cell that follows truly asserts in CI. Students
who are stuck type ``%load solutions/01_ex1.py`` in a cell to see and run our answer.

Predictions: a Predict section leaves ``predict_... = None`` for the student's guess; the
cell that measures the answer calls :func:`reveal`, which compares the two. The score cell
at the end of a notebook calls :func:`score`: exercises attempted and passed (a check cell
calls :func:`passed` after its last assert), predictions written and how close they were.
"""
from __future__ import annotations

import math
import numbers
import os
from pathlib import Path

from magnum_lib._kit import KitNotFound, notebooks_dir

ENV = "MAGNUM_NB_SOLUTIONS"


def solutions_enabled() -> bool:
    """True when ``MAGNUM_NB_SOLUTIONS=1`` (set by ``make test`` for nbval)."""
    return os.environ.get(ENV, "").strip() not in ("", "0", "false", "no")


def solution_path(name: str) -> Path:
    """``solutions/<name>.py`` next to the running notebook, else the kit's copy (the
    package's, or the checkout's ``notebooks/solutions``)."""
    if not name.replace("_", "").isalnum():
        raise ValueError(f"solution name must look like '01_ex1', got {name!r}")
    local = Path.cwd() / "solutions" / f"{name}.py"
    try:
        shipped = notebooks_dir() / "solutions" / f"{name}.py"
    except KitNotFound:
        shipped = local
    path = local if local.is_file() else shipped
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
        _ATTEMPTED.add(name)
        return False
    if solutions_enabled():
        raise AssertionError(f"exercise {name}: answer is still None although {ENV}=1 loaded the solution")
    print(f"Exercise {name} not attempted yet: replace None in the cell above "
          f"(stuck? run `%load solutions/{name}.py` in a new cell).")
    return True


# -- the score of a session (one kernel) ----------------------------------------------------
_ATTEMPTED: set[str] = set()
_PASSED: set[str] = set()
_PREDICTIONS: dict[str, bool | None] = {}   # name -> close to the measurement? (None: no guess)
CLOSE_FACTOR = 2.0                          # a numeric guess within 2x of the measurement is "close"


def passed(name: str) -> None:
    """Record that exercise ``name``'s check cell ran all its asserts."""
    _PASSED.add(name)


def _close(guess, measured) -> bool:
    if isinstance(guess, numbers.Real) and isinstance(measured, numbers.Real) and not isinstance(guess, bool):
        g, m = float(guess), float(measured)
        if g == m:
            return True
        if g <= 0 or m <= 0 or not (math.isfinite(g) and math.isfinite(m)):
            return False
        return max(g / m, m / g) <= CLOSE_FACTOR
    if isinstance(guess, (tuple, list)) and isinstance(measured, (tuple, list)):
        return tuple(guess) == tuple(measured)
    return guess == measured


def _letters(answer, choices: str) -> str:
    """The choice letters in ``answer`` ("c, a", ["a", "c"] -> "ac"), in ``choices``' order."""
    text = "".join(map(str, answer)) if isinstance(answer, (list, tuple, set, frozenset)) else str(answer)
    picked = set(text.lower())
    return "".join(c for c in choices if c in picked)


def reveal(name: str, guess, measured, unit: str = "", choices: str | None = None) -> bool | None:
    """Print the student's guess beside the measured value; return whether it was close.

    A number is close within a factor of 2 (:data:`CLOSE_FACTOR`); anything else must be equal.
    With ``choices`` (e.g. ``"abc"``) the guess and the measurement are sets of choice letters:
    ``"ca"``, ``"a, c"`` and ``("a", "c")`` all mean ``"ac"``.
    Returns None (and says so) when no guess was written.
    """
    if choices is not None:
        measured = _letters(measured, choices)
        guess = None if guess is None else _letters(guess, choices)
    unit = f" {unit}" if unit else ""
    show = (lambda v: f"{v:,.4g}") if isinstance(measured, numbers.Real) and not isinstance(measured, bool) else repr
    if guess is None:
        _PREDICTIONS.setdefault(name, None)
        print(f"Prediction {name}: no guess written. Measured: {show(measured)}{unit}.")
        return None
    close = _close(guess, measured)
    _PREDICTIONS[name] = close
    if isinstance(guess, numbers.Real) and isinstance(measured, numbers.Real) and not isinstance(guess, bool) \
            and float(guess) > 0 and float(measured) > 0:
        ratio = float(measured) / float(guess)
        how = f"{ratio:.3g}x your guess" if ratio >= 1 else f"{1 / ratio:.3g}x below your guess"
    else:
        how = "as you said" if close else "not what you said"
    verdict = "close" if close else "off: read the Explain cell"
    print(f"Prediction {name}: you guessed {show(guess) if not isinstance(guess, str) else repr(guess)}{unit}; "
          f"measured {show(measured)}{unit} ({how}): {verdict}.")
    return close


def score(notebook: str) -> dict:
    """Print and return this session's score for ``notebook`` ("00"): exercises and predictions."""
    mine = lambda names: sorted(n for n in names if n.startswith(f"{notebook}_"))  # noqa: E731
    attempted, done = mine(_ATTEMPTED), mine(_PASSED)
    preds = {k: v for k, v in _PREDICTIONS.items() if k.startswith(f"{notebook}_")}
    written = [k for k, v in preds.items() if v is not None]
    close = [k for k, v in preds.items() if v]
    print(f"Notebook {notebook}: exercises attempted {len(attempted)}, passed {len(done)}"
          + (f" ({', '.join(done)})" if done else ""))
    print(f"predictions written {len(written)} of {len(preds)} met, close to the measurement {len(close)}")
    return {"attempted": attempted, "passed": done, "predictions": sorted(preds), "guessed": sorted(written),
            "close": sorted(close)}


def reset_score() -> None:
    """Forget this session's score (tests; a student restarting a notebook restarts the kernel)."""
    _ATTEMPTED.clear()
    _PASSED.clear()
    _PREDICTIONS.clear()
