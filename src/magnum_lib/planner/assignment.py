"""Exact linear sum assignment: ``scipy.optimize.linear_sum_assignment`` behind the kit's checks.

The kit's inputs are checked here first, with the kit's errors (``ParameterError`` naming
``cost_matrix``, and the size limit before any copy); SciPy's solver then does the work.
SciPy is a dependency, so this is the same on every backend (``MAGNUM_PUREPYTHON=1``
included). ``assignment_ref.py`` is the readable form of the same algorithm, with a step
counter: notebook 02 reads it and claim C11's check counts its steps.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment as _scipy_lsa

from magnum_lib.planner.assignment_ref import finish, infeasible, prepare

__all__ = ["linear_sum_assignment"]


def linear_sum_assignment(cost_matrix, maximize: bool = False):
    """Solve the linear sum assignment problem (same contract as SciPy's).

    Pick one entry in each row and each column, ``min(n, m)`` in all, so that their sum
    is least (or greatest with ``maximize=True``). Shortest augmenting paths with dual
    prices (Jonker-Volgenant as described by Crouse, 2016), ``O(n^2 m)`` at worst.

    Parameters
    ----------
    cost_matrix : array_like, shape (n, m)
        Costs in any unit. An array whose dtype casts safely to float64 (bool, int,
        float up to 64 bits), or nested lists of numbers (numeric strings in a list parse,
        as in SciPy). ``+inf`` forbids a pair when minimizing, ``-inf`` when maximizing.
    maximize : bool, default False
        Maximize the total instead of minimizing it.

    Returns
    -------
    row_ind, col_ind : ndarray of intp, shape (min(n, m),)
        The chosen entries ``cost_matrix[row_ind, col_ind]``; ``row_ind`` is ascending
        (``arange(n)`` when ``n <= m``). Empty arrays for an empty matrix.

    Raises
    ------
    ValueError
        Not 2-D ("expected a matrix"); NaN, ``-inf`` when minimizing or ``+inf`` when
        maximizing ("contains invalid numeric entries"); no complete assignment of finite
        cost ("cost matrix is infeasible"); non-numeric strings in a list; more than
        ``assignment_ref.MAX_COST_ENTRIES`` (10^8) entries, checked before any copy. The quoted
        words are SciPy's, so code that matches SciPy's messages keeps working.
    TypeError
        An array whose dtype does not cast safely to float64 (strings, complex, object,
        datetime, longdouble): "Cannot cast array data ...", as in SciPy.

    SciPy's own test file passes against this function (tests/test_planner_scipy_suite.py).

    Examples
    --------
    >>> cost = [[4, 1, 3], [2, 0, 5], [3, 2, 2]]
    >>> row_ind, col_ind = linear_sum_assignment(cost)
    >>> col_ind.tolist()
    [1, 0, 2]
    """
    # The reference's checks and conversion: a float64 matrix, rows <= columns, negated
    # when maximizing. SciPy then sees only what it would accept and solve the same way.
    cost, transposed = prepare(cost_matrix, maximize)
    if cost.size == 0:
        return np.empty(0, dtype=np.intp), np.empty(0, dtype=np.intp)
    try:
        _, col4row = _scipy_lsa(cost)
    except ValueError as err:  # after prepare(), SciPy's only refusal left is infeasibility
        if "infeasible" not in str(err):
            raise
        raise infeasible() from None
    return finish(np.asarray(col4row, dtype=np.intp), transposed)
