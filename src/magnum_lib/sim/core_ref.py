"""Pure-Python reference of the request-path core (same class and results as ``_core.pyx``).

One region: requests arrive, wait for the next regional round, are placed by one of
``n_sched`` schedulers from its view, sent as speculative leases (RTT/2), validated by
the node (accept, preempt training or - micro-preemption - pause a less urgent inference
copy, queue, or refuse), dispatched on a device at the next decision quantum, optionally
hedged on another node, and finish. Everything the
core does is integer arithmetic on the arrays it is given, in the order of one event
heap whose ties are broken by insertion order, so both backends agree exactly.

The decisions are the layers' rules, called here (their compiled twins are inlined into
``_core.pyx``):

* ``regional.validator_ref``: the lease verdict and victim order (``lease_expired``,
  ``lease_verdict``, ``cover_victims``), the work an evicted job loses (``lost_work_ns``;
  the wiring's checkpoint time is its ``checkpoint_s``) and the two-choices pick
  (``better_of_two``, also the scan's "most room, first on ties");
* ``regional.hashing``: consistent hashing's lookup (``ring_first``; the wiring builds
  the ring with its ``hash_ring``);
* ``node.dispatcher_ref``: the decision quantum and the start after a pause
  (``next_boundary``, ``start_after``), the class a freed device serves from the node's
  queues (``most_urgent``) and the running copy a more urgent lease pauses (``pause_victim``);
* ``node.hedge_rule_ref``: when a copy is hedged (``hedge_delay_ns``, ``sends_copy``) and
  where it may go (``takes_copy``, of ``HEDGE_PROBES`` probed nodes).

tests/test_sim_layer_parity.py replays recorded runs through the layers' entry points.

The node (as the dispatcher, ``node.dispatcher_ref``). Each node has one FIFO queue per
dispatcher class (``cls_rank``: 0 = most urgent; the wiring's ``model.dispatch_classes``
maps the classes' priorities, higher = more urgent, onto it); a freed device takes the head
of the most urgent non-empty queue. With ``preempt`` micro, a lease that finds no free
device pauses a running training kernel (its device is borrowed, as before) or, when none
runs there, the dispatcher's victim among the running inference copies: the least urgent
of a class below the lease's, the lowest device slot on a tie. It is paused at the next
boundary (the new copy starts after ``micro_ns``), keeps its remaining work in ``cend``, and
goes back to the head of its class queue (the node's ``node_queue`` cap is for new leases;
paused work always waits); when a device takes it again it pays ``resume_ns`` first.
Its finish event of the paused run is stale and ignored (a copy ends only at its current
``cend``). A victim that ends by the boundary is not paused: the lease waits for its device.
Hedges: a paused primary keeps its hedge (due or running) - a paused copy is the straggler
hedging is for; whichever copy ends first wins, and a paused loser is withdrawn from its queue.

The Python wiring (:mod:`magnum_lib.sim.model`) builds the inputs from the layers
(cluster, hardware cost model, workload generators, gossip dissemination lags, Bloom
digest) and calls :meth:`Core.advance` chunk by chunk, changing the view between chunks
(the digest) and reading the state arrays for utilization over time.

Arrays (all numpy, shared with the wiring; ``arrays`` is the dict passed in, by name):

* per node ``i``: ``node_dev`` devices, ``node_type`` type code, ``node_ckpt_ns``
  checkpoint cost of an evicted training shard there; truth ``run`` (inference copies
  running), ``qlen`` (queued at the node), ``train`` (devices running training),
  ``hold`` (devices held while an evicted shard checkpoints), ``inflight`` (leases sent,
  not yet at the node; the "fresh" view counts them); view ``view_busy``, ``view_train``,
  ``view_ver`` (when the node's state in the view was taken: gossip keeps the newer of its
  snapshot and a lease reply's, as versioned gossip entries do), ``view_time`` (age stamp),
  ring of gossip snapshots ``snap_busy``/``snap_train`` (``M`` per node), ``lag`` ticks.
  ``free = node_dev - run - train - hold >= 0`` always.
* per request ``r`` (sorted by arrival): ``arr``, ``cls``, ``noise`` (service multiplier),
  ``hnoise`` (the hedge copy's); results ``status`` (0 waiting, 1 running, 2 done,
  3 dropped), ``start``, ``finish``, ``node``, ``attempts``, ``comp[r, 0:6]`` (round wait,
  scheduling work, RTT, validation, retries, dispatch wait; they sum to start - arr).
* per copy ``c = 2r + h`` (h = 1 for a hedge): ``cstate`` (0 none, 1 running, 2 ended,
  3 paused), ``cnode``, ``cstart`` (start of its current run), ``cend`` (its end while
  running; while paused, the work it still needs), ``cborrow`` (runs on a device borrowed
  from training), ``cslot`` (its device slot), ``cq_next`` (next copy in its node queue).
* node queues: class ``k`` of node ``i`` is the list ``nq_head/nq_tail/nq_len[i * n_rank + k]``
  (``qlen[i]`` is their total); device slots ``slot_off[i] .. slot_off[i+1]`` hold the
  running copy (``slot_copy``, -1 none) and its class (``slot_rank``, -1: nothing pausable).
* pools: class ``c`` of scheduler ``s`` tries pools ``cpool_off[s*C+c] .. [s*C+c+1]`` in
  ``cpool`` order; pool ``p`` holds nodes ``pool_nodes[pool_off[p]:pool_off[p+1]]`` and
  (policy "hash") ring points ``ring_key``/``ring_node`` in ``[ring_off[p], ring_off[p+1])``.
* ``hint_off``/``hint_nodes``: per class, the planner's ranked nodes (policy "hints").
* shards (training leases): ``shard_node``, ``shard_dev``, ``shard_start``, ``shard_state``
  (0 running, 1 evicted and waiting); node ``i``'s shards are
  ``node_shard_off[i] .. node_shard_off[i+1]``.
* ``service[c * T + t]``: base service ns of class c on type t (< 0: not eligible);
  ``cls_prio`` (higher = more urgent), ``cls_rank`` (its dispatcher class, 0 = most urgent),
  ``cls_setup`` (graph load ns when not pre-reserved).
* ``skip[s * C + c]``: the last round in which scheduler s found no room for class c (the
  rest of that class waits for the next round without being placed again);
* ``type_nodes[type_off[c * T + t]:type_off[c * T + t + 1]]``: the nodes of type t that can
  serve class c (its static graph resident, if it has one): where a hedge copy may go;
* ``cnt``: counters, indices ``K_*``; ``busy_type[t]``: device-ns of inference per type;
  ``trace``: (time, event, node) rows for request ``trace_id``.
"""
from __future__ import annotations

import heapq

from magnum_lib.base.rng import below64, xorshift64_seed, xorshift64star
from magnum_lib.node.dispatcher_ref import most_urgent, next_boundary, pause_victim, start_after
from magnum_lib.node.hedge_rule_ref import HEDGE_PROBES, hedge_delay_ns, sends_copy, takes_copy
from magnum_lib.regional.hashing import ring_first
from magnum_lib.regional.validator_ref import (
    LR_ACCEPT,
    LR_PREEMPT,
    better_of_two,
    cover_victims,
    lease_expired,
    lease_verdict,
    lost_work_ns,
)
from magnum_lib.sim.contract import (  # the codes and parameter names, shared with _core.pyx
    C_DISPATCH,
    C_RETRY,
    C_ROUND,
    C_RTT,
    C_SCHED,
    C_VALID,
    CS_ENDED,
    CS_PAUSED,
    CS_RUN,
    EV_CKPT,
    EV_FINISH,
    EV_GOSSIP,
    EV_HEDGE,
    EV_LEASE,
    EV_RETRY,
    EV_ROUND,
    K_ACCEPT,
    K_ACCEPT_CKPT,
    K_ACCEPT_MICRO,
    K_CKPT_NS,
    K_DONE,
    K_DROPPED,
    K_EVENTS,
    K_EVICT,
    K_EXAMINED,
    K_EXPIRED,
    K_GOSSIP,
    K_HEDGE_NONE,
    K_HEDGE_NS,
    K_HEDGE_WON,
    K_HEDGES,
    K_LEASES,
    K_LOST_NS,
    K_MICRO_NS,
    K_NOFIT,
    K_PAUSED,
    K_QUEUED,
    K_REFUSED,
    K_RESUMED,
    K_ROUNDS,
    K_UNPAUSED,
    K_VIEW_AGE_NS,
    K_VIEW_SAMPLES,
    PARAMS,
    POL_HASH,
    POL_HINTS,
    POL_RANDOM,
    POL_SCAN,
    POL_TWO,
    PRE_MICRO,
    PRE_NONE,
    ST_DONE,
    ST_DROP,
    ST_RUN,
    TR_ARRIVE,
    TR_DROP,
    TR_FINISH,
    TR_HEDGE,
    TR_LEASE,
    TR_NOFIT,
    TR_PAUSE,
    TR_PLACED,
    TR_QUEUED,
    TR_REFUSED,
    TR_RESUME,
    TR_ROUND,
    TR_START,
    TRACE_ROWS,
    VIEW_FRESH,
    VIEW_GOSSIP,
    VIEW_ROUND,
)


class Core:
    """The request-path simulation of one region; see the module docstring."""

    def __init__(self, arrays: dict, params):
        self.arrays = arrays
        p = dict(zip(PARAMS, (int(v) for v in params), strict=True))
        self.params = p  # the parameters by name (also bound as attributes below)
        for k, v in p.items():
            setattr(self, k, v)
        self.rng = xorshift64_seed(p["seed"])
        self.heap: list = []
        self.seq = 0
        self.now = 0
        self.next_arr = 0
        self.pend: list = []  # FIFO of request ids waiting for a round (head at self.pend_head)
        self.pend_head = 0
        self.next_round = -1  # time of the live ROUND event (-1: none)
        self.busy_until = 0
        self.in_round = False
        self.tick = 0  # gossip ticks / view refreshes so far (own-placement stamps compare to it)
        self.ntrace = 0
        if p["n_req"] > 0:
            self._schedule_round(int(arrays["arr"][0]))
        if p["view_mode"] == VIEW_GOSSIP and p["gossip_ns"] > 0:
            self._push(p["gossip_ns"], 0, EV_GOSSIP)

    # -- plumbing --------------------------------------------------------------
    def _push(self, t, ident, kind):
        heapq.heappush(self.heap, (t, self.seq, ident * 8 + kind))
        self.seq += 1

    def _rand(self, n):
        """Uniform in [0, n): the high 64 bits of draw x n (Lemire 2019; no division)."""
        self.rng, x = xorshift64star(self.rng)
        return below64(x, n)

    def _trace(self, r, t, code, node):
        if r == self.trace_id and self.ntrace < TRACE_ROWS:
            tr = self.arrays["trace"]
            tr[self.ntrace, 0], tr[self.ntrace, 1], tr[self.ntrace, 2] = t, code, node
            self.ntrace += 1

    def _align(self, t):
        return next_boundary(t, self.quantum_ns)  # the dispatcher's decision quantum

    def _schedule_round(self, t):
        """Make sure a round runs at the first grid point >= t (and after the busy scheduler)."""
        if self.in_round:
            return  # the round schedules its successor when it ends
        t = max(t, self.busy_until)
        t = -(-t // self.round_ns) * self.round_ns
        if self.next_round < 0 or t < self.next_round:
            self.next_round = t
            self._push(t, 0, EV_ROUND)

    # -- views -----------------------------------------------------------------
    def _free(self, i):
        """Devices of node i free now (truth, not a view)."""
        arrays = self.arrays
        return int(arrays["node_dev"][i] - arrays["run"][i] - arrays["train"][i] - arrays["hold"][i])

    def _busy(self, i):
        arrays = self.arrays
        return int(arrays["run"][i] + arrays["qlen"][i] + arrays["hold"][i])

    def _view(self, s, i):
        """(busy, training) devices of node i as scheduler s believes them."""
        arrays = self.arrays
        if self.view_mode == VIEW_FRESH:
            return self._busy(i) + int(arrays["inflight"][i]), int(arrays["train"][i])
        j = s * self.n_nodes + i
        own = int(arrays["own"][j]) if arrays["own_tick"][j] == self.tick else 0
        return int(arrays["view_busy"][i]) + own, int(arrays["view_train"][i])

    def _avail(self, s, i, can_preempt):
        b, tr = self._view(s, i)
        cap = int(self.arrays["node_dev"][i]) + self.node_queue
        return cap - b if can_preempt else cap - b - tr

    def _note_placed(self, s, i):
        arrays = self.arrays
        if self.view_mode == VIEW_FRESH:
            arrays["inflight"][i] += 1
            return
        j = s * self.n_nodes + i
        if arrays["own_tick"][j] != self.tick:
            arrays["own_tick"][j] = self.tick
            arrays["own"][j] = 0
        arrays["own"][j] += 1

    # -- placement -------------------------------------------------------------
    def _pick_random(self, s, lo, n, cp, t_left):
        """Next fitting random draw from pool nodes[lo:lo+n]; then up to ``scan_limit`` nodes from the last draw."""
        arrays = self.arrays
        nodes = arrays["pool_nodes"]
        last = 0
        while t_left[0] > 0:
            t_left[0] -= 1
            k = self._rand(n)
            last = k
            arrays["cnt"][K_EXAMINED] += 1
            i = int(nodes[lo + k])
            if self._avail(s, i, cp) > 0:
                return i
        for j in range(min(n, self.scan_limit)):
            arrays["cnt"][K_EXAMINED] += 1
            i = int(nodes[lo + (last + j) % n])
            if self._avail(s, i, cp) > 0:
                return i
        return -1

    def _place_pool(self, s, r, pool, cp):
        arrays = self.arrays
        lo, hi = int(arrays["pool_off"][pool]), int(arrays["pool_off"][pool + 1])
        n = hi - lo
        if n == 0:
            return -1
        nodes = arrays["pool_nodes"]
        pol = POL_TWO if self.policy == POL_HINTS else self.policy
        if pol == POL_SCAN:
            best, best_av = -1, 0
            for k in range(n):
                i = int(nodes[lo + k])
                av = self._avail(s, i, cp)
                if better_of_two(best, best_av, i, av) == i:  # the most room, the first on ties
                    best, best_av = i, av
            arrays["cnt"][K_EXAMINED] += n
            return best
        if pol == POL_HASH:
            rlo, rhi = int(arrays["ring_off"][pool]), int(arrays["ring_off"][pool + 1])
            a = ring_first(arrays["ring_key"], rlo, rhi, self._rand(1 << 62))  # the regional layer's lookup
            m = rhi - rlo
            for j in range(m):
                i = int(arrays["ring_node"][rlo + (a - rlo + j) % m])
                arrays["cnt"][K_EXAMINED] += 1
                if self._avail(s, i, cp) > 0:
                    return i
            return -1
        left = [self.draws]
        a = self._pick_random(s, lo, n, cp, left)
        if pol == POL_RANDOM or a < 0:
            return a
        b = self._pick_random(s, lo, n, cp, left)
        if b < 0:
            return a
        return better_of_two(a, self._avail(s, a, cp), b, self._avail(s, b, cp))  # the regional layer's pick

    def _place(self, s, r):
        """Node for request r by scheduler s, or -1: free devices first, preemption second."""
        arrays = self.arrays
        c = int(arrays["cls"][r])
        may_preempt = self.preempt != PRE_NONE and int(arrays["cls_prio"][c]) > self.train_prio
        for cp in ((False, True) if may_preempt else (False,)):
            if self.policy == POL_HINTS:  # the planner's hinted nodes first: the better of two
                lo, n = int(arrays["hint_off"][c]), int(arrays["hint_off"][c + 1] - arrays["hint_off"][c])
                best = -1
                for _ in range(2 if n > 0 else 0):
                    i = int(arrays["hint_nodes"][lo + self._rand(n)])
                    arrays["cnt"][K_EXAMINED] += 1
                    if i >= 0 and self._avail(s, i, cp) > 0 and (best < 0 or self._avail(s, i, cp) > self._avail(s, best, cp)):
                        best = i
                if best >= 0:
                    return best
            k = s * self.n_cls + c
            for q in range(int(arrays["cpool_off"][k]), int(arrays["cpool_off"][k + 1])):
                i = self._place_pool(s, r, int(arrays["cpool"][q]), cp)
                if i >= 0:
                    return i
        return -1

    # -- events ----------------------------------------------------------------
    def _round(self, t):
        arrays = self.arrays
        cnt = arrays["cnt"]
        self.next_round = -1
        self.in_round = True
        cnt[K_ROUNDS] += 1
        if self.view_mode == VIEW_ROUND:
            for i in range(self.n_nodes):
                arrays["view_busy"][i] = self._busy(i)
                arrays["view_train"][i] = arrays["train"][i]
            self.tick += 1
        batch = self.pend[self.pend_head:]
        self.pend = []
        self.pend_head = 0
        arr = arrays["arr"]
        while self.next_arr < self.n_req and arr[self.next_arr] <= t:
            batch.append(self.next_arr)
            self._trace(self.next_arr, int(arr[self.next_arr]), TR_ARRIVE, -1)
            arrays["ready"][self.next_arr] = arr[self.next_arr]
            self.next_arr += 1
        work = [self.c_round_ns] * self.n_sched
        comp = arrays["comp"]
        rnd = int(cnt[K_ROUNDS])
        for k, r in enumerate(batch):
            s = k % self.n_sched
            sc = s * self.n_cls + int(arrays["cls"][r])
            if arrays["skip"][sc] == rnd:
                # This scheduler found no room for this class earlier in the round: the request
                # keeps waiting (no attempt, no work) instead of scanning the view again.
                self.pend.append(r)
                continue
            ex0 = int(cnt[K_EXAMINED])
            i = self._place(s, r)
            work[s] += self.c_dec_ns + self.c_node_ns * (int(cnt[K_EXAMINED]) - ex0)
            done = t + work[s]
            comp[r, C_ROUND] += t - int(arrays["ready"][r])
            comp[r, C_SCHED] += done - t
            self._trace(r, t, TR_ROUND, -1)
            if i < 0:
                arrays["skip"][sc] = rnd
                cnt[K_NOFIT] += 1
                self._trace(r, done, TR_NOFIT, -1)
                self._fail_attempt(r, done)
                continue
            self._note_placed(s, i)
            cnt[K_LEASES] += 1
            arrays["node"][r] = i
            arrays["expiry"][r] = done + self.lease_ns
            comp[r, C_RTT] += self.rtt_half_ns
            self._trace(r, done, TR_PLACED, i)
            self._push(done + self.rtt_half_ns, r, EV_LEASE)
        self.busy_until = t + max(work)
        self.in_round = False
        if self.pend_head < len(self.pend):
            self._schedule_round(t + self.round_ns)
        elif self.next_arr < self.n_req:
            self._schedule_round(max(t + self.round_ns, int(arr[self.next_arr])))

    def _fail_attempt(self, r, t_back):
        """The attempt failed; its time moves to the retry component and r waits again."""
        arrays = self.arrays
        comp = arrays["comp"]
        comp[r, C_RETRY] += t_back - int(arrays["ready"][r])
        for k in (C_ROUND, C_SCHED, C_RTT, C_VALID):
            comp[r, k] = 0
        arrays["attempts"][r] += 1
        if arrays["attempts"][r] >= self.max_attempts:
            arrays["status"][r] = ST_DROP
            arrays["finish"][r] = t_back
            arrays["cnt"][K_DROPPED] += 1
            self._trace(r, t_back, TR_DROP, -1)
            return
        arrays["ready"][r] = t_back
        self.pend.append(r)
        self._schedule_round(t_back)

    # -- the node's class queues and devices (the dispatcher's rules) ------------
    def _q_push(self, i, c, front):
        """Queue copy c at node i, in its dispatcher class's FIFO (``front``: a paused copy)."""
        arrays = self.arrays
        k = i * self.n_rank + int(arrays["cls_rank"][arrays["cls"][c >> 1]])
        nxt = arrays["cq_next"]
        if arrays["nq_len"][k] == 0:
            arrays["nq_head"][k] = arrays["nq_tail"][k] = c
            nxt[c] = -1
        elif front:
            nxt[c] = arrays["nq_head"][k]
            arrays["nq_head"][k] = c
        else:
            nxt[int(arrays["nq_tail"][k])] = c
            nxt[c] = -1
            arrays["nq_tail"][k] = c
        arrays["nq_len"][k] += 1
        arrays["qlen"][i] += 1

    def _q_pop(self, i):
        """The copy node i's freed device serves: the head of its most urgent non-empty class."""
        arrays = self.arrays
        lo = i * self.n_rank
        k = lo + most_urgent(arrays["nq_len"][lo:lo + self.n_rank], self.n_rank)  # the node layer's rule
        c = int(arrays["nq_head"][k])
        arrays["nq_head"][k] = arrays["cq_next"][c]
        arrays["nq_len"][k] -= 1
        arrays["qlen"][i] -= 1
        return c

    def _q_remove(self, i, c):
        """Withdraw copy c from node i's queue (a paused copy whose other copy finished)."""
        arrays = self.arrays
        k = i * self.n_rank + int(arrays["cls_rank"][arrays["cls"][c >> 1]])
        nxt = arrays["cq_next"]
        prev, x = -1, int(arrays["nq_head"][k])
        while x != c:
            prev, x = x, int(nxt[x])
        if prev < 0:
            arrays["nq_head"][k] = nxt[c]
        else:
            nxt[prev] = nxt[c]
        if arrays["nq_tail"][k] == c:
            arrays["nq_tail"][k] = prev
        arrays["nq_len"][k] -= 1
        arrays["qlen"][i] -= 1

    def _take_slot(self, i, c, slot):
        """Copy c takes device ``slot`` of node i (-1: its lowest free one)."""
        arrays = self.arrays
        off = int(arrays["slot_off"][i])
        if slot < 0:
            slot = 0
            while arrays["slot_copy"][off + slot] >= 0:
                slot += 1
        arrays["slot_copy"][off + slot] = c
        arrays["slot_rank"][off + slot] = arrays["cls_rank"][arrays["cls"][c >> 1]]
        arrays["cslot"][c] = slot

    def _free_slot(self, c):
        arrays = self.arrays
        slot = int(arrays["cslot"][c])
        off = int(arrays["slot_off"][int(arrays["cnode"][c])]) + slot
        arrays["slot_copy"][off] = -1
        arrays["slot_rank"][off] = -1
        return slot

    def _pause(self, c, tb):
        """Pause running copy c at boundary tb (micro-preemption): its remaining work waits at
        the head of its class queue; returns its device slot and whether it was borrowed."""
        arrays = self.arrays
        cnt = arrays["cnt"]
        i = int(arrays["cnode"][c])
        done = max(tb - int(arrays["cstart"][c]), 0)  # useful work of this run until the pause
        arrays["busy_type"][int(arrays["node_type"][i])] += done
        if arrays["cborrow"][c]:
            cnt[K_MICRO_NS] += done
        if c & 1:
            cnt[K_HEDGE_NS] += done
        arrays["cend"][c] -= max(tb, int(arrays["cstart"][c]))  # paused: cend holds the work still needed
        arrays["cstate"][c] = CS_PAUSED
        arrays["run"][i] -= 1
        slot = self._free_slot(c)
        self._q_push(i, c, True)
        cnt[K_PAUSED] += 1
        self._trace(c >> 1, tb, TR_PAUSE, i)
        return slot, int(arrays["cborrow"][c])

    def _serve_queue(self, i, t, borrowed, slot):
        """A device of node i frees at t: the next queued copy starts (or resumes) on it at the
        next boundary (a borrowed device stays borrowed: the copy was queued behind it)."""
        arrays = self.arrays
        c = self._q_pop(i)
        if arrays["cstate"][c] == CS_PAUSED:  # a paused copy pays the resume, then runs what it still needs
            t1 = start_after(t, self.resume_ns, self.quantum_ns)
            arrays["cstate"][c], arrays["cstart"][c], arrays["cborrow"][c] = CS_RUN, t1, borrowed
            arrays["cend"][c] += t1
            arrays["run"][i] += 1
            self._take_slot(i, c, slot)
            self._push(int(arrays["cend"][c]), c, EV_FINISH)
            arrays["cnt"][K_UNPAUSED] += 1
            self._trace(c >> 1, t1, TR_RESUME, i)
            return
        r = c >> 1
        t0 = self._align(t)
        arrays["comp"][r, C_DISPATCH] += t0 - int(arrays["ready"][r])
        self._start_copy(c, i, t0, borrowed, slot)

    def _start_copy(self, c, i, t, borrowed, slot=-1):
        arrays = self.arrays
        r = c >> 1
        cl = int(arrays["cls"][r])
        base = int(arrays["service"][cl * self.n_types + int(arrays["node_type"][i])])
        mult = float(arrays["hnoise"][r] if c & 1 else arrays["noise"][r])
        dur = int(base * mult) + int(arrays["cls_setup"][cl]) + 1
        arrays["cstate"][c], arrays["cnode"][c], arrays["cstart"][c], arrays["cborrow"][c] = CS_RUN, i, t, borrowed
        arrays["cend"][c] = t + dur
        arrays["run"][i] += 1
        self._take_slot(i, c, slot)
        self._push(t + dur, c, EV_FINISH)
        if c & 1 == 0:
            arrays["status"][r] = ST_RUN
            arrays["start"][r] = t
            self._trace(r, t, TR_START, i)
            thr = hedge_delay_ns(base, self.hedge_milli)  # the node layer's rule (hedge_rule_ref)
            if sends_copy(dur, thr, self.hedge_milli > 0):
                self._push(t + thr, r, EV_HEDGE)

    def _accept_start(self, r, i, tv, ready, pause, borrowed, slot=-1):
        """Start r's primary on node i: the dispatcher's next boundary after ``ready``, then ``pause``."""
        arrays = self.arrays
        t = start_after(ready, pause, self.quantum_ns)
        arrays["comp"][r, C_DISPATCH] += t - tv
        self._start_copy(2 * r, i, t, borrowed, slot)

    def _lease(self, r, ta):
        """A lease reaches its node; the reply carries the node's state back (``piggyback``).

        In a true partition (``part_leases``) a lease to a cut-off node is lost instead: no
        validation, no reply; its scheduler retries when the lease expires (counted expired).
        """
        arrays = self.arrays
        i = int(arrays["node"][r])
        if self.part_leases and self.part_start_ns <= ta < self.part_end_ns and arrays["part"][i]:
            if self.view_mode == VIEW_FRESH:
                arrays["inflight"][i] -= 1
            arrays["cnt"][K_EXPIRED] += 1
            t_back = max(int(arrays["expiry"][r]), ta)
            self._trace(r, t_back, TR_REFUSED, i)
            self._push(t_back, r, EV_RETRY)
            return
        self._lease_decide(r, ta)
        if self.piggyback and self.view_mode != VIEW_FRESH:
            arrays = self.arrays
            i = int(arrays["node"][r])
            arrays["view_busy"][i] = self._busy(i)
            arrays["view_train"][i] = arrays["train"][i]
            arrays["view_time"][i] = ta
            arrays["view_ver"][i] = ta

    def _lease_decide(self, r, ta):
        """The lease arrives at its node (``arrays["node"][r]``) at ``ta`` (ns): validate, then accept,
        preempt, queue or refuse."""
        arrays = self.arrays
        cnt = arrays["cnt"]
        i = int(arrays["node"][r])
        if self.view_mode == VIEW_FRESH:
            arrays["inflight"][i] -= 1
        tv = ta + self.c_val_ns
        arrays["comp"][r, C_VALID] += self.c_val_ns
        self._trace(r, ta, TR_LEASE, i)
        if lease_expired(int(arrays["expiry"][r]), ta):
            cnt[K_EXPIRED] += 1
            self._refuse(r, tv, i)
            return
        free = self._free(i)
        c = int(arrays["cls"][r])
        prio = int(arrays["cls_prio"][c])
        v, v_prio = self._lease_victim(i, c, free)
        # The validator's rule (regional.validator_ref): one device, the victim's priority as
        # the node's lowest (min_prio = prio when nothing can go).
        verdict = lease_verdict(free, 1, self.preempt != PRE_NONE, v_prio, prio)
        if verdict == LR_ACCEPT:
            cnt[K_ACCEPT] += 1
            self._accept_start(r, i, tv, tv, 0, 0)
        elif verdict == LR_PREEMPT and self.preempt == PRE_MICRO:
            self._lease_micro(r, i, tv, v)
        elif verdict == LR_PREEMPT:
            self._lease_evict(r, i, tv, prio)
        else:
            self._lease_queue(r, i, tv)

    def _lease_victim(self, i, c, free):
        """The victim on node i for class c with ``free`` devices: (slot index or -1 for training, its priority)."""
        # With micro-preemption, the dispatcher's pause rule picks the least urgent running
        # inference copy of a class below this one (node.dispatcher_ref.pause_victim, lowest
        # device on a tie); training goes first when it is no more urgent than that.
        arrays = self.arrays
        v, v_prio, off = -1, int(arrays["cls_prio"][c]), int(arrays["slot_off"][i])
        if free == 0 and self.preempt == PRE_MICRO and arrays["run"][i] > 0:
            dev = int(arrays["node_dev"][i])
            v = pause_victim(arrays["slot_rank"][off:off + dev], dev, int(arrays["cls_rank"][c]))
            if v >= 0:
                v_prio = int(arrays["cls_prio"][arrays["cls"][int(arrays["slot_copy"][off + v]) >> 1]])
        if arrays["train"][i] > 0 and (v < 0 or self.train_prio <= v_prio):
            v, v_prio = -1, self.train_prio
        return v, v_prio

    def _lease_micro(self, r, i, tv, v):
        """Micro-preemption at ``tv`` (ns): borrow a training device, or pause slot v's copy at the next boundary."""
        arrays = self.arrays
        arrays["cnt"][K_ACCEPT_MICRO] += 1
        if v < 0:  # a training kernel is paused: its device is borrowed
            arrays["train"][i] -= 1
            self._accept_start(r, i, tv, tv, self.micro_ns, 1)  # paused at a boundary (C20)
            return
        cp = int(arrays["slot_copy"][int(arrays["slot_off"][i]) + v])
        tb = next_boundary(tv, self.quantum_ns)
        if arrays["cend"][cp] <= tb:
            # The victim ends by the boundary: nothing to pause, its device serves the
            # queue there (this request is the most urgent in it).
            arrays["ready"][r] = tv
            self._q_push(i, 2 * r, False)
            self._trace(r, tv, TR_QUEUED, i)
            return
        slot, borrowed = self._pause(cp, tb)
        self._accept_start(r, i, tv, tv, self.micro_ns, borrowed, slot)

    def _lease_evict(self, r, i, tv, prio):
        """Checkpoint preemption at ``tv`` (ns): evict the validator's victim shard, start once checkpointed."""
        arrays = self.arrays
        cnt = arrays["cnt"]
        lo, hi = int(arrays["node_shard_off"][i]), int(arrays["node_shard_off"][i + 1])
        state, devs = arrays["shard_state"], arrays["shard_dev"]
        # Every shard has train_prio. No device is free and one is needed, so the first
        # victim is the only one.
        sh, _ = cover_victims(lambda s: state[s] == 0, lambda s: self.train_prio, lambda s: int(devs[s]),
                              lo, hi, 0, 1, prio)
        if sh < 0:
            sh = hi - 1
        d = int(arrays["shard_dev"][sh])
        ck = int(arrays["node_ckpt_ns"][i])
        arrays["shard_state"][sh] = 1
        arrays["train"][i] -= d
        arrays["hold"][i] += d - 1
        if d > 1:
            self._push(tv + ck, sh, EV_CKPT)
        cnt[K_EVICT] += 1
        # lost_work_ns: the lease rule's (regional layer)
        cnt[K_LOST_NS] += d * lost_work_ns(tv, int(arrays["shard_start"][sh]), self.ckpt_interval_ns)
        cnt[K_CKPT_NS] += d * ck
        cnt[K_ACCEPT_CKPT] += 1
        self._accept_start(r, i, tv, tv + ck, 0, 0)  # the device is free once checkpointed

    def _lease_queue(self, r, i, tv):
        """No device now: queue at ``tv`` (ns) if the node's queue has room and a device will free, else refuse."""
        # Queue only behind inference (or a checkpoint) that will free a device; a node
        # whose devices all run training would keep the request forever.
        arrays = self.arrays
        cnt = arrays["cnt"]
        if arrays["qlen"][i] < self.node_queue and arrays["run"][i] + arrays["hold"][i] > 0:
            cnt[K_ACCEPT] += 1
            cnt[K_QUEUED] += 1
            arrays["ready"][r] = tv  # dispatch wait counts from validation
            self._q_push(i, 2 * r, False)
            self._trace(r, tv, TR_QUEUED, i)
            return
        cnt[K_REFUSED] += 1
        self._refuse(r, tv, i)

    def _refuse(self, r, tv, i):
        self._trace(r, tv, TR_REFUSED, i)
        self._push(tv + self.rtt_half_ns, r, EV_RETRY)

    def _release(self, i, borrowed, t, slot):
        """A copy ended on node i at t: hand its device (``slot``) on (queue, training, waiting shard)."""
        arrays = self.arrays
        arrays["run"][i] -= 1
        if arrays["qlen"][i] > 0 and (borrowed or self._free(i) > 0):
            self._serve_queue(i, t, borrowed, slot)
            return
        if borrowed:
            arrays["train"][i] += 1  # the paused training kernel resumes on its device
        self._resume_shards(i)

    def _resume_shards(self, i):
        arrays = self.arrays
        for sh in range(int(arrays["node_shard_off"][i]), int(arrays["node_shard_off"][i + 1])):
            if arrays["shard_state"][sh] == 1 and arrays["qlen"][i] == 0:
                d = int(arrays["shard_dev"][sh])
                if self._free(i) >= d:
                    arrays["shard_state"][sh] = 0
                    arrays["train"][i] += d
                    arrays["cnt"][K_RESUMED] += 1

    def _finish(self, c, t):
        arrays = self.arrays
        if arrays["cstate"][c] != CS_RUN or arrays["cend"][c] != t:
            return  # killed (the other copy won), or the end of a run since paused
        r = c >> 1
        arrays["cstate"][c] = CS_ENDED
        i = int(arrays["cnode"][c])
        ty = int(arrays["node_type"][i])
        arrays["busy_type"][ty] += t - int(arrays["cstart"][c])
        if arrays["cborrow"][c]:
            arrays["cnt"][K_MICRO_NS] += t - int(arrays["cstart"][c])
        if c & 1:
            arrays["cnt"][K_HEDGE_NS] += t - int(arrays["cstart"][c])
            arrays["cnt"][K_HEDGE_WON] += 1
        self._release(i, int(arrays["cborrow"][c]), t, self._free_slot(c))
        o = c ^ 1
        if arrays["cstate"][o] == CS_PAUSED:  # the slower copy waits paused: withdraw it from its queue
            arrays["cstate"][o] = CS_ENDED
            j = int(arrays["cnode"][o])
            self._q_remove(j, o)
            self._resume_shards(j)
        elif arrays["cstate"][o] == CS_RUN:  # kill the slower copy
            arrays["cstate"][o] = CS_ENDED
            j = int(arrays["cnode"][o])
            arrays["busy_type"][int(arrays["node_type"][j])] += t - int(arrays["cstart"][o])
            if o & 1:
                arrays["cnt"][K_HEDGE_NS] += t - int(arrays["cstart"][o])
            if arrays["cborrow"][o]:
                arrays["cnt"][K_MICRO_NS] += t - int(arrays["cstart"][o])
            self._release(j, int(arrays["cborrow"][o]), t, self._free_slot(o))
        arrays["status"][r] = ST_DONE
        arrays["finish"][r] = t
        arrays["cnt"][K_DONE] += 1
        self._trace(r, t, TR_FINISH, i)

    def _hedge(self, r, t):
        arrays = self.arrays
        if arrays["status"][r] != ST_RUN:
            return
        i0 = int(arrays["cnode"][2 * r])
        k = int(arrays["cls"][r]) * self.n_types + int(arrays["node_type"][i0])  # same type, able to serve the class
        lo, hi = int(arrays["type_off"][k]), int(arrays["type_off"][k + 1])
        best = -1
        for _ in range(HEDGE_PROBES):  # probe random nodes of the same type (truth, over RTT)
            j = int(arrays["type_nodes"][lo + self._rand(hi - lo)])
            if takes_copy(j, i0, self._free(j)):  # the node layer's
                best = j
                break
        if best < 0:
            arrays["cnt"][K_HEDGE_NONE] += 1
            return
        arrays["cnt"][K_HEDGES] += 1
        self._trace(r, t, TR_HEDGE, best)
        self._start_copy(2 * r + 1, best, self._align(t + 2 * self.rtt_half_ns), 0)

    def _gossip(self, t):
        arrays = self.arrays
        m = self.ring_m
        k = self.tick + 1
        slot = k % m
        in_part = self.part_start_ns <= t < self.part_end_ns
        age = 0  # the entries' ages just before and just after this tick (their mean over the interval)
        for i in range(self.n_nodes):
            age += t - int(arrays["view_time"][i])
            arrays["snap_busy"][slot * self.n_nodes + i] = self._busy(i)
            arrays["snap_train"][slot * self.n_nodes + i] = arrays["train"][i]
            lag = min(int(arrays["lag"][i]), k, m - 1)
            ts = t - lag * self.gossip_ns  # when the gossiped state was taken at the node
            # cut off by the partition, or older than the entry the scheduler holds (a lease
            # reply): the scheduler's entry for i stays as it was
            if not (in_part and arrays["part"][i]) and ts >= arrays["view_ver"][i]:
                src = ((k - lag) % m) * self.n_nodes + i  # slot-major: one slot's nodes are contiguous
                arrays["view_busy"][i] = arrays["snap_busy"][src]
                arrays["view_train"][i] = arrays["snap_train"][src]
                arrays["view_time"][i] = ts
                arrays["view_ver"][i] = ts
            age += t - int(arrays["view_time"][i])
        arrays["cnt"][K_VIEW_AGE_NS] += age
        arrays["cnt"][K_VIEW_SAMPLES] += 2 * self.n_nodes
        self.tick = k
        arrays["cnt"][K_GOSSIP] += 1
        self._push(t + self.gossip_ns, 0, EV_GOSSIP)

    def _ckpt_done(self, sh):
        arrays = self.arrays
        i = int(arrays["shard_node"][sh])
        arrays["hold"][i] -= int(arrays["shard_dev"][sh]) - 1
        # The freed devices go to the queue first, then to waiting shards.
        while arrays["qlen"][i] > 0 and self._free(i) > 0:
            self._serve_queue(i, self.now, 0, -1)
        self._resume_shards(i)

    # -- the loop ----------------------------------------------------------------
    def advance(self, t_end: int) -> int:
        """Handle every event before ``t_end`` (ns); return the number handled."""
        arrays = self.arrays
        cnt = arrays["cnt"]
        handled = 0
        while self.heap and self.heap[0][0] < t_end:
            t, _, payload = heapq.heappop(self.heap)
            self.now = t
            kind, ident = payload & 7, payload >> 3
            handled += 1
            if kind == EV_ROUND:
                if t == self.next_round:
                    self._round(t)
            elif kind == EV_LEASE:
                self._lease(ident, t)
            elif kind == EV_FINISH:
                self._finish(ident, t)
            elif kind == EV_HEDGE:
                self._hedge(ident, t)
            elif kind == EV_GOSSIP:
                self._gossip(t)
            elif kind == EV_RETRY:
                self._fail_attempt(ident, t)
            else:
                self._ckpt_done(ident)
        cnt[K_EVENTS] += handled
        return handled

    @property
    def tick_count(self) -> int:
        return self.tick

    def pending(self) -> int:
        return len(self.pend) - self.pend_head
