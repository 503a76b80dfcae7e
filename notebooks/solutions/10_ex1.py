# Solution to exercise 1 of 10_policy_arena: the section-6 example, made preemptive.
# Every event all jobs, running or not, are ranked smallest gang first (then submit time)
# and given GPUs in that order; a running gang left out is preempted. So a 1-GPU job that
# arrives while gangs hold the GPUs no longer waits for them to finish: preemption repairs
# the greedy choice of letting the gang start. It reads no duration (GPU counts and submit
# times only), so the replay runs it without oracle views.
class PreemptiveSmallestGang(Policy):
    name = "preemptive-smallest-gang"

    def schedule(self, view):
        plan = view.plan()
        budget = view.free_gpus + sum(j.num_gpus for j in view.running)
        chosen = []
        for job in sorted(view.running + view.queue, key=lambda j: (j.num_gpus, j.submit_s, j.id)):
            if job.num_gpus <= budget:
                budget -= job.num_gpus
                chosen.append(job)
        keep = {j.id for j in chosen}
        for job in view.running:
            if job.id not in keep:
                plan.preempt(job)
        for job in chosen:
            if not job.running:
                plan.start(job)
        return plan


ex1_policy = PreemptiveSmallestGang
