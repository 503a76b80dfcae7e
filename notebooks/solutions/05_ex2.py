# Try fanouts in increasing order until seed 0 reaches a majority within 5 rounds.
ex2_fanout = next(k for k in range(1, 100) if simulate(10_000, k, seed=0).rounds_to_quorum <= 5)
print(f"smallest fanout: {ex2_fanout}")
