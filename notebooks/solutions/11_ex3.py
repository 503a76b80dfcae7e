# Solution to exercise 3 of 11_serving_llms: stick to the replica holding the longest prefix,
# unless it is much busier than the least loaded one (then balance load instead).
# Stickiness keeps a conversation's turns where its KV is cached (the hit rate); the load
# guard stops a popular prefix from piling long prompts onto one replica (the TTFT tail).
class StickyPrefix(Router):
    name = "sticky-prefix"

    def route(self, view, request):
        load = {i: view.outstanding_tokens(i) for i in view.candidates}
        least = min(view.candidates, key=lambda i: (load[i], i))
        best = max(view.candidates, key=lambda i: (view.prefix_hit_tokens(i), -load[i], -i))
        if view.prefix_hit_tokens(best) == 0 or load[best] > 2 * load[least] + 4 * request.prompt:
            return least
        return best


ex3_router = StickyPrefix
