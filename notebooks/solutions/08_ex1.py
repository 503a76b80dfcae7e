# The maximum of n independent Exp(1) variables has mean H_n = 1 + 1/2 + ... + 1/n.
ex1_max_share = float(np.sum(1.0 / np.arange(1, 1001)))
print(f"H_1000 = {ex1_max_share:.3f}")
