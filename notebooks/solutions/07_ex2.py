# One lock decides at most 1 / (250 ns + 100 us) ~ 9,975 times per second, whatever the
# number of schedulers; each brings 1,500 requests/s.
ex2_schedulers = int(system_model.lock_capacity_per_s() // 1500)
