"""Exact assignment by shortest augmenting paths: the readable form of SciPy's solver.

The linear sum assignment problem: given an ``n x m`` cost matrix, pick at most one entry
per row and per column, ``min(n, m)`` entries in all, with the least total cost. This is
the Jonker-Volgenant family of algorithms in the form D. F. Crouse describes ("On
implementing 2D rectangular assignment algorithms", IEEE TAES 52(4), 2016), which is
also what SciPy uses. With rows <= columns:

* Keep dual prices ``u`` (rows) and ``v`` (columns) such that every *reduced cost*
  ``cost[i, j] - u[i] - v[j]`` is >= 0, and is 0 on every assigned pair.
* Add the rows one at a time. For each new row, run Dijkstra over the reduced costs:
  from the row, reach any column; from an assigned column, continue through the row
  that holds it. Stop at the first *free* column reached (the sink).
* Update the prices so the reduced costs stay >= 0 and the new path is tight, then flip
  the path: every row on it moves to the next column, the new row takes the first one.

Each row costs one Dijkstra, ``O(m)`` per scanned column, so ``O(n^2 m)`` in the worst
case and much less on typical matrices. The prices also prove the answer optimal: they
are a feasible solution of the dual linear program with the same value (tested).

The kit solves with SciPy (:mod:`magnum_lib.planner.assignment`); this module is the
algorithm to read, run and count. It follows SciPy's implementation (``rectangular_lsap.cpp``,
written from Crouse's pseudocode) loop for loop: the same scan order, the same tie-breaking,
the same price updates. So on continuous costs it returns SciPy's assignment (tested), and
its step count is the number of reduced costs SciPy's inner loop evaluates, which SciPy does
not report (claim C11's check, ``checks/oracle.py``, uses it).
"""
from __future__ import annotations

import math

import numpy as np

from magnum_lib.base.validate import ParameterError, excerpt

INF = math.inf
#: The largest cost matrix accepted (entries): 10^8 float64 is 800 MB, e.g. 10,000 x 10,000,
#: far past any planning round; checked before the matrix is copied.
MAX_COST_ENTRIES = 10**8


def as_cost_array(cost_matrix) -> np.ndarray:
    """``cost_matrix`` as a 2-D float64 array, converted exactly as SciPy converts it.

    An ndarray (or subclass such as ``numpy.matrix``) must have a dtype that casts safely
    to float64 (bool, integers, float16/32/64): anything else, strings included, is a
    TypeError with numpy's "Cannot cast array data" wording, as in SciPy. Nested Python
    sequences convert element by element as ``float()`` does, so ``[["1.5", "2"]]``
    parses, ``"a"`` is a ValueError and ``None`` becomes NaN (then refused).
    """
    if isinstance(cost_matrix, np.ndarray):
        a = cost_matrix
    else:
        a = np.asarray(cost_matrix)
        if a.dtype.kind in "USO":  # Python strings or objects: element-wise float()
            a = np.asarray(cost_matrix, dtype=np.float64)
    if a.ndim != 2:
        raise ParameterError(
            "cost_matrix", f"must be 2-D: expected a matrix (2-D array), got a {a.ndim}-D array "
                           f"of shape {excerpt(a.shape)}")
    if a.size > MAX_COST_ENTRIES:  # before any copy (a broadcast view may be huge and free)
        raise ParameterError(
            "cost_matrix", f"has {a.shape[0]} x {a.shape[1]} = {a.size:,} entries; at most "
                           f"{MAX_COST_ENTRIES:,} (MAX_COST_ENTRIES: 800 MB of float64)")
    if not np.can_cast(a.dtype, np.float64, casting="safe"):
        raise TypeError(f"Cannot cast array data from {a.dtype!r} to dtype('float64') according to "
                        "the rule 'safe': cost_matrix must hold real numbers (bool, integers, or "
                        "floats of at most 64 bits)")
    return np.asarray(a, dtype=np.float64)


def prepare(cost_matrix, maximize: bool = False) -> tuple[np.ndarray, bool]:
    """Validate ``cost_matrix`` and put it in the form the solvers take.

    Accepts what ``scipy.optimize.linear_sum_assignment`` accepts (see
    :func:`as_cost_array`). ``+inf`` marks a forbidden pair when minimizing, ``-inf``
    when maximizing.

    Returns
    -------
    cost : ndarray of float64, shape (r, c) with r <= c, C-contiguous
        Negated when ``maximize``; transposed when the input had more rows than columns.
    transposed : bool
        Whether ``cost`` is the transpose of the input.

    Raises
    ------
    ValueError
        Not 2-D; NaN; ``-inf`` when minimizing or ``+inf`` when maximizing; Python
        strings that are not numbers.
    TypeError
        An array whose dtype does not cast safely to float64 (strings, complex, object,
        datetime, longdouble, ...).
    """
    a = as_cost_array(cost_matrix)
    if maximize:
        a = -a  # maximizing c is minimizing -c
    lowest = a.min() if a.size else 0.0  # one pass: NaN propagates, -inf is the least
    if np.isnan(lowest) or lowest == -INF:
        i, j = np.argwhere(np.isnan(a) | np.isneginf(a))[0]
        value = -a[i, j] if maximize else a[i, j]
        accepted = "-inf" if maximize else "+inf"
        refused = "+inf" if maximize else "-inf"
        raise ParameterError("cost_matrix", f"contains invalid numeric entries: {value} at ({i}, {j}); "
                             f"accepted are finite numbers and {accepted} (a forbidden pair), "
                             f"not NaN or {refused} (maximize={maximize})")
    transposed = a.shape[0] > a.shape[1]
    if transposed:
        a = a.T  # the solvers assume rows <= columns: every row gets a column
    return np.ascontiguousarray(a), transposed


def check_prepared(cost) -> None:
    """What :func:`shortest_augmenting_paths` trusts, checked: a 2-D float64 array with
    rows <= columns whose entries are finite or ``+inf`` (no NaN, no ``-inf``, which would
    break Dijkstra)."""
    if not isinstance(cost, np.ndarray) or cost.dtype != np.float64 or cost.ndim != 2:
        raise TypeError(f"cost must be a 2-D float64 numpy array (see prepare()), got "
                        f"{getattr(cost, 'dtype', type(cost).__name__)} {getattr(cost, 'shape', '')}")
    if cost.shape[0] > cost.shape[1]:
        raise ValueError(f"cost must have rows <= columns, got shape {cost.shape}")
    if cost.size:
        lowest = cost.min()
        if np.isnan(lowest) or lowest == -INF:
            raise ValueError("cost must hold finite numbers or +inf (no NaN, no -inf); use prepare()")


def infeasible(row: int | None = None) -> ParameterError:
    """The error for a matrix with no complete assignment of finite cost (``row``: the row
    whose every completion meets an infinite entry, when the solver knows it)."""
    # "cost matrix is infeasible" is SciPy's wording, which callers (and its tests) match.
    where = "" if row is None else (f" (found while adding row {row} of the solved matrix, "
                                    "after transposing if rows > columns)")
    return ParameterError("cost_matrix", "has no complete assignment of finite cost: cost matrix "
                          f"is infeasible{where}")


def shortest_augmenting_paths(cost: np.ndarray, return_steps: bool = False):
    """Solve a prepared ``r x c`` problem (``r <= c``, float64, no NaN, no -inf).

    Returns
    -------
    col4row : ndarray of intp, shape (r,)
        The column assigned to each row.
    u, v : ndarray of float64, shapes (r,) and (c,)
        Dual prices: ``cost[i, j] - u[i] - v[j] >= 0`` everywhere (up to rounding),
        ``== 0`` on assigned pairs, ``v[j] <= 0`` and ``== 0`` on unassigned columns.
    steps : int, only when ``return_steps``
        Reduced costs evaluated (inner-loop iterations): the work, for timing per step.

    Raises
    ------
    ValueError
        When no complete assignment of finite cost exists.
    """
    check_prepared(cost)
    n_rows, n_cols = cost.shape
    rows = cost.tolist()  # Python floats: the same IEEE doubles, faster to index
    u = [0.0] * n_rows
    v = [0.0] * n_cols
    col4row = [-1] * n_rows
    row4col = [-1] * n_cols
    steps = 0
    for new_row in range(n_rows):
        # Dijkstra from new_row. dist[j]: shortest reduced-cost path to column j so far;
        # pred[j]: the row that path arrives from.
        dist = [INF] * n_cols
        pred = [-1] * n_cols
        # Columns still to scan are todo[:n_todo]. They start in reverse order, as in
        # SciPy: with the swap-removal below, a constant matrix then gets the identity
        # (SciPy issue 11602), and ties everywhere break the way SciPy breaks them.
        todo = list(range(n_cols - 1, -1, -1))
        n_todo = n_cols
        i, min_val = new_row, 0.0
        while True:
            row, ui = rows[i], u[i]
            lowest, best = INF, -1
            steps += n_todo
            for k in range(n_todo):
                j = todo[k]
                reduced = min_val + row[j] - ui - v[j]
                if reduced < dist[j]:
                    dist[j] = reduced
                    pred[j] = i
                # Among equally near columns, a free one ends the search sooner.
                if dist[j] < lowest or (dist[j] == lowest and row4col[j] < 0):
                    lowest, best = dist[j], k
            if lowest == INF:
                raise infeasible(new_row)
            min_val = lowest
            j = todo[best]
            # Mark j scanned: swap it to the end of the unscanned part. The scanned
            # columns pile up in todo[n_todo:], the nearest-last one at todo[n_todo].
            n_todo -= 1
            todo[best], todo[n_todo] = todo[n_todo], j
            if row4col[j] < 0:
                sink = j
                break
            i = row4col[j]
        _update_prices(u, v, new_row, min_val, dist, todo[n_todo + 1:], row4col)
        _flip_path(sink, new_row, pred, row4col, col4row)
    result = (np.array(col4row, dtype=np.intp), np.array(u, dtype=np.float64),
              np.array(v, dtype=np.float64))
    return result + (steps,) if return_steps else result


def _update_prices(u, v, new_row, min_val, dist, scanned, row4col) -> None:
    """Move the duals: ``new_row`` by ``min_val``, each ``scanned`` column and its row by its lead on the sink."""
    # Every scanned column (and the row holding it) moves by how much nearer it was than
    # the sink, which keeps reduced costs >= 0 and makes the whole path tight.
    u[new_row] += min_val
    for j in scanned:  # scanned columns except the sink
        delta = min_val - dist[j]
        u[row4col[j]] += delta
        v[j] -= delta


def _flip_path(sink, new_row, pred, row4col, col4row) -> None:
    """Augment: flip the path from column ``sink`` back to ``new_row`` (each row takes the next column)."""
    j = sink
    while True:
        i = pred[j]
        row4col[j] = i
        col4row[i], j = j, col4row[i]
        if i == new_row:
            break


def finish(col4row: np.ndarray, transposed: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(row_ind, col_ind)`` in SciPy's convention (``row_ind`` ascending) for the input."""
    if not transposed:
        return np.arange(col4row.shape[0], dtype=np.intp), col4row
    # Solved on the transpose: col4row maps each input column to its input row.
    order = np.argsort(col4row, kind="stable")
    return col4row[order], order.astype(np.intp, copy=False)


def linear_sum_assignment(cost_matrix, maximize: bool = False):
    """:func:`magnum_lib.planner.assignment.linear_sum_assignment` (same contract, same
    checks) solved by :func:`shortest_augmenting_paths` instead of SciPy."""
    cost, transposed = prepare(cost_matrix, maximize)
    if cost.size == 0:
        return np.empty(0, dtype=np.intp), np.empty(0, dtype=np.intp)
    col4row, _, _ = shortest_augmenting_paths(cost)
    return finish(col4row, transposed)
