# p95 of the round wait is 0.95 R, plus RTT/2 + validation + quantum alignment (up to 0.25 ms):
# try round periods downward from 2 ms until the p95 is under 2 ms.
for r in np.arange(2.0, 0.05, -0.1):
    ex2_round_ms = round(float(r), 1)
    p95 = simulate("magnum_v2", "classroom", duration_s=1.0, seed=0, round_s=ex2_round_ms / 1e3)["decision_latency_ms"]["p95"]
    if p95 < 2.0:
        break
print(f"round {ex2_round_ms} ms: p95 {p95:.2f} ms")
