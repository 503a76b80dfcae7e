# Solution to exercise 2 of 10_policy_arena: scan the cluster sizes, keep the first within 5%.
def _ratio(g):
    c = ReplayCluster.uniform(g // 4, 4)
    strict = replay(TEACH, c, "fifo-strict").summary()["avg_jct_s"]
    return strict / replay(TEACH, c, "fifo-skip").summary()["avg_jct_s"]


_ratios = {4 * n: _ratio(4 * n) for n in range(5, 21)}
ex2_gpus = next(g for g, r in _ratios.items() if r <= 1.05)
print({g: round(r, 3) for g, r in _ratios.items()}, "->", ex2_gpus)
