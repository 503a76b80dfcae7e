def _busiest(v, n=500):
    k, o = _ring(np.arange(n), v, salt=1)
    a = np.diff(np.concatenate([[k[-1] - (1 << 62)], k])) / (1 << 62)
    return np.bincount(o, weights=a, minlength=n).max() * n


ex2_vnodes = 1
while _busiest(ex2_vnodes) > 1.5:
    ex2_vnodes *= 2
print(f"{ex2_vnodes} points per node: busiest {_busiest(ex2_vnodes):.2f}x fair")
