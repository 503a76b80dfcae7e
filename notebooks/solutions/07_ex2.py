# One lock decides at most 1 / (250 ns + 50 us) ~ 19,900 times per second, whatever the
# number of schedulers; each brings 1,500 requests/s.
ex2_schedulers = int(system_model.lock_capacity_per_s(rtt_s=50e-6) // 1500)
