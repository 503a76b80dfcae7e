# Below the least-energy clock, static power makes a slower run cost more energy, not less:
# never run slower than that clock (a faster clock still meets the deadline).
def _never_below_the_optimum(model, compute, memory, deadline):
    return max(model.slowest_clock_within(deadline, compute, memory), model.optimal_clock(compute, memory))


ex2_policy = _never_below_the_optimum
