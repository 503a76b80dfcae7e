"""Model behind the serving explorer (notebook 11): one serving run per setting.

No widget code: the explorer, notebook 11 and the tests call :func:`evaluate`. Four
replicas of Llama 3 70B on 8 H100s each serve the first requests of Mooncake's
conversation trace (prefix hashes included, so the router's prefix scoring matters) with
chunked prefill, ``load`` times as fast as recorded. Without the public traces,
:func:`requests` falls back to :func:`synthetic_conversations` and says so in its note.

For speed on the readable reference loop the explorer caps every answer at
``OUTPUT_CAP`` tokens (prompts are the trace's): decode iterations dominate the loop's cost,
and the cap keeps a slider change near 100 ms. The notebook's sections use whole answers.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from magnum_lib.serving import ROUTERS, ServingRequests, generate_requests, load_trace, make_replica, simulate
from magnum_lib.serving import summarize as summarize_run
from magnum_lib.serving.metrics import latencies
from magnum_lib.workload.traces import traces_missing

__all__ = ["SPLITS", "OUTPUT_CAP", "REPLICAS", "ServingScenario", "requests", "synthetic_conversations",
           "capped", "window", "evaluate"]

REPLICAS = 4
#: P:D choices over the four replicas ("colocated": every replica prefills and decodes).
SPLITS = {"colocated": None, "1:3": (1, 3), "2:2": (2, 2), "3:1": (3, 1)}
OUTPUT_CAP = 64
MODEL, DEVICE, TP = "llama3_70b", "h100_sxm", 8


def synthetic_conversations(n: int, rate_per_s: float = 3.4, *, new_session: float = 0.6, system_prompts: int = 16,
                            system_blocks: int = 2, first_blocks_mean: float = 20.0, add_blocks_mean: float = 3.0,
                            output_mean: float = 340.0, burstiness: float = 2.0, seed: int = 0,
                            block: int = 512) -> ServingRequests:
    """``n`` requests shaped like Mooncake's conversation trace (about 12,000-token prompts of
    widely spread lengths, behind one of a few system prompts; a share of them are the next turn of an earlier
    conversation, whose prompt is the previous one plus a few blocks, so it shares its prefix
    hashes); bursty gamma arrivals (coefficient of variation ``burstiness``)."""
    base = generate_requests(n, rate_per_s, prompt_mean=1.0, output_mean=output_mean, burstiness=burstiness,
                             seed=seed)
    rng = np.random.default_rng(seed + 1)
    ptr, ids, prompt = [0], [], []
    next_id = 10_000                 # ids below 10,000: the shared system prompts
    sessions: list[list[int]] = []
    for _ in range(n):
        if not sessions or rng.random() < new_session:
            sys_id = int(rng.integers(0, system_prompts))
            # lognormal (sigma 1): a few very long prompts, as in the trace (up to 87,000 tokens)
            first = 1 + int(rng.lognormal(np.log(first_blocks_mean) - 0.5, 1.0))
            sessions.append([sys_id * 100 + k for k in range(system_blocks)] + list(range(next_id, next_id + first)))
            next_id += first
            s = len(sessions) - 1
        else:
            s = int(rng.integers(0, len(sessions)))
            add = 1 + int(rng.poisson(add_blocks_mean - 1))
            sessions[s] = sessions[s] + list(range(next_id, next_id + add))
            next_id += add
        chain = sessions[s]
        tail = int(rng.integers(1, block + 1))            # the last block is partly filled
        prompt.append((len(chain) - 1) * block + tail)
        ids.extend(chain)
        ptr.append(len(ids))
    return ServingRequests(base.arrival_ns, np.array(prompt, np.int64), base.output, np.array(ptr, np.int64),
                           np.array(ids, np.int64), block, "synthetic-conversations")


def requests(trace: str = "mooncake-conv", n: int | None = None, seed: int = 0) -> tuple[ServingRequests, str]:
    """The first ``n`` requests of a public trace, or a generator's when the traces are missing.

    Returns ``(requests, note)``; ``note`` is "" with the real trace, else one line saying
    which generator stands in and why.
    """
    missing = traces_missing()
    if missing is None:
        reqs = load_trace(trace)
        return (reqs if n is None else reqs.head(n)), ""
    size = n if n is not None else 2_000
    if trace.startswith("mooncake"):
        reqs = synthetic_conversations(size, seed=seed)
    else:  # Azure 2023 conversation: 5.5 requests/s, prompts ~1,155 tokens, answers ~211
        reqs = generate_requests(size, 5.5, prompt_mean=1155, output_mean=211, seed=seed)
    return reqs, f"{missing}: using a generator ({reqs.name}) in place of {trace}"


def capped(reqs: ServingRequests, output_cap: int) -> ServingRequests:
    """The same requests with every answer cut to at most ``output_cap`` tokens."""
    return ServingRequests(reqs.arrival_ns, reqs.prompt, np.minimum(reqs.output, output_cap), reqs.hash_ptr,
                           reqs.hash_ids, reqs.hash_block, f"{reqs.name} (answers <= {output_cap})")


def window(reqs: ServingRequests, start: int, n: int) -> ServingRequests:
    """Requests ``start .. start + n - 1``, arrivals shifted to start at 0 (a held-out slice)."""
    stop = min(start + n, len(reqs))
    if not 0 <= start < stop:
        raise ValueError(f"window: start must be in [0, {len(reqs) - 1}] and n >= 1, got start={start}, n={n}")
    arr = reqs.arrival_ns[start:stop] - reqs.arrival_ns[start]
    hp = hi = None
    if reqs.hash_ptr is not None and reqs.hash_ids is not None:
        lo, hi_end = int(reqs.hash_ptr[start]), int(reqs.hash_ptr[stop])
        hp, hi = reqs.hash_ptr[start:stop + 1] - lo, reqs.hash_ids[lo:hi_end].copy()
    return ServingRequests(arr, reqs.prompt[start:stop].copy(), reqs.output[start:stop].copy(), hp, hi,
                           reqs.hash_block, f"{reqs.name}[{start}:{stop}]")


@dataclass(frozen=True)
class ServingScenario:
    """One setting and what its run measured (latencies in s, per finished request)."""

    load: float
    token_budget: int
    kv_blocks: int
    split: str
    router: str
    summary: dict
    ttft_s: np.ndarray
    tpot_s: np.ndarray     # NaN for one-token answers
    note: str


_BASE: dict = {}


def _base(n: int) -> tuple[ServingRequests, str]:
    if n not in _BASE:
        reqs, note = requests("mooncake-conv", n)
        _BASE[n] = (capped(reqs, OUTPUT_CAP), note)
    return _BASE[n]


def evaluate(load: float = 1.0, token_budget: int = 512, kv_blocks: int = 20_000, split: str = "colocated",
             router: str = "least-outstanding", n: int = 60, slo_ttft_s: float = 2.0,
             slo_tpot_s: float = 0.1) -> ServingScenario:
    """Serve the first ``n`` requests ``load`` times as fast as recorded on four replicas."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    if router not in ROUTERS:
        raise ValueError(f"router must be one of {', '.join(ROUTERS)}, got {router!r}")
    base, note = _base(int(n))
    reqs = base.scaled(load)
    spec = make_replica(MODEL, DEVICE, TP, kv_blocks=int(kv_blocks))
    res = simulate(reqs, spec, replicas=REPLICAS, batching="chunked", token_budget=int(token_budget),
                   disaggregate=SPLITS[split], router=router, preemption="swap")
    lat = latencies(res)
    return ServingScenario(float(load), int(token_budget), int(kv_blocks), split, router,
                           summarize_run(res, slo_ttft_s, slo_tpot_s), lat["ttft_s"], lat["tpot_s"], note)
