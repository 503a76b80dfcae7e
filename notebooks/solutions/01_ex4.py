# Two changes, one experiment each (same arrivals, same seed).
ex4_p99_ms = {"replica": queue_model.evaluate(500.0, 1.5, 2, jobs=JOBS, seed=SEED).p99_ms,
              "faster": queue_model.evaluate(500.0, 0.75, 1, jobs=JOBS, seed=SEED).p99_ms}
print({k: round(v, 2) for k, v in ex4_p99_ms.items()}, "ms")
