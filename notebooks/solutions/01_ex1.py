# Solution to exercise 1 of 01_why_kubernetes_cries: the fewest replicas meeting a 5 ms p99.
lam, mu = 2000.0, 1e3 / 0.8
ex1_replicas = int(lam // mu) + 1          # the fewest replicas with c * mu > lam (a stable queue)
while queue_model.mmc_sojourn_quantile(0.99, ex1_replicas, lam, mu) * 1e3 > queue_model.SLA_MS:
    ex1_replicas += 1
print("replicas:", ex1_replicas)
