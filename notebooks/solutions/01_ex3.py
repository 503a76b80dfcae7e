# Solution to exercise 3 of 01_why_kubernetes_cries: smallest n with S(n) >= 0.8 / serial.
serial = 0.05
ex3_replicas = 1
while theory.amdahl_speedup(1 - serial, ex3_replicas) < 0.8 / serial - 1e-9:
    ex3_replicas += 1
print("replicas:", ex3_replicas)
