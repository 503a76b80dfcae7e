# Sweep the parameter, slowest first; keep the first bandwidth that is good enough.
lock_util = runs["pessimistic"]["utilization"]
useful = {}
for bw in ["25GB/s", "100GB/s", "1TB/s", "10TB/s", "100TB/s"]:
    useful[bw] = simulate_scheduling("speculative", nodes=64, schedulers=8, rounds=ROUNDS, load=0.9, seed=SEED,
                                     checkpoint_bandwidth=bw).utilization
    print(f"{bw:>8}: useful utilization {useful[bw]:.1%} ({useful[bw] / lock_util:.0%} of the lock's)")
ex4_bandwidth = next(bw for bw, u in useful.items() if u >= 0.9 * lock_util)
