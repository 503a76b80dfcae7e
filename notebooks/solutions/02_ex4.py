# One exact plan per weight; read what each costs on both axes.
ex4_tradeoff = {}
for w in (0, 0.5, 1):
    p = plan(snap, "flow", weight=w)
    ex4_tradeoff[w] = (p.metrics.comm_time_s * 1e3, p.metrics.stranded_devices)
print(ex4_tradeoff)
