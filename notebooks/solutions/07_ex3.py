# Conflicts come from several schedulers placing on the same stale view in the same round.
# One scheduler per region has no one to conflict with: refusals drop below 0.1% (only the
# view's age is left) and the window stays one round. What it gives up: the region's
# scheduling capacity is one scheduler's, and it is a single point of failure.
ex3_knobs = {"schedulers": 1}
