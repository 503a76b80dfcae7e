"""Exact assignment: SciPy's contract, SciPy's optimal cost, brute force, duality, inputs.

Two solvers share one contract and one set of input checks: the public function (SciPy's
solver behind the kit's checks) and the readable reference (``assignment_ref``, the
algorithm notebook 02 shows and claim C11 counts). Each is held to SciPy's optimal total
(assignments may differ under ties), to brute force, and to every refusal.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.optimize import linear_sum_assignment as scipy_lsa

from magnum_lib.base.validate import ParameterError
from magnum_lib.planner import assignment, assignment_ref
from magnum_lib.planner.assignment import linear_sum_assignment

# Run once (make unit): both solvers are the same on every backend (SciPy's is built by
# SciPy; the reference is plain Python), so the pure-Python run would repeat this file.
pytestmark = pytest.mark.once

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

SOLVERS = {"public": linear_sum_assignment, "reference": assignment_ref.linear_sum_assignment}

# Element kinds: few distinct integers (many ties), wider integers, plain floats, and
# magnitudes spread over 12 decades with both signs.
ELEMENTS = {
    "ties": st.integers(0, 3).map(float),
    "ints": st.integers(-50, 50).map(float),
    "floats": st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False),
    "wide": st.builds(lambda sign, exp: sign * 10.0**exp, st.sampled_from([-1.0, 1.0]),
                      st.floats(-3, 9)),
}


@st.composite
def problems(draw, max_side: int = 12, kinds=tuple(ELEMENTS)):
    """``(cost, maximize)``: a random matrix, sometimes with forbidden (infinite) entries."""
    shape = (draw(st.integers(0, max_side)), draw(st.integers(0, max_side)))
    cost = draw(hnp.arrays(np.float64, shape, elements=ELEMENTS[draw(st.sampled_from(kinds))]))
    maximize = draw(st.booleans())
    inf_fraction = draw(st.sampled_from([0.0, 0.0, 0.2, 0.6]))
    if inf_fraction and cost.size:
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        forbidden = rng.random(shape) < inf_fraction
        if draw(st.booleans()):  # keep one complete assignment finite: feasible
            k = min(shape)
            forbidden[np.arange(k), rng.permutation(shape[1])[:k]] = False
        cost[forbidden] = -np.inf if maximize else np.inf
    return cost, maximize


def tolerance(cost: np.ndarray) -> float:
    """Absolute slack for comparing totals: rounding in the prices is relative to the
    largest entry, not to the total (which may be small after cancellations)."""
    finite = np.abs(cost[np.isfinite(cost)])
    return 1e-12 * (finite.max(initial=0.0)) * (sum(cost.shape) + 1)


def total(cost, rows, cols) -> float:
    return math.fsum(cost[rows, cols].tolist())


def check_convention(cost, rows, cols):
    """SciPy's result convention: intp arrays, min(n, m) pairs, rows ascending, no reuse."""
    n, m = cost.shape
    assert rows.dtype == np.intp and cols.dtype == np.intp
    assert rows.shape == cols.shape == (min(n, m),)
    assert np.all(np.diff(rows) > 0)
    assert len(set(cols.tolist())) == len(cols)
    assert np.all((0 <= cols) & (cols < m)) and np.all((0 <= rows) & (rows < n))
    if n <= m:
        np.testing.assert_array_equal(rows, np.arange(n))


def brute_force(cost: np.ndarray, maximize: bool):
    """Every complete assignment's total, best first (for matrices up to ~6 x 6)."""
    flip = cost.shape[0] > cost.shape[1]
    c = cost.T if flip else cost
    n, m = c.shape
    sign = -1.0 if maximize else 1.0
    found = []
    for perm in itertools.permutations(range(m), n):
        value = math.fsum(c[i, perm[i]] for i in range(n))
        if math.isfinite(value):
            rows, cols = np.arange(n), np.array(perm, dtype=np.intp)
            if flip:
                order = np.argsort(cols)
                rows, cols = cols[order], rows[order]
            found.append((sign * value, rows, cols))
    found.sort(key=lambda t: t[0])
    return found


# ---------------------------------------------------------------- against SciPy

@pytest.mark.parametrize("solver", list(SOLVERS))
@SETTINGS
@given(problem=problems())
def test_same_optimal_cost_as_scipy(solver, problem):
    linear_sum_assignment = SOLVERS[solver]
    cost, maximize = problem
    try:
        expected_rows, expected_cols = scipy_lsa(cost, maximize=maximize)
    except ValueError as exc:
        assert "infeasible" in str(exc)
        with pytest.raises(ValueError, match="infeasible"):
            linear_sum_assignment(cost, maximize=maximize)
        return
    rows, cols = linear_sum_assignment(cost, maximize=maximize)
    check_convention(cost, rows, cols)
    expected = total(cost, expected_rows, expected_cols)
    assert math.isclose(total(cost, rows, cols), expected, rel_tol=1e-9,
                        abs_tol=tolerance(cost))


@pytest.mark.parametrize("solver", list(SOLVERS))
@settings(max_examples=100, deadline=None)
@given(problem=problems(max_side=6))
def test_optimal_against_brute_force_and_unique_optimum_identical(solver, problem):
    linear_sum_assignment = SOLVERS[solver]
    cost, maximize = problem
    found = brute_force(cost, maximize)
    if not found and cost.size:
        with pytest.raises(ValueError, match="infeasible"):
            linear_sum_assignment(cost, maximize=maximize)
        return
    rows, cols = linear_sum_assignment(cost, maximize=maximize)
    check_convention(cost, rows, cols)
    if not cost.size:
        return
    best = found[0][0] * (-1.0 if maximize else 1.0)
    assert math.isclose(total(cost, rows, cols), best, rel_tol=1e-9, abs_tol=tolerance(cost))
    unique = len(found) == 1 or found[1][0] - found[0][0] > 1e-6 * (abs(found[0][0]) + 1)
    if unique:  # then there is only one right answer, and SciPy gives it too
        np.testing.assert_array_equal(rows, found[0][1])
        np.testing.assert_array_equal(cols, found[0][2])
        scipy_rows, scipy_cols = scipy_lsa(cost, maximize=maximize)
        np.testing.assert_array_equal(cols, scipy_cols)


@pytest.mark.parametrize("shape", [(40, 40), (25, 60), (60, 25), (1, 30), (30, 1)])
@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("solver", list(SOLVERS))
def test_continuous_costs_identical_assignment_to_scipy(solver, shape, maximize):
    # Continuous random costs: the optimum is unique with probability 1.
    cost = np.random.default_rng(sum(shape)).normal(size=shape)
    rows, cols = SOLVERS[solver](cost, maximize=maximize)
    expected_rows, expected_cols = scipy_lsa(cost, maximize=maximize)
    np.testing.assert_array_equal(rows, expected_rows)
    np.testing.assert_array_equal(cols, expected_cols)


@pytest.fixture(params=list(SOLVERS))
def solve(request):
    """Each solver in turn: the public function (SciPy's) and the readable reference."""
    return SOLVERS[request.param]


def test_hand_checked_example(solve):
    # Totals: cols (1, 0, 2) -> 1 + 2 + 2 = 5; every other permutation costs 6 or more.
    rows, cols = solve([[4, 1, 3], [2, 0, 5], [3, 2, 2]])
    assert rows.tolist() == [0, 1, 2] and cols.tolist() == [1, 0, 2]
    rows, cols = solve([[4, 1, 3], [2, 0, 5], [3, 2, 2]], maximize=True)
    assert cols.tolist() == [0, 2, 1]  # 4 + 5 + 2 = 11, the unique maximum


def test_maximize_is_minimize_of_negated(solve):
    cost = np.random.default_rng(7).integers(-9, 10, size=(9, 13)).astype(float)
    rows, cols = solve(cost, maximize=True)
    neg_rows, neg_cols = solve(-cost)
    assert total(cost, rows, cols) == -total(-cost, neg_rows, neg_cols)


def test_forbidden_entries_are_avoided(solve):
    cost = np.array([[np.inf, 1.0, 3.0], [np.inf, 2.0, np.inf]])
    rows, cols = solve(cost)
    assert cols.tolist() == [2, 1]  # the only finite completion
    rows, cols = solve(-cost, maximize=True)
    assert cols.tolist() == [2, 1]


# ---------------------------------------------------------------- inputs

@pytest.mark.parametrize("shape", [(0, 0), (0, 5), (5, 0)])
def test_empty_matrices_give_empty_intp_arrays(shape, solve):
    for maximize in (False, True):
        rows, cols = solve(np.zeros(shape), maximize=maximize)
        assert rows.shape == cols.shape == (0,)
        assert rows.dtype == cols.dtype == np.intp
    rows, cols = solve([[]])
    assert rows.size == 0 and cols.size == 0


@pytest.mark.parametrize("matrix", [
    np.array([[True, False, True], [False, True, True]]),
    np.array([[3, 1], [2, 7], [5, 4]], dtype=np.int8),
    np.array([[3, 1], [2, 7]], dtype=np.uint64),
    np.array([[3, 1.5], [2, 7]], dtype=np.float32),
    np.array([[3, 1.5], [2, 7]], dtype=np.float16),
    [["3", "1.5"], ["2", "7"]],
    [[3, 1], [2, 7]],
    np.arange(30.0)[::-1].reshape(5, 6)[:, ::2],  # not contiguous
    np.asfortranarray(np.random.default_rng(3).random((6, 4))),
], ids=["bool", "int8", "uint64", "float32", "float16", "strings", "lists", "strided",
        "fortran"])
def test_accepted_inputs_as_scipy(matrix, solve):
    for maximize in (False, True):
        rows, cols = solve(matrix, maximize=maximize)
        expected_rows, expected_cols = scipy_lsa(matrix, maximize=maximize)
        cost = np.asarray(matrix, dtype=np.float64)
        assert total(cost, rows, cols) == total(cost, expected_rows, expected_cols)
        check_convention(cost, rows, cols)


def test_input_is_not_modified(solve):
    cost = np.random.default_rng(5).random((4, 7))
    before = cost.copy()
    solve(cost, maximize=True)
    solve(cost.T)
    np.testing.assert_array_equal(cost, before)


BAD = {
    "0-D": (3.0, False),
    "1-D": ([1.0, 2.0], False),
    "3-D": (np.zeros((2, 2, 2)), False),
    "ragged": ([[1, 2], [3]], False),
    "nan": ([[np.nan, 1], [1, 1]], False),
    "nan-max": ([[1, 1], [1, np.nan]], True),
    "-inf-min": ([[-np.inf, 1], [1, 1]], False),
    "+inf-max": ([[np.inf, 1], [1, 1]], True),
    "infeasible": ([[np.inf, np.inf], [1, 1]], False),
    "infeasible-max": ([[-np.inf, -np.inf], [1, 1]], True),
    "infeasible-wide": ([[np.inf, 1, np.inf], [np.inf, 2, np.inf]], False),
    "infeasible-tall": ([[np.inf, np.inf], [1, np.inf], [2, np.inf]], False),
    "all-inf": (np.full((3, 3), np.inf), False),
    "text": ([["a", "b"], ["c", "d"]], False),
    "string-array": (np.identity(3).astype(str), False),
    "bytes-array": (np.array([[b"1", b"2"]]), False),
    "object": (np.array([[1, None], [2, 3]], dtype=object), False),
    "complex": (np.array([[1 + 1j, 2], [3, 4]]), False),
    "datetime": (np.array([[1, 2]], dtype="datetime64[s]"), False),
    "float128": (np.array([[1, 2]], dtype=np.longdouble), False),
    "empty-object": (np.zeros((0, 3), dtype=object), False),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_inputs_raise_like_scipy(name, solve):
    matrix, maximize = BAD[name]
    with pytest.raises((ValueError, TypeError)) as theirs:
        scipy_lsa(matrix, maximize=maximize)
    with pytest.raises(theirs.type) as ours:
        solve(matrix, maximize=maximize)
    message = str(ours.value)
    if "infeasible" in str(theirs.value):
        assert "infeasible" in message
    if name not in ("ragged", "text"):  # numpy's own conversion errors, as in SciPy
        assert "cost_matrix" in message


def test_scipy_wording_that_callers_match(solve):
    # SciPy's messages are part of its contract: its own tests match them.
    with pytest.raises(ValueError, match="expected a matrix"):
        solve([1, 2, 3])
    with pytest.raises(TypeError, match="Cannot cast array data from dtype"):
        solve(np.identity(3).astype(str))
    with pytest.raises(ValueError, match="cost matrix is infeasible"):
        solve([[np.inf, 1.0], [np.inf, 2.0]])
    with pytest.raises(ValueError, match="contains invalid numeric entries"):
        solve([[1.0, None], [2.0, 3.0]])  # None is NaN, as in SciPy


def test_bad_entry_is_located(solve):
    with pytest.raises(ValueError, match=r"nan at \(1, 2\)"):
        solve([[1, 2, 3], [4, 5, np.nan]])
    with pytest.raises(ValueError, match=r"inf at \(0, 1\).*maximize=True"):
        solve([[1, np.inf], [4, 5]], maximize=True)


@pytest.mark.parametrize("shape", [(8, 8), (5, 9), (9, 5), (1, 4)])
def test_constant_matrix_gets_scipys_identity(solve, shape):
    # SciPy issue 11602: ties broken so that a constant matrix is assigned the identity.
    cost = np.ones(shape)
    rows, cols = solve(cost)
    expected_rows, expected_cols = scipy_lsa(cost)
    np.testing.assert_array_equal(rows, expected_rows)
    np.testing.assert_array_equal(cols, expected_cols)
    k = min(shape)
    np.testing.assert_array_equal(rows, np.arange(k))
    np.testing.assert_array_equal(cols, np.arange(k))


def test_checks_run_before_scipy(monkeypatch):
    # The kit's boundary refuses bad input itself, with its own errors: SciPy is never called.
    calls = []
    monkeypatch.setattr(assignment, "_scipy_lsa", lambda *a, **k: calls.append(a))
    for name in ("0-D", "3-D", "nan", "nan-max", "-inf-min", "+inf-max", "string-array", "object",
                 "complex", "datetime", "float128", "empty-object"):
        matrix, maximize = BAD[name]
        with pytest.raises((ParameterError, TypeError)):
            linear_sum_assignment(matrix, maximize=maximize)
    linear_sum_assignment(np.zeros((0, 4)))
    assert calls == []


def test_scipy_gets_the_prepared_matrix(monkeypatch):
    # SciPy solves the prepared form (float64, rows <= columns, negated when maximizing) and
    # the answer is mapped back to the input's rows and columns.
    seen = []

    def spy(cost):
        seen.append(cost)
        return scipy_lsa(cost)

    monkeypatch.setattr(assignment, "_scipy_lsa", spy)
    cost = np.array([[1, 9], [9, 1], [5, 5]], dtype=np.int8)
    rows, cols = linear_sum_assignment(cost, maximize=True)
    assert seen[0].dtype == np.float64 and seen[0].shape == (2, 3) and seen[0].flags.c_contiguous
    np.testing.assert_array_equal(seen[0], -cost.T.astype(float))
    expected_rows, expected_cols = scipy_lsa(cost, maximize=True)
    assert rows.tolist() == expected_rows.tolist() == [0, 1]
    assert cols.tolist() == expected_cols.tolist() == [1, 0]


# ---------------------------------------------------------------- the reference's kernel

@settings(max_examples=60, deadline=None)
@given(problem=problems(kinds=("ties", "floats", "ints")))
def test_dual_prices_certify_optimality(problem):
    # LP duality: prices with cost - u - v >= 0 everywhere, == 0 on the chosen pairs,
    # v <= 0 and v == 0 on unchosen columns prove no assignment is cheaper.
    cost, maximize = problem
    prepared, _ = assignment_ref.prepare(cost, maximize)
    if not prepared.size:
        return
    try:
        col4row, u, v = assignment_ref.shortest_augmenting_paths(prepared)
    except ValueError:
        assert not brute_force_feasible(prepared)
        return
    slack = 1e-9 * (np.abs(prepared[np.isfinite(prepared)]).max(initial=0.0) + 1.0)
    reduced = prepared - u[:, None] - v[None, :]
    assert np.all(reduced >= -slack)
    np.testing.assert_allclose(reduced[np.arange(len(col4row)), col4row], 0.0, atol=slack)
    assert np.all(v <= slack)
    unchosen = np.setdiff1d(np.arange(prepared.shape[1]), col4row)
    assert np.all(v[unchosen] == 0.0)


def brute_force_feasible(cost: np.ndarray) -> bool:
    """Whether some complete assignment avoids every infinite entry (rows <= cols):
    a maximum bipartite matching over the finite entries, by SciPy's independent code."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    matching = maximum_bipartite_matching(csr_matrix(np.isfinite(cost).astype(np.int8)),
                                          perm_type="column")
    return bool(np.all(matching >= 0))


KERNEL_BAD = {
    "nan": np.array([[np.nan, 2.0], [3.0, 1.0]]),
    "minus-inf": np.array([[-np.inf, 2.0], [3.0, 1.0]]),
    "all-nan": np.full((3, 3), np.nan),
    "rows-over-columns": np.zeros((3, 2)),
    "1-d": np.zeros(3),
    "float32": np.zeros((2, 2), np.float32),
    "none": None,
    "list": [[1.0, 2.0], [3.0, 4.0]],
}


@pytest.mark.parametrize("name", list(KERNEL_BAD))
def test_kernel_refuses_what_prepare_would_not_give_it(name):
    # The reference's kernel checks what it trusts (a NaN or -inf would let a scan pick no
    # column), in one short line.
    with pytest.raises((ValueError, TypeError)) as e:
        assignment_ref.shortest_augmenting_paths(KERNEL_BAD[name])
    assert len(str(e.value)) < 400
    col4row, _, _ = assignment_ref.shortest_augmenting_paths(np.array([[1.0, 2.0], [3.0, 1.0]]))
    assert col4row.tolist() == [0, 1]


def test_kernel_rejects_more_rows_than_columns():
    with pytest.raises(ValueError, match="rows <= columns"):
        assignment_ref.shortest_augmenting_paths(np.zeros((3, 2)))


@settings(max_examples=120, deadline=None)
@given(problems(max_side=9))
def test_reference_and_scipy_reach_the_same_optimum(problem):
    # The same feasibility, the same refusal, and the same optimal total; the assignments
    # themselves may differ where several are optimal.
    cost, maximize = problem
    outcomes = []
    for solve in (linear_sum_assignment, assignment_ref.linear_sum_assignment):
        try:
            outcomes.append(solve(cost, maximize=maximize))
        except ValueError as exc:
            outcomes.append(exc)
    ours, ref = outcomes
    if isinstance(ours, Exception) or isinstance(ref, Exception):
        assert type(ours) is type(ref) is ParameterError
        assert ("infeasible" in str(ours)) == ("infeasible" in str(ref))
        if "infeasible" not in str(ours):
            assert str(ours) == str(ref)
        return
    assert math.isclose(total(cost, *ours), total(cost, *ref), rel_tol=1e-9, abs_tol=tolerance(cost))
    for a, b in zip(ours, ref, strict=True):
        assert a.dtype == b.dtype == np.intp and a.shape == b.shape


def test_reference_step_count_is_deterministic_and_bounded():
    # C11 counts these steps: the same matrix gives the same count, and each of the r rows
    # scans at most c columns per search step, at most r searches deep: <= r * r * c.
    cost = np.random.default_rng(2).random((30, 45))
    first = assignment_ref.shortest_augmenting_paths(cost, return_steps=True)
    again = assignment_ref.shortest_augmenting_paths(cost.copy(), return_steps=True)
    assert first[3] == again[3] and isinstance(first[3], int)
    assert 30 * 45 <= first[3] <= 30 * 30 * 45
    for x, y in zip(first[:3], again[:3], strict=True):
        np.testing.assert_array_equal(x, y)


def test_same_total_on_a_larger_tied_instance():
    cost = np.random.default_rng(11).integers(0, 5, size=(60, 90)).astype(float)
    for maximize in (False, True):
        ours = linear_sum_assignment(cost, maximize)
        ref = assignment_ref.linear_sum_assignment(cost, maximize)
        expected = scipy_lsa(cost, maximize=maximize)
        assert total(cost, *ours) == total(cost, *ref) == total(cost, *expected)  # integers: exact


def test_huge_matrix_is_refused_before_any_copy(solve, monkeypatch):
    view = np.broadcast_to(np.zeros(1), (1, 10**9))  # 8 bytes of memory, 7.45 GiB if copied
    with pytest.raises(ParameterError) as e:
        solve(view)
    assert e.value.name == "cost_matrix" and "1,000,000,000 entries" in str(e.value)
    # At the bound it is solved; one past it is refused (a small bound keeps the test cheap).
    monkeypatch.setattr(assignment_ref, "MAX_COST_ENTRIES", 12)
    rows, cols = solve(np.broadcast_to(np.arange(4.0), (3, 4)))
    assert rows.tolist() == [0, 1, 2] and sorted(cols.tolist()) == [0, 1, 2]
    with pytest.raises(ParameterError, match="at most 12"):
        solve(np.zeros((1, 13)))
