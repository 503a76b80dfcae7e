"""Invariants of the serving simulator on random small workloads (hypothesis)."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from magnum_lib.serving import ServingRequests, make_replica
from magnum_lib.serving.routers import make_router
from magnum_lib.serving.serve_ref import DONE, REFUSED, _Sim

I64 = np.int64
HB = 32  # a small prefix block (2 pages of 16 tokens) so short prompts share blocks


class Checked(_Sim):
    """The reference simulator, checking its page books at every iteration start."""

    def start_iteration(self, rep, t):
        super().start_iteration(rep, t)
        for rp in self.reps:
            pool = rp.pool
            held = sum(self.own[r] for r in rp.running)
            assert pool.free >= 0 and held >= 0
            assert pool.free + held + pool.cached_pages == pool.pages          # never over-committed
            refs = {}
            for r in rp.running:
                for h in self.refs[r]:
                    refs[h] = refs.get(h, 0) + 1
            assert refs == {h: c for h, c in pool.refs.items() if c}          # reference counts exact
            assert set(pool.lru) == {h for h, c in pool.refs.items() if c == 0}
            for r, c in rp.batch:                                             # every token has a page
                assert self.own[r] + len(self.refs[r]) * pool.ppe >= -(-(self.computed[r] + c) // self.bs)


@st.composite
def workloads(draw):
    n = draw(st.integers(1, 10))
    gaps = draw(st.lists(st.integers(0, 30_000_000), min_size=n, max_size=n))
    prompt = draw(st.lists(st.integers(1, 260), min_size=n, max_size=n))
    output = draw(st.lists(st.integers(1, 40), min_size=n, max_size=n))
    ptr, ids = [0], []
    for p in prompt:  # block j of a prompt of "family" f is hash f * 100 + j: families share prefixes
        f = draw(st.integers(0, 2))
        ids += [f * 100 + j for j in range(-(-p // HB))]
        ptr.append(len(ids))
    return ServingRequests(np.cumsum(np.array(gaps, I64)), np.array(prompt, I64), np.array(output, I64),
                           np.array(ptr, I64), np.array(ids, I64), HB)


configs = st.fixed_dictionaries(dict(
    batching=st.sampled_from(["static", "continuous", "chunked"]),
    preemption=st.sampled_from(["recompute", "swap"]),
    max_batch=st.integers(1, 6), token_budget=st.integers(1, 80), kv_blocks=st.integers(4, 40),
    replicas=st.integers(1, 3), disaggregate=st.sampled_from([None, (1, 1), (1, 2)]),
    router=st.sampled_from(["round-robin", "least-outstanding", "power-of-two", "prefix-aware"]),
    prefix=st.booleans()))


def run(reqs, cfg):
    spec = make_replica("llama3_8b", "h100", 1, block_size=16, kv_blocks=cfg["kv_blocks"])
    d = cfg["disaggregate"]
    n_rep, n_p = (sum(d), d[0]) if d else (cfg["replicas"], 0)
    sim = Checked(reqs, spec, n_rep, n_p, cfg["batching"], cfg["max_batch"], cfg["token_budget"],
                  cfg["preemption"], cfg["prefix"], make_router(cfg["router"]), 0)
    sim.run(1 << 62)
    return sim, spec


def infinite_cache_hits(reqs):
    """Per request: the prefix tokens a cache that never forgets, shared by all replicas, would give."""
    seen, out = set(), []
    for i in range(len(reqs)):
        p, h = int(reqs.prompt[i]), reqs.hashes(i)
        j = 0
        while j < (p - 1) // HB and int(h[j]) in seen:
            j += 1
        out.append(j * HB)
        seen.update(int(x) for x in h[:p // HB])
    return np.array(out)


@settings(max_examples=150, deadline=None)
@given(workloads(), configs)
def test_every_request_finishes_or_is_refused_and_tokens_are_counted_once(reqs, cfg):
    sim, spec = run(reqs, cfg)
    status = np.array(sim.status)
    too_big = -(-(reqs.prompt + reqs.output) // 16) > spec.kv_blocks
    assert np.array_equal(status == REFUSED, too_big)
    assert (status[~too_big] == DONE).all()
    c = sim.counts
    assert c["output_tokens"] == int(reqs.output[~too_big].sum()) == sum(sim.gen)
    assert c["decode_tokens"] + c["prefill_completions"] == c["output_tokens"]
    if c["preempt_recompute"] == 0:  # each prompt token computed once, or reused
        assert c["prefill_tokens"] + c["cached_tokens"] == int(reqs.prompt[~too_big].sum())
    for rep in sim.reps:  # all released at the end: only the prefix cache holds pages
        assert rep.pool.free + rep.pool.cached_pages == rep.pool.pages and not rep.running and not rep.waiting
        assert rep.outstanding == 0
    assert sim.in_system == 0
    first, fin, arr = np.array(sim.first), np.array(sim.finish), reqs.arrival_ns
    done = status == DONE
    assert (arr[done] < first[done]).all() and (first[done] <= fin[done]).all()
    assert (np.array(sim.hit) <= infinite_cache_hits(reqs)).all()
