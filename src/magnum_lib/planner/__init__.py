"""Layer 1, the global "Oracle" planner: the article's cost function, exact assignment,
min-cost flow over equivalence classes, an LP lower bound, and soft placement hints.

``linear_sum_assignment`` (SciPy's, behind the kit's input checks) is exported here; import the rest from
the submodules, e.g. ``from magnum_lib.planner.flow import ...``.
"""
from magnum_lib.planner.assignment import linear_sum_assignment

__all__ = ["linear_sum_assignment"]
