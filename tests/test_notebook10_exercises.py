"""Notebook 10's exercise checks cannot be gamed: the solution passes, every other answer fails.

Each check cell is run as committed (taken from the notebook by cell id) in the notebook's
own setup, with the solution's answer, with every other value of the answer's domain (so
every number the notebook prints that could be an answer is covered), with the naive
answers (the defaults, the example shown above), and with the loopholes found in review
(a shipped policy renamed, a duration read inside a lambda).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = [pytest.mark.needs_traces, pytest.mark.once]  # once: the exercises' check cells, not the backend

ROOT = Path(__file__).resolve().parents[1]
NB = ROOT / "notebooks" / "10_policy_arena.ipynb"
SETUP, EXAMPLE, HELD_OUT_CELL = "571e0615", "2a8ef998", "0343cc8f"
CHECKS = {"10_ex1": "31d270a0", "10_ex2": "d6caa084", "10_ex3": "bdc0d03d"}


def _cells() -> dict:
    nb = json.loads(NB.read_text(encoding="utf-8"))
    return {c["id"]: "".join(c["source"]) for c in nb["cells"]}


@pytest.fixture(scope="module")
def setup():
    """The namespace the check cells run in: the notebook's setup, example and held-out slices."""
    import matplotlib

    matplotlib.use("Agg")
    cells = _cells()
    ns: dict = {}
    exec(cells[SETUP], ns)
    exec(cells[EXAMPLE].split("\nr = replay(")[0], ns)        # the class, not its demo run
    held_out = next(line for line in cells[HELD_OUT_CELL].splitlines() if line.startswith("HELD_OUT ="))
    exec(held_out, ns)                                        # (not the Dask leaderboard)
    return cells, ns


def _check(setup, exercise: str, **answer) -> bool:
    """True when the committed check cell of ``exercise`` accepts ``answer``."""
    cells, base = setup
    ns = dict(base, **answer)
    try:
        exec(cells[CHECKS[exercise]], ns)
    except Exception:          # AssertionError, or the replay refusing the policy (OracleError)
        return False
    return True


def _solution(setup, exercise: str, var: str):
    _, base = setup
    ns = dict(base)
    exec((ROOT / "notebooks" / "solutions" / f"{exercise}.py").read_text(encoding="utf-8"), ns)
    return ns[var]


def test_check_cells_do_not_contain_the_search():
    cells = _cells()
    for ex in ("10_ex2", "10_ex3"):
        code = cells[CHECKS[ex]]
        assert "min(" not in code and "for n in range" not in code and "for k in grid" not in code, ex


def test_ex2_only_the_smallest_passes(setup):
    answer = _solution(setup, "10_ex2", "ex2_gpus")
    assert _check(setup, "10_ex2", ex2_gpus=answer)
    for g in range(20, 81, 4):                # every other answer of the domain (20 is CLUSTER's)
        if g != answer:
            assert not _check(setup, "10_ex2", ex2_gpus=g), g
    for naive in (12, 64, 600, 100, float(answer), str(answer)):   # printed above, or not an int
        assert not _check(setup, "10_ex2", ex2_gpus=naive), naive


def test_ex3_only_the_best_knob_passes(setup):
    answer = _solution(setup, "10_ex3", "ex3_knob")
    assert _check(setup, "10_ex3", ex3_knob=answer)
    for k in (0, 1, 2, 4, 8, 16, 32, 64):
        if k != answer:
            assert not _check(setup, "10_ex3", ex3_knob=k), k
    for naive in (3, 3250, 7200):
        assert not _check(setup, "10_ex3", ex3_knob=naive), naive


def test_ex1_solution_passes_and_loopholes_fail(setup):
    _, ns = setup
    Policy, shipped = ns["Policy"], ns["shipped"]
    assert _check(setup, "10_ex1", ex1_policy=_solution(setup, "10_ex1", "ex1_policy"))

    class EmptyLAS(shipped.TiresiasLAS):          # a shipped policy renamed
        pass

    class PeeksInALambda(Policy):                 # fooled the old co_names check
        name = "peeks"

        def schedule(self, view):
            plan = view.plan()
            for job in sorted(view.queue, key=lambda j: j.remaining_s):
                plan.start(job)
            return plan

    class DeclaredOracle(PeeksInALambda):
        oracle = True

    for bad in (ns["SmallestGangFirst"], EmptyLAS, shipped.TiresiasLAS, shipped.FifoSkip,
                PeeksInALambda, DeclaredOracle, "las"):
        assert not _check(setup, "10_ex1", ex1_policy=bad), bad
