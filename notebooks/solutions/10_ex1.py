# Solution to exercise 1 of 10_policy_arena: least attained GPU-time first, skip-ahead, with preemption.
class LeastAttained(Policy):
    name = "least-attained"

    def schedule(self, view):
        plan = view.plan()
        budget = view.free_gpus + sum(j.num_gpus for j in view.running)
        chosen = []
        for job in sorted(view.running + view.queue, key=lambda j: (j.attained_gpu_s // 3600, j.submit_s, j.id)):
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


ex1_policy = LeastAttained
