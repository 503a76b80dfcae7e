# Solution to exercise 4 of 06_heterogeneous_hell: pack_simple with step 3 choosing the shortest ready layer.
def shortest_first(jobs, capacity, max_resident=None, n_links=1):
    max_resident = max_resident or len(jobs)
    waiting = sorted(range(len(jobs)), key=lambda j: jobs[j]["arrival"])
    resident = {}
    link_free = [0] * n_links
    start, end, done, t, used = {}, {}, {}, 0, 0
    while waiting or resident:
        for j, (k, ready) in list(resident.items()):
            if k == len(jobs[j]["layers"]) and ready <= t:
                used -= jobs[j]["reserve"]
                done[j] = ready
                del resident[j]
        for j in [j for j in waiting if jobs[j]["arrival"] <= t]:
            if len(resident) < max_resident and used + jobs[j]["reserve"] <= capacity:
                used += jobs[j]["reserve"]
                waiting.remove(j)
                resident[j] = (0, t)
        # the only change: the key puts the ready layer's runtime first
        ready = [(jobs[j]["layers"][k][0], r, j) for j, (k, r) in resident.items()
                 if k < len(jobs[j]["layers"]) and r <= t]
        if ready:
            j = min(ready)[2]
            k = resident[j][0]
            runtime, transfer, link = jobs[j]["layers"][k]
            start[j, k], end[j, k] = t, t + runtime
            t += runtime
            if transfer:
                link_free[link] = max(t, link_free[link]) + transfer
            resident[j] = (k + 1, link_free[link] if transfer else t)
        elif waiting or resident:
            t = min([r for _, r in resident.values()] + [jobs[j]["arrival"] for j in waiting
                                                         if jobs[j]["arrival"] > t])
    return start, end, done


ex4_pack = shortest_first
