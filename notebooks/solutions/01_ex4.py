# Two changes, one experiment each (same arrivals, same seed).
ex4_p99_ms = {"replica": queue_model.evaluate(500.0, 1.5, 2, jobs=JOBS, seed=SEED).p99_ms,
              "faster": queue_model.evaluate(500.0, 0.75, 1, jobs=JOBS, seed=SEED).p99_ms}
# Read the answers off the measurements: neither p99 is within 5 ms.
ex4_meets_sla = {k for k, v in ex4_p99_ms.items() if v <= queue_model.SLA_MS}
ex4_closer = min(ex4_p99_ms, key=ex4_p99_ms.get)
print(f"p99 {', '.join(f'{k} {v:.2f} ms' for k, v in ex4_p99_ms.items())}; "
      f"meet the SLA: {', '.join(sorted(ex4_meets_sla)) or 'neither'}; closer: {ex4_closer}")
