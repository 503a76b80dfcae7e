# Solution to exercise 2 of 10_policy_arena: scan the cluster sizes, keep the first within 5%.
def _ratio(g):
    c = ReplayCluster.uniform(g // 4, 4)
    strict = replay(TEACH, c, "fifo-strict").summary()["avg_jct_s"]
    return strict / replay(TEACH, c, "fifo-skip").summary()["avg_jct_s"]


ex2_gpus = next(4 * n for n in range(5, 21) if _ratio(4 * n) <= 1.05)
print(ex2_gpus)
