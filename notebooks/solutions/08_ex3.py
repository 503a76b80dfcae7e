# Two imbalances, two fixes, and the placement stays a hash (no probes, same key -> same node).
# Virtual nodes even out the ring's arcs; a type-aware ring (hetero_aware: each class hashes only
# over the device types that meet its SLA) evens out the work: a class 25x slower on an MTIA no
# longer lands on the MTIA its key names. Either alone leaves a tail. The cost: 64 ring points per
# node (a larger ring to keep consistent as nodes come and go), one ring per class's type set,
# and the cost model (roofline times per class and type) kept up to date.
ex3_knobs = {"hetero_aware": True, "ring_vnodes": 64}
