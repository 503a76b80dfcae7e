"""The simulator decides what the layers' own entry points decide, on both backends.

The whole-system core calls the layers' rules (regional/_lease_rule.pxd, node/_dispatcher.pxd,
node/_hedge_rule.pxd and their Python twins). Here a seeded run of the reference core records
every lease it validates (the node's state just before, the outcome, the evicted shard), every
start and every hedge it schedules, every class a node's freed device served from its queues
and every running copy it paused for a more urgent one; the records are then replayed through
the layers' public batch entry points - ``validate_batch`` (one recorded lease per virtual
node), the node dispatcher's ``run_dispatch`` and its rules ``serve_class`` / ``pause_choice``,
and ``hedging.hedge_plan`` - on the Python and the compiled backends, which must decide
exactly what the simulator decided. The compiled core's counters
must equal the recorded run's (its arrays equal the reference's: tests/test_sim_core.py).
"""
import numpy as np
import pytest

from magnum_lib.node import dispatcher_ref, hedge_rule_ref
from magnum_lib.regional import validator_ref as V
from magnum_lib.sim import contract, core_ref, make_config
from magnum_lib.sim.model import build_region, run_region

try:
    from magnum_lib.node import _dispatcher, _hedge_rule
    from magnum_lib.regional import _validator
    from magnum_lib.sim import _core  # noqa: F401
    COMPILED = True
except ImportError:  # pragma: no cover - the reference-only install
    COMPILED = False

VALIDATORS = [V] + ([_validator] if COMPILED else [])
DISPATCHERS = [dispatcher_ref] + ([_dispatcher] if COMPILED else [])
HEDGERS = [hedge_rule_ref] + ([_hedge_rule] if COMPILED else [])
IDS = ["python", "compiled"][:len(VALIDATORS)]

UNPREEMPTIBLE = 1 << 40  # inference and checkpointing devices: above every class priority
CASES = {  # seeded configurations that exercise every outcome of the lease rule
    "checkpoint": dict(preset="magnum_v1", load=1.3, node_queue=2, quantum_s=1e-4, hedge_factor=1.5),
    "micro": dict(preset="magnum_v2", load=1.3, duration_s=0.2),
    "micro_queue": dict(preset="magnum_v2", load=1.3, node_queue=2, duration_s=0.2),
    "queue": dict(preset="magnum_v1", load=1.5, node_queue=4, quantum_s=1e-4, duration_s=0.3),
    "kill": dict(preset="magnum_v1", preempt="kill", load=1.3, schedulers=8),
}


class Recorder(core_ref.Core):
    """The reference core, noting each lease decision, primary start and hedge it schedules."""

    def _lease_decide(self, r, ta):
        arrays = self.arrays
        i = int(arrays["node"][r])
        lo, hi = int(arrays["node_shard_off"][i]), int(arrays["node_shard_off"][i + 1])
        off, dev = int(arrays["slot_off"][i]), int(arrays["node_dev"][i])
        running = arrays["slot_copy"][off:off + dev]
        self.waiting = int(arrays["cls_rank"][arrays["cls"][r]])  # the lease's dispatcher class (for _pause)
        rec = dict(r=r, i=i, ta=ta, tv=ta + self.c_val_ns, expiry=int(arrays["expiry"][r]),
                   prio=int(arrays["cls_prio"][arrays["cls"][r]]), dev=int(arrays["node_dev"][i]),
                   run=int(arrays["run"][i]), train=int(arrays["train"][i]), hold=int(arrays["hold"][i]),
                   ckpt=int(arrays["node_ckpt_ns"][i]),
                   lo=lo, state=arrays["shard_state"][lo:hi].copy(), sdev=arrays["shard_dev"][lo:hi].copy(),
                   sstart=arrays["shard_start"][lo:hi].copy(),
                   run_prio=arrays["cls_prio"][arrays["cls"][running[running >= 0] >> 1]].tolist(),
                   cnt=arrays["cnt"].copy())
        super()._lease_decide(r, ta)
        started_here = arrays["status"][r] == contract.ST_RUN and arrays["cnode"][2 * r] == i
        rec.update(delta=arrays["cnt"] - rec["cnt"], state_after=arrays["shard_state"][lo:hi].copy(),
                   start=int(arrays["start"][r]) if started_here else -1)
        self.leases.append(rec)

    def _pick_random(self, s, lo, n, cp, t_left):
        i = super()._pick_random(s, lo, n, cp, t_left)
        self.picks.append((i, self._avail(s, i, cp) if i >= 0 else 0))
        return i

    def _place_pool(self, s, r, pool, cp):
        self.picks = []
        i = super()._place_pool(s, r, pool, cp)
        if len(self.picks) == 2:  # two choices: (first pick, its room, second pick, its room, chosen)
            self.pairs.append(self.picks[0] + self.picks[1] + (i,))
        return i

    def _q_pop(self, i):
        arrays = self.arrays
        lo = i * self.n_rank
        qlen = arrays["nq_len"][lo:lo + self.n_rank].copy()
        waiting = []  # (ready time, class) of each queued copy: what a single FIFO would serve first
        for k in range(self.n_rank):
            c, n = int(arrays["nq_head"][lo + k]), int(qlen[k])
            for _ in range(n):
                waiting.append((int(arrays["ready"][c >> 1]), k, int(arrays["cstate"][c]) == contract.CS_PAUSED))
                c = int(arrays["cq_next"][c])
        c = super()._q_pop(i)
        self.pops.append(dict(qlen=qlen, chosen=int(arrays["cls_rank"][arrays["cls"][c >> 1]]), waiting=waiting,
                              ready=int(arrays["ready"][c >> 1]),
                              paused=int(arrays["cstate"][c]) == contract.CS_PAUSED))
        return c

    def _pause(self, c, tb):
        arrays = self.arrays
        i = int(arrays["cnode"][c])
        off, dev = int(arrays["slot_off"][i]), int(arrays["node_dev"][i])
        rank = arrays["slot_rank"][off:off + dev].copy()
        slot, borrowed = super()._pause(c, tb)
        self.pauses.append(dict(rank=rank, waiting=self.waiting, slot=slot))
        return slot, borrowed

    def _start_copy(self, c, i, t, borrowed, slot=-1):
        self.pushed = {}
        if c & 1:  # a hedge copy: (its node, the primary's node, free devices there before it)
            arrays = self.arrays
            self.copies.append((i, int(arrays["cnode"][c - 1]),
                                int(arrays["node_dev"][i] - arrays["run"][i] - arrays["train"][i] - arrays["hold"][i])))
        super()._start_copy(c, i, t, borrowed, slot)
        if c & 1 == 0:  # (duration, expected time, hedge delay or -1) of each primary
            arrays = self.arrays
            base = int(arrays["service"][int(arrays["cls"][c >> 1]) * self.n_types + int(arrays["node_type"][i])])
            self.starts.append((self.pushed[contract.EV_FINISH] - t, base, self.pushed.get(contract.EV_HEDGE, t - 1) - t))

    def _push(self, t, ident, kind):
        self.pushed = getattr(self, "pushed", {})
        self.pushed[kind] = t
        super()._push(t, ident, kind)


# A lease that reaches its node exactly at its expiry (timeout = RTT/2) is expired, as the validator says.
AT_EXPIRY = dict(preset="magnum_v1", lease_timeout_s=50e-6, rtt_s=100e-6, max_attempts=3)


def _recorded(case):
    knobs = dict(CASES.get(case, AT_EXPIRY))
    cfg = make_config(knobs.pop("preset"), **{"duration_s": 0.05, "seed": 3, **knobs})
    run = build_region(cfg, backend="python")
    run.core.__class__ = Recorder
    run.core.leases, run.core.starts, run.core.pairs, run.core.pops, run.core.pauses, run.core.copies = \
        [], [], [], [], [], []
    run_region(run)
    return cfg, run


@pytest.fixture(scope="module", params=list(CASES))
def recorded(request):
    return (request.param,) + _recorded(request.param)


def _outcome(rec):
    """The validator's result code for what the simulator did with the lease."""
    d = rec["delta"]
    if d[contract.K_EXPIRED]:
        return V.EXPIRED
    if d[contract.K_ACCEPT_MICRO] or d[contract.K_ACCEPT_CKPT]:
        return V.ACCEPTED_PREEMPT
    if d[contract.K_ACCEPT] and not d[contract.K_QUEUED]:
        return V.ACCEPTED
    assert d[contract.K_QUEUED] or d[contract.K_REFUSED]  # the node's queue is the dispatcher's, after the verdict
    return V.INSUFFICIENT_DEVICES


def _as_validator_rows(recs, micro, train_prio):
    """Each recorded lease on its own virtual node: inference, checkpoints and training as slots."""
    # K bounds a node's slots and its devices (validator_ref): room for every holder and one more.
    K_slots = max(max(r["dev"], 1 + r["run"] + (r["hold"] > 0) + max(len(r["state"]), 1)) for r in recs)
    n = len(recs)
    nodes = np.zeros((n, V.NODE_COLS), np.int64)
    slots = np.full((n * K_slots, 6), -1, np.int64)
    leases = np.zeros((n, 8), np.int64)
    for v, rec in enumerate(recs):
        held = []  # (job, priority, devices)
        # running inference: a victim class only under micro-preemption (the dispatcher's pause rule)
        held += [(1_000_000 + k, p if micro else UNPREEMPTIBLE, 1) for k, p in enumerate(rec["run_prio"])]
        if rec["hold"]:
            held.append((2_000_000, UNPREEMPTIBLE, rec["hold"]))
        if micro:  # a micro-preemption borrows one training device: training is one victim slot
            if rec["train"]:
                held.append((3_000_000, train_prio, rec["train"]))
        else:  # a checkpoint evicts a running shard; the simulator's shard index is the job
            live = rec["state"] == 0
            assert int(rec["sdev"][live].sum()) == rec["train"]  # the sim's training devices are its running shards
            held += [(rec["lo"] + k, train_prio, int(rec["sdev"][k]), int(rec["sstart"][k])) for k in np.flatnonzero(live)]
        free = rec["dev"] - rec["run"] - rec["hold"] - rec["train"]
        assert free >= 0
        occ = 0
        for k, (job, prio, count, *start) in enumerate(held):
            slots[v * K_slots + k] = (job, prio, count, 1, 1 << 62, start[0] if start else 0)
            occ |= 1 << k
        nodes[v, :6] = (0, 0, 1, free, min([h[1] for h in held], default=V.NO_JOB_PRIO), occ)
        leases[v] = (v, 0, 1, 1, 0, rec["expiry"], rec["prio"], 5_000_000 + v)
    return leases, nodes, slots, K_slots


@pytest.mark.parametrize("kernel", VALIDATORS, ids=IDS)
def test_validator_decides_what_the_sim_decided(recorded, kernel):
    case, cfg, run = recorded
    recs = run.core.leases
    want = np.array([_outcome(r) for r in recs])
    # Each outcome occurs, so the comparison below covers every branch of the rule.
    need = {V.ACCEPTED, V.ACCEPTED_PREEMPT, V.INSUFFICIENT_DEVICES}
    assert need <= set(want.tolist()), (case, np.unique(want))
    got = np.empty(len(recs), np.int64)
    pre_victims, lost = {}, {}
    for now in sorted({r["ta"] for r in recs}):  # one batch per validation instant
        idx = [k for k, r in enumerate(recs) if r["ta"] == now]
        leases, nodes, slots, Ks = _as_validator_rows([recs[k] for k in idx], case.startswith("micro"),
                                                      run.core.train_prio)
        out = np.zeros((len(idx), 2), np.int64)
        pre = np.zeros((len(slots) + len(idx), 5), np.int64)
        n_pre = kernel.validate_batch(leases, nodes, np.ones(1, np.uint8), 1, slots, Ks, int(now),
                                      cfg.preempt != "none", out, pre)
        got[idx] = out[:, 0]
        for job, start, v, count, _ in pre[:n_pre]:
            pre_victims.setdefault(idx[v], []).append(int(job))
            lost.setdefault(idx[v], 0)
            lost[idx[v]] += int(count) * V.lost_work_ns(int(now) + run.core.c_val_ns, int(start), run.core.ckpt_interval_ns)
    assert np.array_equal(got, want), np.flatnonzero(got != want)[:5]
    if not case.startswith("micro"):  # the validator's victim is the shard the simulator evicted, losing what it says
        for k, rec in enumerate(recs):
            evicted = [rec["lo"] + j for j in np.flatnonzero(rec["state_after"] != rec["state"])]
            assert pre_victims.get(k, []) == evicted, k
            assert rec["delta"][contract.K_LOST_NS] == lost.get(k, 0), k
        assert sum(lost.values()) > 0  # some evicted shard lost work: the check above is not vacuous


@pytest.mark.parametrize("kernel", VALIDATORS, ids=IDS)
def test_a_lease_at_its_expiry_is_expired_in_both(kernel):
    cfg, run = _recorded("at_expiry")
    recs = run.core.leases
    assert len(recs) > 50 and all(_outcome(r) == V.EXPIRED for r in recs)
    assert all(r["ta"] == r["expiry"] for r in recs)
    leases, nodes, slots, Ks = _as_validator_rows(recs[:1], False, run.core.train_prio)
    out = np.zeros((1, 2), np.int64)
    kernel.validate_batch(leases, nodes, np.ones(1, np.uint8), 1, slots, Ks, recs[0]["ta"], True, out,
                          np.zeros((len(slots) + 1, 5), np.int64))
    assert out[0, 0] == V.EXPIRED


@pytest.mark.parametrize("kernel", DISPATCHERS, ids=IDS)
def test_dispatcher_starts_when_the_sim_started(recorded, kernel):
    """An accepted lease starts at the dispatcher's next boundary; a micro-preemption pays the
    pause after it (C19, C20); a checkpointed device is handed on at the boundary after it frees."""
    case, cfg, run = recorded
    q = max(run.core.quantum_ns, 1)  # quantum 0: every ns is a boundary
    micro = run.core.micro_ns
    checked = 0
    for rec in run.core.leases:
        d = rec["delta"]
        if rec["start"] < 0 or checked >= 400:
            continue
        big = 10**15
        if d[contract.K_ACCEPT_MICRO]:  # a training kernel runs; the lease's request is more urgent
            res = kernel.run_dispatch(np.array([0, rec["tv"]]), np.array([big, 1]), np.array([1, 0]), 1, q,
                                      micro, 0, True, 2)
            got = int(res["start_ns"][1])
        else:
            ready = rec["tv"] + (rec["ckpt"] if d[contract.K_ACCEPT_CKPT] else 0)
            res = kernel.run_dispatch(np.array([ready]), np.array([1]), np.array([0]), 1, q, 0, 0, False, 1)
            got = int(res["start_ns"][0])
        assert got == rec["start"], (case, rec["r"])
        checked += 1
    assert checked >= 50


PLACERS = VALIDATORS


@pytest.mark.parametrize("kernel", PLACERS, ids=IDS)
def test_two_choices_pick_as_place_batch_picks(recorded, kernel):
    """Given the sim's two random picks and their room in its view, the regional layer's
    place_batch (policy 2, the picks as its draws) chooses the node the sim chose."""
    case, cfg, run = recorded
    pairs = np.array([p for p in run.core.pairs if p[2] >= 0], np.int64)
    assert len(pairs) > 50
    n = len(pairs)
    view_free = pairs[:, [1, 3]].reshape(-1).copy()  # request k's picks are virtual nodes 2k, 2k+1
    nodes = np.zeros((2 * n, V.NODE_COLS), np.int64)
    nodes[:, V.N_MEM] = 1
    draws = np.arange(2 * n, dtype=np.int32).reshape(n, 2)
    requests = np.tile(np.array([0, 1, 1, 0], np.int64), (n, 1))
    out = np.full(n, -2, np.int64)
    kernel.place_batch(view_free, nodes, np.ones(1, np.uint8), 1, requests, 2, draws,
                       np.zeros((n, 0), np.int64), out)
    chosen = np.where(out % 2 == 0, pairs[:, 0], pairs[:, 2])
    assert (out // 2 == np.arange(n)).all() and np.array_equal(chosen, pairs[:, 4])
    assert (pairs[:, 4] == pairs[:, 2]).any() and (pairs[:, 4] == pairs[:, 0]).any()


@pytest.mark.parametrize("kernel", HEDGERS, ids=IDS)
def test_hedging_plans_the_sim_hedges(recorded, kernel):
    case, cfg, run = recorded
    starts = np.array(run.core.starts, np.int64)
    assert len(starts) > 100
    plan = kernel.hedge_plan(starts[:, 0], starts[:, 1], run.core.hedge_milli)
    assert np.array_equal(plan, starts[:, 2])
    if run.core.hedge_milli:
        assert 0 < (plan >= 0).sum() < len(plan)  # some hedged, not all: both branches seen


@pytest.mark.skipif(not COMPILED, reason="compiled core not built")
@pytest.mark.parametrize("case", list(CASES))
def test_compiled_core_makes_the_recorded_decisions(case):
    cfg, rec = _recorded(case)
    comp = run_region(build_region(cfg, backend="compiled"))
    assert np.array_equal(comp.arrays["cnt"], rec.arrays["cnt"])
    assert np.array_equal(comp.arrays["start"], rec.arrays["start"])


@pytest.mark.parametrize("kernel", DISPATCHERS, ids=IDS)
def test_node_queues_serve_the_class_the_dispatcher_serves(recorded, kernel):
    """Each time a node's freed device took work from its queues, the class it served is the
    dispatcher's (most urgent non-empty class): by its rule and by its loop."""
    case, cfg, run = recorded
    pops = run.core.pops
    if case == "kill":
        assert not pops  # no node queue, no micro-preemption: nothing ever waits at a node
        return
    assert len(pops) >= 10, (case, len(pops))
    for p in pops:
        assert kernel.serve_class(p["qlen"]) == p["chosen"]
    contested = [p for p in pops if (p["qlen"] > 0).sum() > 1]
    assert contested or case == "checkpoint", case  # some pops chose between classes
    for p in (contested + pops)[:300]:  # the loop: one device busy until 10, the queued classes waiting
        ks = np.flatnonzero(p["qlen"] > 0)
        res = kernel.run_dispatch(np.array([0] + [1] * len(ks)), np.array([10] + [1] * len(ks)),
                                  np.concatenate([[0], ks]), 1, 1, 0, 0, False, len(p["qlen"]))
        assert ks[res["start_ns"][1:].tolist().index(10)] == p["chosen"]


@pytest.mark.parametrize("kernel", DISPATCHERS, ids=IDS)
def test_paused_copies_are_the_dispatchers_victims(recorded, kernel):
    """Each inference copy the simulator paused is the one the dispatcher pauses for the
    lease's class: the least urgent running class below it, the lowest device on a tie."""
    case, cfg, run = recorded
    pauses = run.core.pauses
    if not case.startswith("micro"):
        assert not pauses and not run.arrays["cnt"][contract.K_PAUSED]
        return
    assert len(pauses) > 20 and run.arrays["cnt"][contract.K_PAUSED] == len(pauses)
    for p in pauses:
        assert kernel.pause_choice(p["rank"], p["waiting"]) == p["slot"]
    ties = [p for p in pauses if (p["rank"] == p["rank"][p["slot"]]).sum() > 1]
    assert ties  # the lowest-index rule decided some
    n_cls = run.core.n_rank
    for p in (ties + pauses)[:300]:  # the loop: device d runs slot d's class (non-inference: class 0)
        dev = len(p["rank"])
        cls = np.concatenate([np.maximum(p["rank"], 0), [p["waiting"]]])
        res = kernel.run_dispatch(np.arange(dev + 1), np.full(dev + 1, 10**9), cls, dev, 1, 0, 0, True,
                                  n_cls, horizon_ns=dev)
        assert res["pauses"].tolist() == [int(d == p["slot"]) for d in range(dev)] + [0]


def test_an_urgent_request_overtakes_a_less_urgent_one_queued_before_it():
    """The node queues are per class: a queued request of a more urgent class starts before a
    less urgent one that was queued earlier at the same node (a single FIFO never does that)."""
    for case in ("queue",):
        cfg, run = _recorded(case)
        overtakes = [p for p in run.core.pops if not p["paused"]
                     and any(ready < p["ready"] and k > p["chosen"] and not paused for ready, k, paused in p["waiting"])]
        assert overtakes, case
        # ... and never the other way round: within a class, the earliest queued goes first
        for p in run.core.pops:
            assert not any(k == p["chosen"] and ready < p["ready"] and not paused and not p["paused"]
                           for ready, k, paused in p["waiting"])


def test_hedge_plan_checks_its_arguments():
    from magnum_lib.node.hedging import hedge_plan
    assert hedge_plan(np.array([5, 30]), np.array([10, 10]), 2000).tolist() == [-1, 20]
    assert hedge_plan(np.array([5, 30]), np.array([10, 10]), 0).tolist() == [-1, -1]
    for kernel in HEDGERS:
        with pytest.raises(TypeError, match="duration_ns"):
            kernel.hedge_plan(np.array([1.5]), np.array([1]), 1000)
        with pytest.raises(ValueError, match="expected_ns"):
            kernel.hedge_plan(np.array([1, 2]), np.array([1]), 1000)
        with pytest.raises(ValueError, match="expected_ns"):
            kernel.hedge_plan(np.array([1]), np.array([-1]), 1000)
        with pytest.raises(ValueError, match="factor_milli"):
            kernel.hedge_plan(np.array([1]), np.array([1]), -1)
        with pytest.raises(TypeError, match="factor_milli"):
            kernel.hedge_plan(np.array([1]), np.array([1]), True)
        assert kernel.hedge_plan(np.array([], np.int64), np.array([], np.int64), 1000).shape == (0,)


def test_lease_rule_twins_agree_with_the_validator_on_random_nodes():
    """cover_victims / is_victim (the rule's Python twins) pick the validator's victims."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        k = int(rng.integers(1, 9))
        prio = rng.integers(0, 4, k)
        live = rng.random(k) < 0.7
        count = rng.integers(1, 4, k)
        free, need, p = int(rng.integers(0, 3)), int(rng.integers(1, 8)), int(rng.integers(0, 5))
        last_s, last_p = V.cover_victims(lambda s: live[s], lambda s: prio[s], lambda s: count[s], 0, k, free, need, p)  # noqa: B023
        cand = sorted((int(prio[s]), s) for s in range(k) if live[s] and prio[s] < p)
        gained, chosen = free, []
        for _ps, s in cand:  # the readable form: lowest priorities first until enough is free
            if gained >= need:
                break
            chosen.append(s)
            gained += int(count[s])
        if gained < need:
            assert last_s == -1
            continue
        assert last_s == (chosen[-1] if chosen else -1)
        if chosen:
            assert sorted(s for s in range(k) if V.is_victim(lambda s: live[s], lambda s: prio[s], s, p, last_p, last_s)) \
                == sorted(chosen)  # noqa: B023


def test_every_hedge_copy_goes_where_the_node_layer_lets_it(recorded):
    """Another replica of the primary's type, with a free device when the copy starts (takes_copy)."""
    case, cfg, run = recorded
    from magnum_lib.node.hedge_rule_ref import takes_copy
    copies = run.core.copies
    if cfg.hedge_factor > 0:
        assert copies  # the case hedges: the check below is not vacuous
    assert all(takes_copy(i, primary, free) for i, primary, free in copies)
    arrays = run.core.arrays
    assert all(arrays["node_type"][i] == arrays["node_type"][p] for i, p, _ in copies)
