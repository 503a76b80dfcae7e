"""serving/budget.py: the up-front estimate of a run's iterations and time."""
import numpy as np

from magnum_lib.serving import generate_requests, make_replica, simulate
from magnum_lib.serving.budget import COMPILED_ITERATION_S, REFERENCE_ITERATION_S, estimate


def test_one_iteration_per_output_token_plus_the_other_prefill_chunks():
    reqs = generate_requests(40, 0.5, prompt_mean=900, output_mean=20, seed=2)
    est = estimate(reqs, "continuous")
    assert est.iterations == reqs.output.sum() and est.wall_s == est.iterations * COMPILED_ITERATION_S
    chunked = estimate(reqs, "chunked", token_budget=256, compiled=False)
    assert chunked.iterations == reqs.output.sum() + np.sum(-(-reqs.prompt // 256) - 1)
    assert chunked.wall_s == chunked.iterations * REFERENCE_ITERATION_S
    assert "on the readable Python loop" in chunked.describe()


def test_an_upper_estimate_on_a_light_load_and_on_a_heavy_one():
    spec = make_replica("llama3_8b", "h100", 1)
    for rate in (0.5, 200.0):  # one sequence per iteration, then large batches
        reqs = generate_requests(200, rate, prompt_mean=300, output_mean=30, seed=1)
        ran = simulate(reqs, spec, batching="chunked", token_budget=128).counters["iterations"]
        est = estimate(reqs, "chunked", 128).iterations
        assert ran <= est
    assert ran < est / 5  # batching shares iterations: the estimate is an upper one
