# The smallest d whose N -> infinity mean time in system at load 0.95 is at most 2.5.
ex1_choices = next(d for d in range(1, 50) if balance.theory_time_in_system(0.95, d) <= 2.5)
print(f"d = {ex1_choices}")
