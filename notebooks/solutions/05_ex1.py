# Push gossip with fanout k reaches everyone in log_(1+k) N + (ln N) / k rounds on average.
ex1_rounds = round(theory.push_rounds_expected(10_000, 3), 2)
print(f"predicted: {ex1_rounds:.2f} rounds")
