"""The serving simulator, readable form: replicas run iterations, token by token.

Semantics (a compiled twin must reproduce them exactly)
-------------------------------------------------------
* Time is int64 ns. An iteration's length is ``ceil(roofline time x 1e9)`` ns (at least
  1 ns) plus the swap traffic it carries (:mod:`~magnum_lib.serving.replica`).
* Events at one instant ``t``: (1) iterations ending at ``t`` and KV transfers arriving
  at ``t``, in the order they were scheduled; (2) requests arriving at ``t``, in trace
  order, each routed at once; (3) every idle replica touched by (1) or (2) starts an
  iteration, lowest index first.
* A sequence with prompt ``p`` and ``g`` tokens generated is (re)admitted with a prefill
  target ``T = p + g`` (a recompute redoes the generated tokens too, as vLLM does);
  ``computed`` counts tokens whose KV is resident. Finishing the prefill emits a token;
  every decode step (one new token) emits one. A request is done at ``g == output``.
* Batching. ``static``: a batch forms only when the previous one has wholly finished
  (FCFS, up to ``max_batch``, each reserving KV pages for its whole prompt + output),
  and runs to its longest request; no preemption. ``continuous`` (Orca, vLLM): every
  iteration, the running sequences (admission order) take one decode token or their whole
  remaining prefill; then waiting requests are admitted FCFS while fewer than
  ``max_batch`` run and their pages are free. ``chunked`` (Sarathi-Serve): the same, under
  ``token_budget`` new tokens per iteration: decodes and running prefills first, a prefill
  takes what budget is left, then admissions.
* KV pages. A running sequence short of pages makes room by evicting unreferenced prefix
  entries (LRU), then by preempting the latest-admitted running sequence (itself if it is
  the latest): ``recompute`` frees its KV and requeues it at the head of the line;
  ``swap`` copies its KV to host memory over ``host_link`` (the time is added to the
  iteration) and copies it back when it is readmitted. No admission follows a
  preemption in the same iteration, unless nothing is left running. A request whose
  prompt + output cannot fit in a replica's pages is refused on arrival.
* Prefix cache (requests with hash ids, blocks of ``hash_block`` tokens): on a fresh
  admission the longest resident chain of the prompt's full blocks is reused (capped so
  that at least one token is computed); every full block a prefill completes is added.
* Disaggregation ``(P, D)``: replicas ``0..P-1`` prefill, ``P..P+D-1`` decode. A request
  routed to a prefill replica leaves it with its first token, and its pages there are
  freed at once (as if the copy left from a staging buffer); its KV travels over
  ``transfer_link`` to a decode replica the router picks, which admits it like a swap-in
  without the copy cost.
"""
from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from magnum_lib.base.validate import ParameterError, check_choice, check_int, check_positive
from magnum_lib.serving.kvcache import KVPool
from magnum_lib.serving.replica import ReplicaSpec
from magnum_lib.serving.requests import ServingRequests
from magnum_lib.serving.routers import checked_route, make_router

__all__ = ["BATCHING", "PREEMPTION", "ServingResult", "RunArgs", "check_args", "make_result", "run_checked", "simulate"]

NS = 1_000_000_000
BATCHING = ("static", "continuous", "chunked")
PREEMPTION = ("recompute", "swap")
# request status
WAITING, RUNNING, DONE, REFUSED, TRANSFER, PENDING = 0, 1, 2, 3, 4, 5
_NO_HOST, _SWAPPED, _TRANSFERRED = 0, 1, 2


@dataclass(frozen=True, eq=False)
class ServingResult:
    """What a run produced. Per-request arrays are indexed like the requests; times in ns,
    -1 where the event did not happen (a refused request, or one in flight at the horizon)."""

    requests: ServingRequests
    replica: ReplicaSpec
    n_replicas: int
    n_prefill: int                 # 0 without disaggregation
    status: np.ndarray             # DONE, REFUSED, or in flight (WAITING/RUNNING/TRANSFER)
    first_token_ns: np.ndarray
    finish_ns: np.ndarray
    routed: np.ndarray             # the replica the router chose on arrival
    decode_replica: np.ndarray     # with disaggregation, else -1
    prefix_hit_tokens: np.ndarray  # reused on first admission
    preempted: np.ndarray          # times each request was preempted
    counters: dict
    busy_ns: np.ndarray            # per replica
    kv_t_ns: np.ndarray            # one sample at each iteration start: time, replica, pages in use
    kv_replica: np.ndarray
    kv_used: np.ndarray
    end_ns: int
    in_system_area_ns: int         # integral of the number of requests in the system over time
    config: dict = field(default_factory=dict)

    @property
    def n_gpus(self) -> int:
        return self.n_replicas * self.replica.tp


class _Rep:
    __slots__ = ("idx", "role", "pool", "waiting", "running", "busy", "batch", "swap_s", "outstanding",
                 "busy_ns")

    def __init__(self, idx, role, pages, ppe):
        self.idx, self.role = idx, role
        self.pool = KVPool(pages, ppe)
        self.waiting: deque = deque()
        self.running: list = []
        self.busy = False
        self.batch: list = []
        self.swap_s = 0.0
        self.outstanding = 0
        self.busy_ns = 0


class _RequestView:
    __slots__ = ("id", "prompt", "output", "arrival_s", "hashes")

    def __init__(self, reqs, r):
        self.id, self.prompt, self.output = r, int(reqs.prompt[r]), int(reqs.output[r])
        self.arrival_s = int(reqs.arrival_ns[r]) / NS
        self.hashes = reqs.hashes(r)


class _View:
    """What a router sees (read-only)."""

    __slots__ = ("_sim", "candidates", "rng", "_hashes", "_limit")

    def __init__(self, sim, candidates, rng):
        self._sim, self.candidates, self.rng = sim, candidates, rng
        self._hashes, self._limit = None, 0

    def outstanding_tokens(self, i) -> int:
        """Prefill and decode tokens replica ``i`` still has to process for its requests."""
        return self._sim.reps[i].outstanding

    def queue_len(self, i) -> int:
        return len(self._sim.reps[i].waiting)

    def running(self, i) -> int:
        return len(self._sim.reps[i].running)

    def free_pages(self, i) -> int:
        return self._sim.reps[i].pool.free

    def kv_utilization(self, i) -> float:
        p = self._sim.reps[i].pool
        return 1.0 - p.free / p.pages

    def prefix_hit_tokens(self, i) -> int:
        """Prompt tokens of this request resident in replica ``i``'s prefix cache."""
        if self._hashes is None:
            return 0
        return self._sim.reps[i].pool.match(self._hashes, self._limit) * self._sim.hb


class _Sim:
    def __init__(self, reqs: ServingRequests, spec: ReplicaSpec, n_rep, n_prefill, batching, max_batch,
                 budget, preemption, prefix, router, seed):
        self.reqs, self.spec = reqs, spec
        self.batching, self.max_batch, self.preemption = batching, max_batch, preemption
        self.budget = budget if batching == "chunked" else 1 << 62
        self.bs, self.hb = spec.block_size, reqs.hash_block
        self.prefix = prefix and reqs.hash_ptr is not None
        ppe = self.hb // self.bs if self.prefix else 1
        roles = ["prefill"] * n_prefill + ["decode"] * (n_rep - n_prefill) if n_prefill else ["both"] * n_rep
        self.reps = [_Rep(i, role, spec.kv_blocks, ppe) for i, role in enumerate(roles)]
        self.entry_cands = tuple(range(n_prefill)) if n_prefill else tuple(range(n_rep))
        self.decode_cands = tuple(range(n_prefill, n_rep))
        self.router = router
        router.reset(n_rep) if hasattr(router, "reset") else None
        self.rng = np.random.default_rng(seed)
        n = len(reqs)
        self.prompt, self.output = reqs.prompt.tolist(), reqs.output.tolist()
        self.computed, self.target, self.gen = [0] * n, [0] * n, [0] * n
        self.own, self.refs, self.host = [0] * n, [[] for _ in range(n)], [_NO_HOST] * n
        self.status = [PENDING] * n
        self.first, self.finish = [-1] * n, [-1] * n
        self.routed, self.drep = [-1] * n, [-1] * n
        self.hit, self.npre, self.admitted = [0] * n, [0] * n, [False] * n
        self.counts = dict(iterations=0, prefill_tokens=0, prefill_completions=0, decode_tokens=0, output_tokens=0,
                           cached_tokens=0, preempt_recompute=0, preempt_swap=0, swap_tokens=0, transfer_tokens=0,
                           refused=0)
        self.heap: list = []
        self.seq = 0
        self.kv_t, self.kv_rep, self.kv_used = [], [], []
        self.in_system = 0

    # ---------------------------------------------------------------- helpers
    def _remaining(self, r) -> int:
        return max(self.target[r] - self.computed[r], 0) + self.output[r] - self.gen[r]

    def _pages(self, tokens) -> int:
        return -(-tokens // self.bs)

    def _hash_limit(self, r) -> int:
        """Full prompt blocks that may be reused: at least one prompt token is computed."""
        return min(self.prompt[r] // self.hb, (self.prompt[r] + self.gen[r] - 1) // self.hb)

    def _route(self, r, cands):
        view = _View(self, cands, self.rng)
        if self.prefix:
            view._hashes, view._limit = self.reqs.hashes(r), self._hash_limit(r)
        return checked_route(self.router, view, _RequestView(self.reqs, r))

    def _release(self, rep, r):
        rep.pool.free += self.own[r]
        for h in reversed(self.refs[r]):  # deepest block first: it becomes the older LRU entry
            rep.pool.unref(h)
        self.own[r], self.refs[r] = 0, []

    def _push(self, t, kind, payload):
        heapq.heappush(self.heap, (t, self.seq, kind, payload))
        self.seq += 1

    # ---------------------------------------------------------------- events
    def arrive(self, r, t):
        if self._pages(self.prompt[r] + self.output[r]) > self.spec.kv_blocks:
            self.status[r] = REFUSED
            self.counts["refused"] += 1
            return None
        i = self._route(r, self.entry_cands)
        rep = self.reps[i]
        self.routed[r], self.status[r], self.target[r] = i, WAITING, self.prompt[r]
        rep.waiting.append(r)
        # a prefill replica counts the prompt and the first token only: the rest is decoded elsewhere
        rep.outstanding += self._remaining(r) - (self.output[r] - 1 if rep.role == "prefill" else 0)
        self.in_system += 1
        return rep

    def deliver(self, r):
        rep = self.reps[self.drep[r]]
        self.status[r], self.host[r] = WAITING, _TRANSFERRED
        rep.waiting.append(r)
        return rep

    def end_iteration(self, rep, t):
        rep.busy = False
        pool, hb = rep.pool, self.hb
        for r, c in rep.batch:
            was_prefill = self.computed[r] < self.target[r]
            self.computed[r] += c
            if was_prefill:
                rep.outstanding -= c
                self.counts["prefill_tokens"] += c
                if self.prefix:
                    hashes, k = self.reqs.hashes(r), len(self.refs[r])
                    top = min(self.computed[r], self.prompt[r]) // hb
                    while k < top:  # a full prompt block completed: cache it (or share the copy there)
                        h = int(hashes[k])
                        if not pool.insert(h):
                            pool.ref(h)
                            pool.free += pool.ppe
                        self.own[r] -= pool.ppe
                        self.refs[r].append(h)
                        k += 1
                if self.computed[r] < self.target[r]:
                    continue
                self.counts["prefill_completions"] += 1
            else:
                self.counts["decode_tokens"] += 1
            self.gen[r] += 1
            rep.outstanding -= 1
            self.counts["output_tokens"] += 1
            if self.first[r] < 0:
                self.first[r] = t
            if self.gen[r] == self.output[r]:
                self.status[r], self.finish[r] = DONE, t
                self.in_system -= 1
                if self.batching != "static":
                    rep.running.remove(r)
                    self._release(rep, r)
            elif rep.role == "prefill":
                self._handoff(rep, r, t)
        rep.batch = []

    def _handoff(self, rep, r, t):
        rep.running.remove(r)
        self._release(rep, r)
        rem = self._remaining(r)
        d = self._route(r, self.decode_cands)
        self.drep[r], self.status[r] = d, TRANSFER
        self.reps[d].outstanding += rem
        self.counts["transfer_tokens"] += self.computed[r]
        self._push(t + math.ceil(self.spec.transfer_time(self.computed[r]) * NS), 1, r)

    # ---------------------------------------------------------------- scheduling
    def _preempt(self, rep, r):
        rep.running.remove(r)
        before = self._remaining(r)
        if self.preemption == "swap":
            rep.swap_s += self.spec.swap_time(self.computed[r])
            self.counts["swap_tokens"] += self.computed[r]
            self.host[r] = _SWAPPED
            self.counts["preempt_swap"] += 1
        else:
            self.computed[r] = 0
            self.target[r] = self.prompt[r] + self.gen[r]
            self.counts["preempt_recompute"] += 1
        self._release(rep, r)
        self.npre[r] += 1
        self.status[r] = WAITING
        rep.outstanding += self._remaining(r) - before
        rep.waiting.appendleft(r)

    def _chunk(self, r, budget) -> int:
        left = self.target[r] - self.computed[r]
        return min(left, budget) if left > 0 else (1 if budget >= 1 else 0)

    def _admit(self, rep, r, budget) -> int:
        """Admit the head of ``rep``'s line if its pages can be had; its first chunk, or 0."""
        pool = rep.pool
        matched = []
        if self.host[r] != _NO_HOST:        # KV comes back from host memory or another replica
            base = self.computed[r]
        else:
            self.target[r] = self.prompt[r] + self.gen[r]
            if self.prefix:
                hashes = self.reqs.hashes(r)
                matched = [int(h) for h in hashes[:pool.match(hashes, self._hash_limit(r))]]
            base = len(matched) * self.hb
        before = self._remaining(r)  # as counted in rep.outstanding (computed is 0 unless restored)
        self.computed[r] = base
        c = self._chunk(r, budget)
        ref_pages = len(matched) * pool.ppe
        want = self.prompt[r] + self.output[r] if self.batching == "static" else base + c
        need = self._pages(want) - ref_pages
        in_lru = sum(pool.ppe for h in matched if pool.refs[h] == 0)
        if c == 0 or pool.free + pool.evictable_pages - in_lru < need:
            if self.host[r] == _NO_HOST:
                self.computed[r] = 0
            return 0
        for h in matched:
            pool.ref(h)
        pool.make_free(need)
        pool.free -= need
        self.own[r], self.refs[r] = need, matched
        rep.outstanding += self._remaining(r) - before
        if self.host[r] == _SWAPPED:
            rep.swap_s += self.spec.swap_time(base)
            self.counts["swap_tokens"] += base
        self.host[r] = _NO_HOST
        if not self.admitted[r]:
            self.admitted[r], self.hit[r] = True, base if matched else 0
        self.counts["cached_tokens"] += base if matched else 0
        self.status[r] = RUNNING
        return c

    def _schedule(self, rep) -> list:
        if self.batching == "static":
            return self._schedule_static(rep)
        budget, batch, preempted = self.budget, [], False
        i = 0
        while i < len(rep.running):
            r = rep.running[i]
            c = self._chunk(r, budget)
            if c == 0:
                i += 1
                continue
            need = max(0, self._pages(self.computed[r] + c) - self.own[r] - len(self.refs[r]) * rep.pool.ppe)
            lost = False
            while not rep.pool.make_free(need):
                victim = rep.running[-1]
                self._preempt(rep, victim)
                preempted = True
                if victim == r:
                    lost = True
                    break
            if lost:
                break
            rep.pool.free -= need
            self.own[r] += need
            batch.append((r, c))
            budget -= c
            i += 1
        if not preempted or not rep.running:
            while rep.waiting and len(rep.running) < self.max_batch and budget > 0:
                r = rep.waiting[0]
                c = self._admit(rep, r, budget)
                if c == 0:
                    break
                rep.waiting.popleft()
                rep.running.append(r)
                batch.append((r, c))
                budget -= c
        return batch

    def _schedule_static(self, rep) -> list:
        if all(self.status[r] == DONE for r in rep.running):
            for r in rep.running:
                self._release(rep, r)
            rep.running = []
            while rep.waiting and len(rep.running) < self.max_batch:
                r = rep.waiting[0]
                if self._admit(rep, r, self.budget) == 0:
                    break
                rep.running.append(rep.waiting.popleft())
        return [(r, self._chunk(r, self.budget)) for r in rep.running if self.status[r] != DONE]

    def start_iteration(self, rep, t):
        batch = self._schedule(rep)
        if not batch and rep.swap_s == 0.0:
            return
        n = pairs = kv_read = 0
        for r, c in batch:
            k = self.computed[r]
            n += c
            pairs += c * k + c * (c + 1) // 2
            kv_read += k
        dur = max(1, math.ceil((self.spec.iteration(n, pairs, kv_read).time_s + rep.swap_s) * NS))
        rep.swap_s = 0.0
        rep.batch, rep.busy = batch, True
        rep.busy_ns += dur
        self.counts["iterations"] += 1
        self.kv_t.append(t)
        self.kv_rep.append(rep.idx)
        self.kv_used.append(rep.pool.pages - rep.pool.free)
        self._push(t + dur, 0, rep.idx)

    # ---------------------------------------------------------------- the loop
    def run(self, horizon_ns, bar=None):
        arrival = self.reqs.arrival_ns.tolist()
        n, nxt, t_last, area, shown = len(arrival), 0, 0, 0, 0
        inf = 1 << 62
        while True:
            t = min(self.heap[0][0] if self.heap else inf, arrival[nxt] if nxt < n else inf)
            if t == inf or t > horizon_ns:
                break
            area += self.in_system * (t - t_last)
            t_last = t
            dirty = set()
            while self.heap and self.heap[0][0] == t:
                _, _, kind, x = heapq.heappop(self.heap)
                if kind == 0:
                    self.end_iteration(self.reps[x], t)
                    dirty.add(x)
                else:
                    dirty.add(self.deliver(x).idx)
            while nxt < n and arrival[nxt] == t:
                rep = self.arrive(nxt, t)
                if rep is not None:
                    dirty.add(rep.idx)
                nxt += 1
            if bar is not None and nxt - shown >= 500:
                bar.update(nxt - shown)
                shown = nxt
            for i in sorted(dirty):
                if not self.reps[i].busy:
                    self.start_iteration(self.reps[i], t)
        return t_last, area


@dataclass(frozen=True, eq=False)
class RunArgs:
    """A run's checked inputs (:func:`check_args`), the same for both forms of the loop."""

    requests: ServingRequests
    replica: ReplicaSpec
    n_rep: int
    n_prefill: int
    batching: str
    max_batch: int
    token_budget: int
    preemption: str
    prefix_cache: bool
    router: object
    seed: int
    horizon_ns: int

    @property
    def prefix(self) -> bool:
        """The prefix cache is on and the trace has block hashes."""
        return self.prefix_cache and self.requests.hash_ptr is not None

    @property
    def pages_per_entry(self) -> int:
        return self.requests.hash_block // self.replica.block_size if self.prefix else 1


def check_args(requests, replica, *, replicas=1, batching="continuous", max_batch=256, token_budget=512,
               preemption="recompute", prefix_cache=True, disaggregate=None, router="round-robin", seed=0,
               horizon_s=None) -> RunArgs:
    """Check :func:`simulate`'s inputs once, at the Python boundary (ParameterError naming the argument)."""
    if not isinstance(requests, ServingRequests):
        raise ParameterError("requests", f"must be a ServingRequests, got {type(requests).__name__}")
    if not isinstance(replica, ReplicaSpec):
        raise ParameterError("replica", f"must be a ReplicaSpec (make_replica), got {type(replica).__name__}")
    check_choice("batching", batching, BATCHING)
    check_choice("preemption", preemption, PREEMPTION)
    max_batch = check_int("max_batch", max_batch, 1, 1 << 20)
    token_budget = check_int("token_budget", token_budget, 1, 1 << 30)
    if not isinstance(prefix_cache, bool):
        raise ParameterError("prefix_cache", f"must be True or False, got {prefix_cache!r}")
    if disaggregate is not None:
        if not (isinstance(disaggregate, (tuple, list)) and len(disaggregate) == 2):
            raise ParameterError("disaggregate", f"must be a pair (prefill replicas, decode replicas), got {disaggregate!r}")
        n_p = check_int("disaggregate[0]", disaggregate[0], 1, 4096)
        n_rep = n_p + check_int("disaggregate[1]", disaggregate[1], 1, 4096)
    else:
        n_p, n_rep = 0, check_int("replicas", replicas, 1, 4096)
    seed = check_int("seed", seed, 0, 2**63 - 1)
    horizon_ns = (1 << 62) if horizon_s is None else int(check_positive("horizon_s", horizon_s, 1e9) * NS)
    if prefix_cache and requests.hash_ptr is not None and requests.hash_block % replica.block_size:
        raise ParameterError("block_size", f"{replica.block_size} must divide the trace's hash block "
                                           f"({requests.hash_block} tokens)")
    return RunArgs(requests, replica, n_rep, n_p, batching, max_batch, token_budget, preemption, prefix_cache,
                   make_router(router), seed, horizon_ns)


def progress_bar(args: RunArgs, progress):
    """A tqdm bar over arrivals, or None (``progress`` None: only for more than 20,000 requests)."""
    if not ((len(args.requests) > 20_000) if progress is None else bool(progress)):
        return None
    from tqdm.auto import tqdm

    return tqdm(total=len(args.requests), desc=f"serve {args.batching}", unit="req", leave=False)


def make_result(args: RunArgs, arrays: dict, counters: dict, end_ns: int, area_ns: int) -> ServingResult:
    """The :class:`ServingResult` of a run, from its per-request and per-replica int64 arrays."""
    n_p, router = args.n_prefill, args.router
    return ServingResult(
        requests=args.requests, replica=args.replica, n_replicas=args.n_rep, n_prefill=n_p, counters=counters,
        end_ns=int(end_ns), in_system_area_ns=int(area_ns), **arrays,
        config=dict(batching=args.batching, max_batch=args.max_batch, token_budget=args.token_budget,
                    preemption=args.preemption, prefix_cache=args.prefix_cache,
                    disaggregate=None if not n_p else (n_p, args.n_rep - n_p),
                    router=getattr(router, "name", type(router).__name__), seed=args.seed))


def run_checked(args: RunArgs, bar=None) -> ServingResult:
    """Run the readable loop on checked inputs (``bar``: a tqdm bar or None)."""
    sim = _Sim(args.requests, args.replica, args.n_rep, args.n_prefill, args.batching, args.max_batch,
               args.token_budget, args.preemption, args.prefix_cache, args.router, args.seed)
    end, area = sim.run(args.horizon_ns, bar)
    i64 = lambda x: np.array(x, dtype=np.int64)  # noqa: E731
    arrays = dict(status=i64(sim.status), first_token_ns=i64(sim.first), finish_ns=i64(sim.finish),
                  routed=i64(sim.routed), decode_replica=i64(sim.drep), prefix_hit_tokens=i64(sim.hit),
                  preempted=i64(sim.npre), busy_ns=i64([r.busy_ns for r in sim.reps]), kv_t_ns=i64(sim.kv_t),
                  kv_replica=i64(sim.kv_rep), kv_used=i64(sim.kv_used))
    return make_result(args, arrays, dict(sim.counts, evictions=sum(r.pool.evictions for r in sim.reps)), end, area)


def simulate(requests: ServingRequests, replica: ReplicaSpec, *, replicas: int = 1, batching: str = "continuous",
             max_batch: int = 256, token_budget: int = 512, preemption: str = "recompute",
             prefix_cache: bool = True, disaggregate: tuple | None = None, router="round-robin",
             seed: int = 0, horizon_s: float | None = None, progress: bool | None = None) -> ServingResult:
    """Serve ``requests`` on ``replicas`` copies of ``replica`` with the readable loop (see the
    module docstring; :func:`magnum_lib.serving.simulate` runs the compiled kernel when built).

    ``disaggregate=(P, D)`` splits ``P + D`` replicas (``replicas`` is then ignored);
    ``horizon_s`` stops the run at that simulated time (later events are left undone);
    ``progress``: a tqdm bar over arrivals (None: only for more than 20,000 requests).
    """
    args = check_args(requests, replica, replicas=replicas, batching=batching, max_batch=max_batch,
                      token_budget=token_budget, preemption=preemption, prefix_cache=prefix_cache,
                      disaggregate=disaggregate, router=router, seed=seed, horizon_s=horizon_s)
    bar = progress_bar(args, progress)
    try:
        return run_checked(args, bar)
    finally:
        if bar is not None:
            bar.close()
