greedy_plan = plan(ex2_snap, "greedy", weight=W)
optimal_plan = plan(ex2_snap, "flow", weight=W)       # exact: min-cost flow over classes
ex2_gap = greedy_plan.cost / optimal_plan.cost - 1
