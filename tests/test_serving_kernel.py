"""The compiled serving loop (serving/_serve.pyx) against the readable one (serve_ref.py):
every per-request time, every counter and the KV samples equal, on seeded inputs."""
import numpy as np
import pytest
from hypothesis import given, settings

from magnum_lib.serving import Router, ServingRequests, generate_requests, make_replica, serve_ref, summarize
from magnum_lib.serving.loop import kernel, simulate
from magnum_lib.serving.routers import PowerOfTwo, RoundRobin
from tests.conftest import import_compiled
from tests.test_serving_properties import HB, configs, workloads

ARRAYS = ("status", "first_token_ns", "finish_ns", "routed", "decode_replica", "prefix_hit_tokens", "preempted",
          "busy_ns", "kv_t_ns", "kv_replica", "kv_used")
ROUTERS = ("round-robin", "least-outstanding", "power-of-two", "prefix-aware")


def compiled():
    return import_compiled("magnum_lib.serving._serve")


def both(reqs, spec, **kw):
    """(reference result, compiled result) of one run."""
    args = serve_ref.check_args(reqs, spec, **kw)
    ref = serve_ref.run_checked(args)
    return ref, compiled().run_checked(serve_ref.check_args(reqs, spec, **kw))


def assert_same(a, b):
    for f in ARRAYS:
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)
    assert a.counters == b.counters
    assert (a.end_ns, a.in_system_area_ns, a.config) == (b.end_ns, b.in_system_area_ns, b.config)
    assert summarize(a) == summarize(b)


def shared_prefix_requests(n=240, seed=5):
    """Synthetic arrivals whose prompts share prefix blocks of 32 tokens (three families)."""
    g = generate_requests(n, 40, prompt_mean=300, output_mean=40, seed=seed)
    prompt = g.prompt.copy()
    prompt[::60] = 1950  # longer than a small replica's KV cache: refused
    rng = np.random.default_rng(seed)
    ptr, ids, fresh = [0], [], 10_000
    for p in prompt:
        k, f = -(-int(p) // HB), int(rng.integers(3))
        shared = int(rng.integers(0, k + 1))
        ids += [f * 1000 + j for j in range(shared)] + list(range(fresh, fresh + k - shared))
        fresh += k - shared
        ptr.append(len(ids))
    return ServingRequests(g.arrival_ns, prompt, g.output, np.array(ptr, np.int64), np.array(ids, np.int64), HB)


@pytest.mark.parametrize("router", ROUTERS)
@pytest.mark.parametrize("batching", ["static", "continuous", "chunked"])
@pytest.mark.parametrize("preemption", ["recompute", "swap"])
def test_parity_under_memory_pressure(batching, router, preemption):
    reqs = shared_prefix_requests()
    spec = make_replica("llama3_8b", "h100", 1, kv_blocks=120)
    ref, fast = both(reqs, spec, replicas=3, batching=batching, router=router, preemption=preemption,
                     token_budget=96, max_batch=12)
    assert_same(ref, fast)
    c = ref.counters
    assert c["cached_tokens"] > 0 and c["evictions"] > 0 and c["refused"] > 0   # the cases are exercised
    if batching != "static":
        assert c[f"preempt_{preemption}"] > 0


@pytest.mark.parametrize("router", ROUTERS)
@pytest.mark.parametrize("batching", ["continuous", "chunked"])
def test_parity_with_disaggregation(batching, router):
    reqs = shared_prefix_requests(seed=8)
    spec = make_replica("llama3_8b", "h100", 2, kv_blocks=300)
    ref, fast = both(reqs, spec, disaggregate=(2, 3), batching=batching, router=router, preemption="swap",
                     token_budget=128)
    assert_same(ref, fast)
    assert ref.counters["transfer_tokens"] > 0 and np.all(fast.decode_replica[fast.status == 2] >= 2)


@pytest.mark.parametrize("model, tp", [("mixtral", 2), ("llama3_70b", 8), ("llama3_8b", 1)])
def test_parity_of_iteration_times_across_models(model, tp):
    """Mixture-of-experts weights, tensor-parallel all-reduces, efficiencies and overheads."""
    spec = make_replica(model, "h100", tp, kv_blocks=5000, compute_efficiency=0.6, memory_efficiency=0.8,
                        allreduce_latency_s=7e-6, overhead_s=3e-4)
    reqs = generate_requests(150, 30, prompt_mean=700, output_mean=30, seed=2)
    ref, fast = both(reqs, spec, replicas=2, batching="chunked", token_budget=300)
    assert_same(ref, fast)


def test_parity_without_hashes_and_with_prefix_cache_off():
    reqs = shared_prefix_requests(seed=3)
    spec = make_replica("llama3_8b", "h100", 1, kv_blocks=150)
    assert_same(*both(reqs, spec, replicas=2, prefix_cache=False, router="prefix-aware"))
    plain = generate_requests(200, 50, prompt_mean=200, output_mean=20, seed=1)
    assert_same(*both(plain, spec, replicas=2, router="prefix-aware", batching="chunked"))


def test_parity_at_a_horizon_and_with_custom_router_weights():
    from magnum_lib.serving.routers import PrefixAware

    reqs = shared_prefix_requests(seed=4)
    spec = make_replica("llama3_8b", "h100", 1, kv_blocks=200)
    ref, fast = both(reqs, spec, replicas=3, horizon_s=2.0)
    assert_same(ref, fast)
    assert np.any(ref.status == 1) or np.any(ref.status == 0)      # in flight at the horizon
    assert_same(*both(reqs, spec, replicas=3, router=PrefixAware(prefix_weight=5.0, load_weight=0.5)))


def test_pausing_for_the_progress_bar_changes_nothing():
    class Bar:
        n = 0

        def update(self, k):
            self.n += k

    reqs = generate_requests(9000, 400, prompt_mean=40, output_mean=4, seed=0)
    spec = make_replica("llama3_8b", "h100", 1)
    args = serve_ref.check_args(reqs, spec, replicas=2)
    bar = Bar()
    paused = compiled().run_checked(args, bar)
    assert bar.n == len(reqs)
    assert_same(serve_ref.run_checked(serve_ref.check_args(reqs, spec, replicas=2)), paused)


@pytest.mark.parametrize("k", [2, 3, 5, 64, 8192])
def test_power_of_two_draws_equal_numpy_choice(k):
    rng = np.random.default_rng(11)
    want = np.array([rng.choice(k, size=2, replace=False) for _ in range(300)])
    got = compiled().choice2(np.random.default_rng(11), k, 300)
    np.testing.assert_array_equal(got, want)


class Fewest(Router):
    name = "fewest-waiting"

    def route(self, view, request):
        return min(view.candidates, key=lambda i: (view.queue_len(i), i))


class EveryOther(RoundRobin):  # a subclass may change route(): it is a plug-in
    name = "every-other"

    def route(self, view, request):
        return super().route(view, request) if request.id % 2 else view.candidates[0]


@pytest.mark.parametrize("router", [Fewest(), EveryOther(), Fewest])
def test_plug_in_routers_run_on_the_reference_loop(router):
    mod = compiled()
    assert not mod.runs_in_kernel(serve_ref.check_args(generate_requests(1, 1), make_replica(), router=router).router)
    reqs = generate_requests(120, 30, prompt_mean=200, output_mean=20, seed=6)
    spec = make_replica("llama3_8b", "h100", 1, kv_blocks=100)
    assert_same(*both(reqs, spec, replicas=3, router=router))
    assert mod.runs_in_kernel(PowerOfTwo())


def test_backend_switch(monkeypatch):
    compiled()
    monkeypatch.setenv("MAGNUM_PUREPYTHON", "1")
    assert kernel() is serve_ref
    monkeypatch.delenv("MAGNUM_PUREPYTHON")
    assert kernel().__name__ == "magnum_lib.serving._serve"
    reqs = generate_requests(50, 20, seed=1)
    spec = make_replica("llama3_8b", "h100", 1)
    assert_same(serve_ref.simulate(reqs, spec, replicas=2), simulate(reqs, spec, replicas=2))


@settings(max_examples=150, deadline=None)
@given(workloads(), configs)
def test_random_small_traces_give_equal_runs(reqs, cfg):
    compiled()
    spec = make_replica("llama3_8b", "h100", 1, block_size=16, kv_blocks=cfg["kv_blocks"])
    kw = dict(batching=cfg["batching"], preemption=cfg["preemption"], max_batch=cfg["max_batch"],
              token_budget=cfg["token_budget"], prefix_cache=cfg["prefix"], router=cfg["router"],
              replicas=cfg["replicas"], disaggregate=cfg["disaggregate"], seed=3)
    assert_same(*both(reqs, spec, **kw))


def test_no_requests_and_one_request():
    e = np.zeros(0, np.int64)
    none = ServingRequests(e, e, e, np.zeros(1, np.int64), e.copy(), HB)
    one = shared_prefix_requests(n=1)
    for reqs in (none, one):
        ref, fast = both(reqs, make_replica(), router="prefix-aware", batching="chunked")
        assert_same(ref, fast)
