# Solution to exercise 3 of 06_heterogeneous_hell: the LP's normalised total over the blind share's.
cluster = dict(zip(TM.types, (24, 8, 4)))
ex3_speedup = hetero.allocate(TM, cluster).normalised_total / hetero.blind_allocation(TM, cluster).normalised_total
print(f"{cluster}: {ex3_speedup:.3f}x")
