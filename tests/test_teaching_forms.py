"""The short teaching forms the notebooks show agree with the kernels (both backends).

validator_simple (notebook 03), dispatcher_simple and balance_simple (notebook 04): seeded
random small inputs through the readable form, the packed Python reference and the compiled
kernel, the same answers demanded.
"""
from __future__ import annotations

import importlib
import inspect
from types import SimpleNamespace

import numpy as np
import pytest

from magnum_lib.node import balance_ref, balance_simple, dispatcher_ref, dispatcher_simple
from magnum_lib.regional import validator_ref, validator_simple
from magnum_lib.regional.validator import REASONS, NodeState


def _backends(compiled: str, ref):
    mods = [pytest.param(ref, id="python")]
    try:
        mods.append(pytest.param(importlib.import_module(compiled), id="compiled"))
    except ImportError:  # not built: the compiled parity is skipped, the reference still runs
        mods.append(pytest.param(None, id="compiled", marks=pytest.mark.skip("extension not built")))
    return mods


@pytest.mark.parametrize("form", [validator_simple.validate, dispatcher_simple.dispatch, balance_simple.power_of_d])
def test_teaching_forms_are_short(form):
    body = [l for l in inspect.getsource(form).splitlines() if l.strip() and not l.strip().startswith("#")]
    assert len(body) <= 35, f"{form.__qualname__}: {len(body)} lines is no longer a teaching form"


# -- validator --------------------------------------------------------------------------------
def _simple_nodes(state: NodeState):
    return [validator_simple.Node(int(row[validator_ref.N_TYPE]), int(row[validator_ref.N_IC]),
                                  int(row[validator_ref.N_MEM]), int(d), [None] * state.K)
            for row, d in zip(state.nodes, state.node_devices, strict=True)]


def _run_validator(module, seed):
    """Seeded batches of leases through the kernel ``module`` and the teaching form; return the reasons met."""
    rng = np.random.default_rng(seed)
    kinds = ["h100_sxm", "a100_sxm", "mi300x"]
    state = NodeState([kinds[k] for k in rng.integers(0, 3, 5)], devices=rng.integers(1, 9, 5).tolist())
    nodes = _simple_nodes(state)
    n_ic = len(state.ic_names)
    ok = lambda node_ic, lease_ic: bool(state.ic_ok[node_ic * n_ic + lease_ic])  # noqa: E731
    now, seen = 1_000, set()
    for batch in range(16):
        r = int(rng.integers(1, 6))
        node = rng.integers(0, 5, r)
        mostly = lambda right, wrong: np.where(rng.random(r) < 0.85, right, wrong)  # noqa: B023, E731
        cols = dict(node=node, type=mostly(state.node_type[node], rng.integers(0, len(state.type_keys), r)),
                    count=rng.integers(1, 9, r), mem=mostly(10**9, rng.choice([40 * 10**9, 200 * 10**9], r)),
                    ic=mostly(state.node_ic[node], rng.integers(0, n_ic, r)),
                    expiry=now + mostly(10**6, rng.integers(-50, 50, r)),
                    prio=rng.integers(0, 4, r), job=np.arange(batch * 10, batch * 10 + r))
        preempt = bool(batch % 4)
        out = state.validate_arrays(cols["node"], cols["type"], cols["count"], cols["mem"], cols["ic"],
                                    cols["expiry"], cols["prio"], cols["job"], now, preempt=preempt, module=module)
        for k in range(r):
            lease = SimpleNamespace(**{c: int(v[k]) for c, v in cols.items()})
            reason, slot, victims = validator_simple.validate(nodes[lease.node], lease, now, ok, preempt=preempt)
            assert reason == REASONS[int(out["code"][k])], (seed, batch, k)
            seen.add(reason)
            if reason.startswith("accepted"):
                assert slot == int(out["slot"][k]) - lease.node * state.K
            mine = [(v.job, v.count) for v in victims]
            theirs = [(int(j), int(c)) for j, c, by in zip(out["pre_job"], out["pre_count"], out["pre_by"], strict=True) if by == k]
            assert mine == theirs, (seed, batch, k)
        now += 100
    return seen


@pytest.mark.parametrize("module", _backends("magnum_lib.regional._validator", validator_ref))
@pytest.mark.parametrize("seed", range(6))
def test_validator_simple_agrees_with_the_kernel(module, seed):
    assert "accepted" in _run_validator(module, seed)


def test_the_seeded_leases_meet_every_rule():
    seen = set().union(*(_run_validator(validator_ref, s) for s in range(6)))
    assert seen == set(REASONS) - {"unknown_node", "released"}, seen


def test_validator_simple_preempts_the_lowest_priority():
    state = NodeState.uniform(1, "h100_sxm", 8)
    node = _simple_nodes(state)[0]
    ok = lambda a, b: bool(state.ic_ok[a * len(state.ic_names) + b])  # noqa: E731
    low = SimpleNamespace(node=0, type=0, count=8, mem=10**9, ic=int(state.node_ic[0]), expiry=10**6, prio=0, job=1)
    high = SimpleNamespace(**{**vars(low), "prio": 5, "job": 2, "count": 4})
    assert validator_simple.validate(node, low, 0, ok)[0] == "accepted"
    reason, slot, victims = validator_simple.validate(node, high, 0, ok)
    assert reason == "accepted_after_preemption" and [v.job for v in victims] == [1] and slot == 0
    assert validator_simple.validate(node, SimpleNamespace(**{**vars(low), "prio": 5}), 0, ok)[0] == "insufficient_devices"
    assert validator_simple.validate(node, SimpleNamespace(**{**vars(low), "expiry": 0}), 0, ok)[0] == "expired"


# -- dispatcher -------------------------------------------------------------------------------
@pytest.mark.parametrize("module", _backends("magnum_lib.node._dispatcher", dispatcher_ref))
@pytest.mark.parametrize("seed", range(8))
def test_dispatcher_simple_agrees_with_the_kernel(module, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 40))
    arrival = np.sort(rng.integers(0, 20_000, n)).astype(np.int64)
    work = rng.integers(1, 6_000, n).astype(np.int64)
    prio = rng.integers(0, 3, n).astype(np.int64)
    devices, quantum = int(rng.integers(1, 4)), int(rng.choice([250, 1_000]))
    pause, resume, preempt = int(rng.integers(0, 300)), int(rng.integers(0, 300)), bool(seed % 4)
    kernel = module.run_dispatch(arrival, work, prio, devices, quantum, pause, resume, preempt, 3, -1, False)
    simple = dispatcher_simple.dispatch(list(zip(arrival.tolist(), work.tolist(), prio.tolist(), strict=True)),
                                        devices, quantum, pause, resume, preempt)
    assert simple == kernel["finish_ns"].tolist()
    if preempt and seed == 1:
        assert kernel["preemptions"] >= 0


def test_dispatcher_simple_preempts():
    # One device: a long batch item, then an urgent one; the urgent one must not wait for it.
    finish = dispatcher_simple.dispatch([(0, 10_000, 1), (100, 500, 0)], 1, 250, 50, 50, preempt=True)
    # at 250 the batch item is paused (250 ns done), the urgent one runs 300..800; at the 1,000 ns
    # boundary the batch item resumes (50 ns) and needs its last 9,750 ns.
    assert finish[1] == 250 + 50 + 500 and finish[0] == 1_000 + 50 + 9_750
    assert dispatcher_simple.dispatch([(0, 10_000, 1), (100, 500, 0)], 1, 250, 50, 50, preempt=False)[1] == 10_500


# -- power of d -------------------------------------------------------------------------------
@pytest.mark.parametrize("module", _backends("magnum_lib.node._balance", balance_ref))
@pytest.mark.parametrize("seed,servers,choices", [(0, 10, 1), (1, 10, 2), (2, 50, 3), (3, 7, 7), (4, 100, 2)])
def test_power_of_d_simple_agrees_with_the_kernel(module, seed, servers, choices):
    loads = np.zeros(servers, dtype=np.int64)
    module.place_power_of_d(loads, 500, choices, seed)
    assert balance_simple.power_of_d([0] * servers, 500, choices, seed) == loads.tolist()
