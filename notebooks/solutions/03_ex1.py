# C(C-1)/(2N) < 1e-5 gives a first guess; step from there with the exact bound.
C, target = 20, 1e-5
ex1_nodes = int(C * (C - 1) / 2 / target)
while birthday_bound(ex1_nodes, C) >= target:
    ex1_nodes += 1
while birthday_bound(ex1_nodes - 1, C) < target:
    ex1_nodes -= 1
print(f"{ex1_nodes:,} nodes: P(conflict) = {birthday_bound(ex1_nodes, C):.3e}")
