"""Compiled exact assignment (shortest augmenting paths): the nogil twin of ``assignment_ref.py``.

Same arguments, same results (the same assignment, ties included) as
:func:`magnum_lib.planner.assignment_ref.shortest_augmenting_paths`; read that file for
the algorithm and its invariants.
"""
import numpy as np

from libc.math cimport INFINITY
from libc.stdint cimport int64_t

from magnum_lib._typedefs cimport float64_t, intp_t
from magnum_lib.planner.assignment_ref import check_prepared, infeasible, solve_with


cdef intp_t solve_sap(const float64_t[:, ::1] cost, float64_t[::1] u, float64_t[::1] v,
                      intp_t[::1] col4row, intp_t[::1] row4col, float64_t[::1] dist,
                      intp_t[::1] pred, intp_t[::1] todo, int64_t* steps) noexcept nogil:
    """Assign every row of a prepared ``r x c`` matrix (r <= c, no NaN/-inf).

    On entry u, v = 0, col4row, row4col = -1; dist, pred, todo are scratch space.
    Returns -1 on success, else the row for which no finite augmenting path exists.
    ``steps`` receives the number of reduced costs evaluated (inner-loop iterations).
    """
    cdef intp_t n_rows = cost.shape[0], n_cols = cost.shape[1]
    cdef intp_t new_row, i, j, k, best, n_todo, sink
    cdef float64_t min_val, lowest, reduced, ui, delta, d
    cdef const float64_t* row
    for new_row in range(n_rows):
        # Dijkstra over reduced costs from new_row (dist, pred as in the reference).
        for j in range(n_cols):
            dist[j] = INFINITY
            todo[j] = n_cols - 1 - j  # reverse order, as in SciPy (see the reference)
        n_todo = n_cols
        i = new_row
        min_val = 0.0
        while True:
            row = &cost[i, 0]
            ui = u[i]
            lowest = INFINITY
            best = -1
            steps[0] += n_todo
            for k in range(n_todo):
                j = todo[k]
                reduced = min_val + row[j] - ui - v[j]
                d = dist[j]  # a local: the stores below cannot make the compiler reload it
                if reduced < d:
                    d = reduced
                    dist[j] = d
                    pred[j] = i
                if d < lowest or (d == lowest and row4col[j] < 0):
                    lowest = d
                    best = k
            if lowest == INFINITY:
                return new_row
            min_val = lowest
            j = todo[best]
            n_todo -= 1
            todo[best] = todo[n_todo]
            todo[n_todo] = j
            if row4col[j] < 0:
                sink = j
                break
            i = row4col[j]
        # Prices of the scanned columns (all but the sink) and of the rows holding them.
        u[new_row] += min_val
        for k in range(n_todo + 1, n_cols):
            j = todo[k]
            delta = min_val - dist[j]
            u[row4col[j]] += delta
            v[j] -= delta
        # Flip the path from the sink back to new_row.
        j = sink
        while True:
            i = pred[j]
            row4col[j] = i
            k = col4row[i]
            col4row[i] = j
            j = k
            if i == new_row:
                break
    return -1


def shortest_augmenting_paths(cost_matrix, bint return_steps=False):
    """Solve a prepared ``r x c`` problem (``r <= c``, float64, no NaN, no -inf).

    Returns ``(col4row, u, v)`` (and ``steps`` when ``return_steps``) exactly as
    :func:`magnum_lib.planner.assignment_ref.shortest_augmenting_paths`, after the same
    ``check_prepared`` (a NaN or -inf would let the scan pick no column).
    """
    check_prepared(cost_matrix)
    cdef const float64_t[:, ::1] cost = np.ascontiguousarray(cost_matrix)
    cdef intp_t n_rows = cost.shape[0], n_cols = cost.shape[1]
    u = np.zeros(n_rows, dtype=np.float64)
    v = np.zeros(n_cols, dtype=np.float64)
    col4row = np.full(n_rows, -1, dtype=np.intp)
    # Typed views are taken here, with the GIL; the kernel then runs without it.
    cdef float64_t[::1] u_view = u, v_view = v
    cdef float64_t[::1] dist = np.empty(n_cols, dtype=np.float64)
    cdef intp_t[::1] col4row_view = col4row
    cdef intp_t[::1] row4col = np.full(n_cols, -1, dtype=np.intp)
    cdef intp_t[::1] pred = np.full(n_cols, -1, dtype=np.intp)
    cdef intp_t[::1] todo = np.empty(n_cols, dtype=np.intp)
    cdef intp_t failed
    cdef int64_t steps = 0
    with nogil:
        failed = solve_sap(cost, u_view, v_view, col4row_view, row4col, dist, pred, todo, &steps)
    if failed >= 0:
        raise infeasible(failed)
    return (col4row, u, v, steps) if return_steps else (col4row, u, v)


def linear_sum_assignment(cost_matrix, maximize=False):
    """Compiled twin of :func:`magnum_lib.planner.assignment.linear_sum_assignment`."""
    return solve_with(shortest_augmenting_paths, cost_matrix, maximize)
