# For each shape: the two policies' picks, then the ratio of their times.
bf16 = [k for k, a in catalog.items() if "bf16" in a.peak_flops]
ratios = []
for intensity in np.logspace(0, 4, 41):
    costs_ex4 = {k: hardware.request_cost(k, intensity * 1e9, 1e9, "bf16") for k in bf16}
    frugal = min(costs_ex4.values(), key=lambda c: c.energy_j)
    ratios.append(frugal.time_s / min(c.time_s for c in costs_ex4.values()))
ex4_slowdown = float(np.median(ratios))
print(f"median slowdown of the least-energy device: {ex4_slowdown:.2f}x")
