"""Layer 1, the global "Oracle" planner: the article's cost function, exact assignment,
min-cost flow over equivalence classes, an LP lower bound, and soft placement hints.

Import from the submodules, e.g. ``from magnum_lib.planner.assignment import linear_sum_assignment``.
"""
