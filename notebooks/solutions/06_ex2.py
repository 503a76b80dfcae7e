# Solution to exercise 2 of 06_heterogeneous_hell: scan the grid upward, stop at the first miss.
ex2_pressure = None
for m in np.round(np.arange(0.05, 1.0, 0.05), 2):
    jobs40 = packing.make_inference_graphs(40, 3, runtime_spread=1.0, memory_pressure=float(m), device="mtia_v2")
    u = packing.pack(jobs40).utilization
    if u < packing_model.TARGET:
        ex2_pressure = float(m)
        break
print(f"packing drops below 95% at memory pressure {ex2_pressure} ({u:.1%})")
