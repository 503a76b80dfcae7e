# For each shape: the two policies' picks, then the ratio of their times; keep the shapes where they differ.
bf16 = [k for k, a in catalog.items() if "bf16" in a.peak_flops]
ratios = []
for intensity in np.logspace(0, 4, 41):
    costs_ex4 = {k: hardware.request_cost(k, intensity * 1e9, 1e9, "bf16") for k in bf16}
    frugal = min(costs_ex4.values(), key=lambda c: c.energy_j)
    ratios.append(frugal.time_s / min(c.time_s for c in costs_ex4.values()))
ratios = np.array(ratios)
differ = ratios[~np.isclose(ratios, 1)]
ex4_slowdown = float(np.median(differ))
ex4_shapes = int(differ.size)
print(f"{ex4_shapes} shapes differ; median slowdown of the least-energy device there: {ex4_slowdown:.2f}x")
