# Solution to exercise 2 of 01_why_kubernetes_cries: M/M/1 p99 = ln(100) / (mu - lam) = 50 ms.
mu = 680.0
ex2_max_rate = mu - np.log(100) / 0.050
print(f"max rate: {ex2_max_rate:.1f} pods/s")
