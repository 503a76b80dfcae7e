# The worst of C serialised decisions waits C steps: C * step <= budget.
budget_us = cm.LEASE_BUDGET_MS * 1e3
ex3_schedulers = int(budget_us // (cm.DECISION_US + cm.RTT_US))
while cm.locking_latency_us(ex3_schedulers + 1)[1] <= budget_us:
    ex3_schedulers += 1
while cm.locking_latency_us(ex3_schedulers)[1] > budget_us:
    ex3_schedulers -= 1
print(f"{ex3_schedulers} schedulers: worst {cm.locking_latency_us(ex3_schedulers)[1]:.0f} µs")
