# Solution to exercise 4 of 10_policy_arena: tune the last threshold on TEACH only.
# A job demoted at 7,200 GPU-s is often one that would have finished soon after; with the
# last queue starting later, mid-sized jobs finish in the middle queue instead of waiting
# behind every new job, and fewer jobs are preempted. Long jobs pay: they reach the bottom
# queue later but then wait there behind everything else, so their JCT can grow.
_grid = [(3250.0, t) for t in (7200.0, 10000.0, 14400.0, 20000.0, 28800.0)]
_jct = {th: replay(TEACH, CLUSTER, TiresiasLAS(th)).summary()["avg_jct_s"] for th in _grid}
ex4_thresholds = min(_grid, key=lambda th: (_jct[th], th))
print({th[1]: round(v / 3600, 2) for th, v in _jct.items()}, "->", ex4_thresholds)
