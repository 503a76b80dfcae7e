"""LLM serving, token by token: replicas, batching, paged KV cache, prefix cache,
prefill/decode disaggregation and routers (beside ``node/``, below ``sim/``).

This layer imports only the base modules (units, hardware, engine, workload).

    >>> from magnum_lib.serving import make_replica, load_trace, simulate, summarize
    >>> spec = make_replica("llama3_70b", "h100_sxm", tp=8)
    >>> res = simulate(load_trace("azure-conv").head(500), spec, replicas=2, batching="chunked")  # doctest: +SKIP
    >>> summarize(res)["ttft_ms"]["p99"]                              # doctest: +SKIP
"""
from magnum_lib.serving.kvcache import KVPool
from magnum_lib.serving.loop import simulate
from magnum_lib.serving.metrics import distserve_goodput, kv_utilization, latencies, summarize
from magnum_lib.serving.models import ModelSpec, default_models, get_model, load_models
from magnum_lib.serving.replica import IterationCost, ReplicaSpec, make_replica
from magnum_lib.serving.requests import ServingRequests, generate_requests
from magnum_lib.serving.routers import ROUTERS, Router, RouterError, make_router
from magnum_lib.serving.serve_ref import BATCHING, PREEMPTION, ServingResult
from magnum_lib.serving.sweeps import serving_sweep
from magnum_lib.serving.traces import TRACES, load_azure_llm, load_mooncake, load_trace

__all__ = ["KVPool", "distserve_goodput", "kv_utilization", "latencies", "summarize", "ModelSpec", "default_models", "get_model",
           "load_models", "IterationCost", "ReplicaSpec", "make_replica", "ServingRequests", "generate_requests",
           "ROUTERS", "Router", "RouterError", "make_router", "BATCHING", "PREEMPTION", "ServingResult",
           "simulate", "serving_sweep", "TRACES", "load_azure_llm", "load_mooncake", "load_trace"]
