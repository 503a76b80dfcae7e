# Node class = (bandwidth tier, device type, capacity, free devices > 0):
# 3 tiers x 3 types x 1 capacity (8) x 8 free counts (1..8; full nodes take no job).
n_types = len(make_snapshot(1, 0).type_keys)
node_classes = len(BANDWIDTH_TIERS_GBPS) * n_types * 1 * 8
# Job class = (demand 1/2/4/8, type preference: any or one of the types, traffic level, priority 1/2/3).
job_classes = 4 * (n_types + 1) * len(COMM_LEVELS_GB) * 3
ex3_classes = (node_classes, job_classes)
