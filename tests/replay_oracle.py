"""An independent, deliberately naive replay for the built-in event-driven policies.

Written from the policies' descriptions (Tiresias' list-based style: lists of job
dicts re-sorted or re-scanned at every event), sharing no code with
magnum_lib.replay, so the tests can compare both of its loops against it. Integer
nanoseconds throughout; pooled GPUs (counting only).
"""
from __future__ import annotations


def oracle(submit, work, gpus, total, policy, thresholds=(), knob=0.0):
    jobs = [dict(id=i, submit=int(s), work=int(w), g=int(g), rem=int(w), att=0, base=0,
                 starve=0, q=0, start=None, finish=None, pre=0, run=False)
            for i, (s, w, g) in enumerate(zip(submit, work, gpus, strict=True))]
    queues = [[] for _ in range(len(thresholds) + 1)]   # LAS: lists in their order
    waiting, running = [], []
    now, arrived = 0, 0
    import math

    while any(j["finish"] is None for j in jobs):
        times = []
        if arrived < len(jobs):
            times.append(jobs[arrived]["submit"])
        times += [now + j["rem"] for j in running]
        if policy == "las":
            for j in running:
                if j["q"] < len(thresholds):
                    left = thresholds[j["q"]] - (j["att"] - j["base"]) * j["g"]
                    times.append(now + -(-left // j["g"]))
            if knob > 0:
                for j in waiting:
                    ran = j["att"] - j["base"]
                    if j["q"] > 0 and ran > 0:
                        times.append(now + max(int(math.ceil(knob * ran)) - j["starve"], 1))
        t = min(x for x in times if x >= now)
        dt = t - now
        for j in running:
            j["rem"] -= dt
            j["att"] += dt
        if policy == "las" and knob > 0:
            for j in waiting:
                if j["att"] - j["base"] > 0:
                    j["starve"] += dt
        now = t
        for j in list(running):
            if j["rem"] <= 0:
                j["finish"] = now
                running.remove(j)
                if policy == "las":
                    queues[j["q"]].remove(j)
        while arrived < len(jobs) and jobs[arrived]["submit"] == now:
            waiting.append(jobs[arrived])
            if policy == "las":
                queues[0].append(jobs[arrived])
            arrived += 1
        if policy in ("fifo-strict", "fifo-skip", "sjf"):
            order = sorted(waiting, key=(lambda j: (j["work"], j["id"])) if policy == "sjf" else (lambda j: j["id"]))
            free = total - sum(j["g"] for j in running)
            for j in order:
                if j["g"] <= free:
                    free -= j["g"]
                    j["start"] = now
                    waiting.remove(j)
                    running.append(j)
                elif policy == "fifo-strict":
                    break
            continue
        if policy == "las":
            for j in sorted(running + waiting, key=lambda j: j["id"]):
                ran = j["att"] - j["base"]
                if j in running and j["q"] < len(thresholds) and ran * j["g"] >= thresholds[j["q"]]:
                    queues[j["q"]].remove(j)
                    j["q"] += 1
                    queues[j["q"]].append(j)
                elif j in waiting and knob > 0 and j["q"] > 0 and ran > 0 \
                        and j["starve"] >= int(math.ceil(knob * ran)):
                    queues[j["q"]].remove(j)
                    j["q"], j["starve"], j["base"] = 0, 0, j["att"]
                    queues[0].append(j)
            order = [j for q in queues for j in q]
        else:  # srtf
            order = sorted(running + waiting, key=lambda j: (j["rem"], j["id"]))
        budget, keep = total, []
        for j in order:
            if j["g"] <= budget:
                budget -= j["g"]
                keep.append(j)
        for j in list(running):
            if j not in keep:
                j["pre"] += 1
                running.remove(j)
                waiting.append(j)
        for j in keep:
            if j in waiting:
                waiting.remove(j)
                running.append(j)
                if j["start"] is None:
                    j["start"] = now
        if policy == "las":   # Tiresias: in each queue, the waiting jobs move to the end
            for q in queues:
                q[:] = [j for j in q if j in running] + [j for j in q if j not in running]
    return ([j["start"] for j in jobs], [j["finish"] for j in jobs], [j["pre"] for j in jobs])
