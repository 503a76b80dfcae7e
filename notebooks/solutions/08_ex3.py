# Virtual nodes even out the ring, not the work (a class 25x slower on one device type still
# lands on the nodes its hash names). Look at the load instead: the less loaded of two nodes
# (two choices) is still no scan. The cost: two probes per request over the network instead of
# none, and the "same key, same node" locality that hashing gave (caches, warm graphs) is lost.
ex3_knobs = {"policy": "two-choices"}
