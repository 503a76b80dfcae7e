# p95 of the round wait is 0.95 R, plus RTT/2 + validation + quantum alignment (up to 0.25 ms):
# try round periods downward from 2 ms until the p95 is under 2 ms.
def _p95(round_ms):
    return simulate("magnum_v2", "classroom", duration_s=1.0, seed=0, round_s=round_ms / 1e3)["decision_latency_ms"]["p95"]


ex2_round_ms = 2.0
while _p95(ex2_round_ms) >= 2.0:
    ex2_round_ms = round(ex2_round_ms - 0.1, 1)
print(f"round {ex2_round_ms} ms: p95 {_p95(ex2_round_ms):.2f} ms")
