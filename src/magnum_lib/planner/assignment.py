"""Exact linear sum assignment, a drop-in for ``scipy.optimize.linear_sum_assignment``.

The compiled kernel (``_assignment.pyx``) is used when built, else the pure-Python
reference (``assignment_ref.py``, which also explains the algorithm); ``MAGNUM_PUREPYTHON=1``
forces the reference. Both return the same assignment.
"""
from __future__ import annotations

from magnum_lib._backend import pick

_impl = pick("magnum_lib.planner._assignment", "magnum_lib.planner.assignment_ref")

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

    Ties are broken as SciPy breaks them (a constant matrix gets the identity, SciPy
    issue 11602): SciPy's own test file passes against this function (tests/test_planner_scipy_suite.py).

    Examples
    --------
    >>> cost = [[4, 1, 3], [2, 0, 5], [3, 2, 2]]
    >>> row_ind, col_ind = linear_sum_assignment(cost)
    >>> col_ind.tolist()
    [1, 0, 2]
    """
    return _impl.linear_sum_assignment(cost_matrix, maximize)
