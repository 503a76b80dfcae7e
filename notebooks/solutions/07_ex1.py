# The p95 is about one round period (a request waits up to one round for its first
# placement) plus RTT/2 (50 us) and up to one 250 us quantum: 1.5 ms rounds give ~1.75 ms.
ex1_round_s = 1.5e-3
