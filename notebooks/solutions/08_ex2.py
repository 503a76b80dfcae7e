# The largest share falls as v grows (about 1 + sqrt(2 ln n / v)); take the first v at or under 1.25.
ex2_vnodes = next(v for v in range(1, 10_000) if system_model.ring_max_share_theory(1000, v) <= 1.25)
