# Arrivals are uniform over a round, so the wait for the next round is uniform on [0, R]: mean R / 2.
ex1_wait_ms = 3.7 / 2
