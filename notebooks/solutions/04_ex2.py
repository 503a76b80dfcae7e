# A copy is sent when X > t_h, so 2% extra load means t_h = the 98th percentile.
ex2_delay_ms = service.quantile(0.98) * 1e3
print(f"hedge after {ex2_delay_ms:.2f} ms")
