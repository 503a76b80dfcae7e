"""The whole-system simulator: parity of the two cores, invariants, bad input."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magnum_lib.base.validate import ParameterError
from magnum_lib.sim import EVOLUTION, contract, make_config, simulate
from magnum_lib.sim.model import build_region, core_module, run_region
from magnum_lib.sim.run import run_config

try:
    core_module("compiled")
    HAVE_COMPILED = True
except ImportError:  # pragma: no cover - the reference-only install
    HAVE_COMPILED = False
needs_compiled = pytest.mark.skipif(not HAVE_COMPILED, reason="compiled core not built")


def _arrays(cfg, backend):
    _, runs = run_config(cfg, backend=backend, keep=True)
    return runs[0]


@needs_compiled
@pytest.mark.parametrize("preset", EVOLUTION)
def test_backends_agree_exactly(preset):
    cfg = make_config(preset, duration_s=0.08, seed=5)
    a, b = _arrays(cfg, "python"), _arrays(cfg, "compiled")
    for name in a.arrays:
        assert np.array_equal(a.arrays[name], b.arrays[name]), name


@needs_compiled
def test_backends_agree_over_seconds_with_events_far_ahead():
    """Over 2.5 s the compiled core's event calendar (~1 ms buckets, ~1.07 s ahead) wraps
    twice, and a wide service spread puts finishes beyond it (they go to its heap): the
    order of events, and so every array, stays the reference's."""
    cfg = make_config("magnum_v2", duration_s=2.5, load=0.3, seed=9, service_cv=4.0, burst_factor=3.0, hedge_factor=0.0)
    a, b = _arrays(cfg, "python"), _arrays(cfg, "compiled")
    assert (a.arrays["finish"] - a.arrays["start"]).max() > 1.2e9  # some finish beyond the calendar
    for name in a.arrays:
        assert np.array_equal(a.arrays[name], b.arrays[name]), name


@needs_compiled
@pytest.mark.parametrize("knobs", [
    dict(partition_start_s=0.02, partition_s=0.03, partition_fraction=0.5),
    dict(partition_start_s=0.02, partition_s=0.03, partition_fraction=0.5, partition_leases=True,
         lease_timeout_s=0.01),
    dict(policy="hash", ring_vnodes=4, node_queue=3, view="fresh"),
    dict(policy="random", view="round", schedulers=3, preempt="checkpoint", quantum_s=1e-4),
    dict(policy="scan", load=1.3, max_attempts=3, hedge_factor=1.2, service="exp"),
    dict(policy="hints", planner_interval_s=0.02, hint_jobs=4),
])
def test_backends_agree_on_every_mechanism(knobs):
    cfg = make_config("magnum_v2", duration_s=0.06, seed=2, **knobs)
    a, b = _arrays(cfg, "python"), _arrays(cfg, "compiled")
    for name in a.arrays:
        assert np.array_equal(a.arrays[name], b.arrays[name]), name


@needs_compiled
@pytest.mark.parametrize("knobs", [dict(hedge_factor=1.1, node_queue=2), dict(quantum_s=2e-3, micro_resume_s=1e-4)])
def test_backends_agree_on_paused_inference(knobs):
    """Micro-preemption of inference copies (the dispatcher's pause rule): pauses, resumes after
    the resume cost, paused hedge losers withdrawn from their queue, long quanta: same arrays."""
    cfg = make_config("magnum_v2", duration_s=0.3, load=1.3, seed=5, **knobs)
    a, b = _arrays(cfg, "python"), _arrays(cfg, "compiled")
    cnt, paused_now = a.arrays["cnt"], int((a.arrays["cstate"] == contract.CS_PAUSED).sum())
    assert cnt[contract.K_PAUSED] > 100 and cnt[contract.K_UNPAUSED] > 100
    if knobs.get("hedge_factor"):  # a pause ends in a resume, a withdrawal, or is still waiting
        assert cnt[contract.K_PAUSED] - cnt[contract.K_UNPAUSED] - paused_now > 0
    for name in a.arrays:
        assert np.array_equal(a.arrays[name], b.arrays[name]), name


@pytest.mark.parametrize("backend", ["python", "compiled"] if HAVE_COMPILED else ["python"])
def test_paused_work_is_neither_lost_nor_done_twice(backend):
    """Work in = work done: drained, without hedges, the device time of every run (pauses cut
    runs in pieces) adds up to exactly the service time of every request, paused ones included."""
    cfg = make_config("magnum_v2", duration_s=0.1, load=1.3, seed=7, hedge_factor=0.0)
    run = build_region(cfg, backend=backend)
    run_region(run)
    run.core.advance(int(60e9))
    arrays = run.arrays
    assert arrays["cnt"][contract.K_PAUSED] > 20 and (arrays["status"] == contract.ST_DONE).all()
    T = int(run.params[contract.PARAMS.index("n_types")])
    base = arrays["service"][arrays["cls"].astype(np.int64) * T + arrays["node_type"][arrays["cnode"][0::2]]]
    dur = (base * arrays["noise"].astype(np.float64)).astype(np.int64) + arrays["cls_setup"][arrays["cls"]] + 1
    assert int(arrays["busy_type"].sum()) == int(dur.sum())


def test_planner_hints_steer_placements():
    """With policy "hints" (magnum_v2) the planner's chosen nodes (replanned every 10 ms, sized
    to each class's demand) get far more than their share of the placements; the hints are
    nodes of types meeting each class's SLA (the cost model)."""
    cfg = make_config("magnum_v2", "region", duration_s=0.05, seed=1, load=0.3,
                      planner_interval_s=0.01, digest_interval_s=0.01)
    run = run_region(build_region(cfg))
    arrays = run.arrays
    off = arrays["hint_off"]
    hints = [set(arrays["hint_nodes"][off[c]:off[c + 1]].tolist()) for c in range(len(cfg.classes))]
    assert sum(map(len, hints)) > 0
    for c, h in enumerate(hints):  # v2's planner asks for the types meeting the class's SLA
        sla_types = {t for t in range(len(run.type_keys)) if run.times[c, t] <= cfg.classes[c].sla_s}
        assert all(arrays["node_type"][i] in sla_types for i in h)
    placed = np.flatnonzero(arrays["node"] >= 0)[-2000:]
    on_hint = np.array([arrays["node"][r] in hints[arrays["cls"][r]] for r in placed])
    share = np.mean([len(hints[arrays["cls"][r]]) / len(arrays["node_dev"]) for r in placed])
    assert on_hint.mean() > 3 * share


def test_same_seed_same_result_other_seed_differs():
    a = simulate("magnum_v2", duration_s=0.05, seed=1)
    b = simulate("magnum_v2", duration_s=0.05, seed=1)
    c = simulate("magnum_v2", duration_s=0.05, seed=2)
    for r in (a, b, c):
        r.pop("wall_s"), r.pop("requests_per_wall_s")
    assert a == b
    assert a != c


def _check_invariants(run, drained):
    arrays = run.arrays
    dev, busy = arrays["node_dev"], arrays["run"] + arrays["train"] + arrays["hold"]
    # No device held by two jobs: what runs on a node never exceeds its devices, and the
    # running copies recorded per node are exactly the node's count.
    assert (busy <= dev).all() and (arrays["run"] >= 0).all() and (arrays["train"] >= 0).all()
    live = arrays["cstate"] == 1
    assert np.array_equal(np.bincount(arrays["cnode"][live], minlength=len(dev)), arrays["run"])
    assert (arrays["qlen"] >= 0).all()
    # The node's class queues hold qlen copies; a paused copy waits in one (at its node), and
    # the device slots hold exactly the running copies.
    n_rank = int(run.params[contract.PARAMS.index("n_rank")])
    assert np.array_equal(arrays["nq_len"].reshape(-1, n_rank).sum(axis=1), arrays["qlen"])
    paused = arrays["cstate"] == contract.CS_PAUSED
    assert (np.bincount(arrays["cnode"][paused], minlength=len(dev)) <= arrays["qlen"]).all()
    assert (arrays["cend"][paused] > 0).all()  # a paused copy still owes work
    assert sorted(arrays["slot_copy"][arrays["slot_copy"] >= 0].tolist()) == np.flatnonzero(live).tolist()
    # Every request is done, dropped (with a reason) or in flight.
    status = arrays["status"]
    n = len(status)
    cnt = arrays["cnt"]
    assert cnt[contract.K_PAUSED] >= cnt[contract.K_UNPAUSED] + paused.sum()  # paused: resumed, waiting, or withdrawn
    assert int(cnt[contract.K_DONE]) == int((status == contract.ST_DONE).sum())
    assert int(cnt[contract.K_DROPPED]) == int((status == contract.ST_DROP).sum())
    assert ((status >= 0) & (status <= 3)).all() and n == np.isin(status, [0, 1, 2, 3]).sum()
    # The parts of decision latency add up to it exactly.
    started = arrays["start"] >= 0
    assert np.array_equal(arrays["comp"][started].sum(axis=1), (arrays["start"] - arrays["arr"])[started])
    assert (arrays["comp"] >= 0).all()
    # Leases: every one handled at the node is accepted (maybe preempting/queued) or refused.
    handled = cnt[contract.K_ACCEPT] + cnt[contract.K_ACCEPT_MICRO] + cnt[contract.K_ACCEPT_CKPT] + cnt[contract.K_REFUSED] + cnt[contract.K_EXPIRED]
    assert handled <= cnt[contract.K_LEASES]
    # Preempted training is resumed or still waiting (its lost work is counted).
    waiting = int((arrays["shard_state"] == 1).sum())
    assert cnt[contract.K_EVICT] == cnt[contract.K_RESUMED] + waiting
    if drained:
        assert handled == cnt[contract.K_LEASES]
        assert int(((status == contract.ST_DONE) | (status == contract.ST_DROP)).sum()) == n
        assert (arrays["run"] == 0).all() and (arrays["qlen"] == 0).all() and (arrays["hold"] == 0).all()
        assert waiting == 0
        assert not (arrays["cstate"] == contract.CS_PAUSED).any() and (arrays["slot_copy"] == -1).all()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(preset=st.sampled_from(EVOLUTION), load=st.floats(0.1, 1.5), seed=st.integers(0, 10**6),
       rtt=st.sampled_from([0.0, 1e-4, 2e-3]), schedulers=st.integers(1, 4),
       view=st.sampled_from(["fresh", "round", "gossip"]), preempt=st.sampled_from(["none", "kill", "checkpoint", "micro"]),
       node_queue=st.integers(0, 3), hedge=st.sampled_from([0.0, 1.1, 2.0]), attempts=st.integers(1, 6),
       quantum=st.sampled_from([0.0, 2.5e-4]))
def test_invariants_hold_and_a_drained_run_accounts_for_everything(preset, load, seed, rtt, schedulers, view,
                                                                   preempt, node_queue, hedge, attempts, quantum):
    scope = {} if preset.startswith("borg") else {"schedulers": schedulers}
    cfg = make_config(preset, duration_s=0.03, load=load, seed=seed, rtt_s=rtt, view=view, preempt=preempt,
                      node_queue=node_queue, hedge_factor=hedge, max_attempts=attempts, quantum_s=quantum,
                      checkpoint_bandwidth=1e12, **scope)
    run = run_region(build_region(cfg))
    _check_invariants(run, drained=False)
    run.core.advance(int(60e9))  # no new arrivals: every request ends, every lease is answered
    _check_invariants(run, drained=True)


def test_littles_law_on_the_devices():
    """Time-average running copies (sampled from the core's state) = throughput x device time."""
    cfg = make_config("magnum_v2", duration_s=2.0, seed=3, digest_interval_s=0.002)
    run = run_region(build_region(cfg))
    arrays = run.arrays
    horizon = int(2.0e9)
    # Device time of the copies that ended is in busy_type; the running ones add (horizon - start).
    area = arrays["busy_type"].sum() + (horizon - arrays["cstart"][arrays["cstate"] == 1]).sum()
    L_state = np.mean(run.running)
    L_area = area / horizon
    assert abs(L_state - L_area) / L_area < 0.03


def test_summary_keys_and_trace():
    r = simulate("magnum_v2", duration_s=0.05, seed=0)
    for k in ("decision_latency_ms", "sla_attainment", "utilization", "lease_failure_rate", "preemptions",
              "hedges", "energy_j", "requests", "events", "wall_s", "sim_s"):
        assert k in r
    d = r["decision_latency_ms"]
    assert d["p50"] <= d["p95"] <= d["p99"] <= d["p999"]
    assert set(d["breakdown"]) == {"round_wait", "scheduling", "rtt", "validation", "retries", "dispatch_wait"}
    ev = [e["event"] for e in r["trace"]["events"]]
    assert ev[0] == "arrive" and "start" in ev
    times = [e["t_ms"] for e in r["trace"]["events"]]
    assert times == sorted(times)
    req = r["requests"]
    assert req["total"] == req["done"] + req["dropped"] + req["in_flight"]


@pytest.mark.parametrize("kw, name", [
    (dict(load=-1), "load"), (dict(load=0, rate=0), "load"), (dict(round_s=0), "round_s"),
    (dict(policy="best"), "policy"), (dict(view="psychic"), "view"), (dict(schedulers=0), "schedulers"),
    (dict(seed=-1), "seed"), (dict(seed=1.5), "seed"), (dict(hetero_aware=1), "hetero_aware"),
    (dict(duration_s=float("nan")), "duration_s"), (dict(gossip_loss=1.0), "gossip_loss"),
    (dict(nodes_per_cell=10**6, cells_per_region=4), "nodes_per_cell"), (dict(bogus=1), "bogus"),
    (dict(scope="cell", schedulers=3), "schedulers"),
])
def test_bad_knobs_name_themselves(kw, name):
    with pytest.raises(ParameterError) as e:
        make_config("magnum_v2", **kw)
    assert e.value.name == name
    assert len(str(e.value)) < 200


def test_bad_presets():
    with pytest.raises(ParameterError):
        make_config("borg_9000")
    with pytest.raises(ParameterError):
        make_config("magnum_v2", cluster="galaxy")


def _cls(**kw):
    from magnum_lib.sim.config import RequestClass
    base = dict(flops=1e12, bytes_moved=1e9, sla_s=0.1, priority=1, share=1.0)
    return RequestClass("x", **{**base, **kw})


@pytest.mark.parametrize("kw, name", [
    (dict(flops=0, bytes_moved=0), "flops"), (dict(priority=2**70), "priority"), (dict(priority=0), "priority"),
    (dict(priority=1.5), "priority"), (dict(sla_s=-0.1), "sla_s"), (dict(sla_s=0), "sla_s"),
    (dict(flops=float("nan")), "flops"), (dict(efficiency=0), "efficiency"), (dict(share=-1), "share"),
])
def test_bad_request_class_names_the_field(kw, name):
    with pytest.raises(ParameterError) as e:
        _cls(**kw)
    assert e.value.name == name and "request class 'x'" in str(e.value)


def test_request_class_edge_values_still_work():
    from magnum_lib.sim.config import MAX_PRIORITY
    assert _cls(flops=0, priority=MAX_PRIORITY).priority == MAX_PRIORITY  # memory-bound only
    assert _cls(bytes_moved=0, sla_s=1e-9).sla_s == 1e-9                  # compute-bound only
    cfg = make_config("magnum_v2", classes=(_cls(bytes_moved=0),), duration_s=0.01)
    assert cfg.classes[0].bytes_moved == 0


@pytest.mark.parametrize("backend", ["gpu", "Compiled", "", 1])
def test_unknown_backend_is_refused_with_the_accepted_values(backend):
    for call in (lambda: simulate(backend=backend, duration_s=0.01), lambda: core_module(backend),
                 lambda: run_config(make_config(duration_s=0.01), backend=backend)):
        with pytest.raises(ParameterError) as e:
            call()
        assert e.value.name == "backend" and "compiled, python" in str(e.value)


@pytest.mark.parametrize("backend", ["compiled", "python", None])
def test_known_backends_are_accepted(backend):
    if backend == "compiled":
        pytest.importorskip("magnum_lib.sim._core")
    assert core_module(backend).Core is not None
