# Solution to exercise 3 of 10_policy_arena: replay LAS for each first threshold, keep the best.
_grid = (250, 500, 1000, 2000, 3250, 5000)
_jct = {t: replay(TEACH, CLUSTER, TiresiasLAS((t, 7200.0))).summary()["avg_jct_s"] for t in _grid}
ex3_threshold = min(_grid, key=lambda t: (_jct[t], t))
print({t: round(v / 3600, 1) for t, v in _jct.items()})
