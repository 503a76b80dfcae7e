# Solution to exercise 3 of 10_policy_arena: replay LAS for each starvation knob, keep the fairest.
# A small knob promotes starved jobs almost at once: thousands of preemptions, as jobs bounce
# between the queues. A large one (or 0, off) lets a demoted job starve behind every new job.
_grid = (0, 1, 2, 4, 8, 16, 32, 64)
_runs = {k: replay(TEACH, CLUSTER, TiresiasLAS(promote_knob=k)).summary() for k in _grid}
ex3_knob = min(_grid, key=lambda k: (_runs[k]["ftf_rho_max"], k))
print({k: (round(s["ftf_rho_max"], 1), s["preemptions"]) for k, s in _runs.items()}, "->", ex3_knob)
