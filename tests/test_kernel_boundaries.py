"""Every compiled kernel Python can reach answers bad input with a clean ValueError/TypeError.

The nogil cores run without bounds checks, so a bad argument that reached one could write
out of bounds and crash the interpreter. Each case below calls a kernel's ``def`` wrapper
with one bad argument (a short output array, an index out of range, a wrong dtype, a
negative size, m = 0, aliased outputs, ...) in a child interpreter: a segfault fails that
case instead of killing pytest. Each kernel also has a valid baseline call that must
succeed, so the bad cases cannot pass by failing on something else. The pure-Python
references are held to the same contract (same exception type).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

MODULES = {
    "packing": ("magnum_lib.graph._packing", "magnum_lib.graph.packing_ref"),
    "queue": ("magnum_lib.engine._queue", "magnum_lib.engine.queue_ref"),
    "heap": ("magnum_lib.engine._heap", "magnum_lib.engine.heap_ref"),
    "balance": ("magnum_lib.node._balance", "magnum_lib.node.balance_ref"),
    "dispatcher": ("magnum_lib.node._dispatcher", "magnum_lib.node.dispatcher_ref"),
    "hedge_rule": ("magnum_lib.node._hedge_rule", "magnum_lib.node.hedge_rule_ref"),
    "ring": ("magnum_lib.node._ring", "magnum_lib.node.ring_ref"),
    "validator": ("magnum_lib.regional._validator", "magnum_lib.regional.validator_ref"),
    "contention": ("magnum_lib.regional._contention", "magnum_lib.regional.contention_ref"),
}

# ---------------------------------------------------------------- valid baselines
# Each returns the keyword arguments of one valid call; a case changes one of them.

I64, I32 = np.int64, np.int32


def pack_args(**change):
    a = dict(arrival=np.array([0, 0], I64), reserve=np.array([1, 1], I64),
             layer_ptr=np.array([0, 2, 3], I64), runtime=np.array([5, 5, 5], I64),
             xfer=np.array([0, 3, 0], I64), link=np.array([-1, 0, -1], I64), n_links=1, capacity=10,
             max_resident=2, window=2, switch_ns=0)
    a.update(change)
    return a


def fifo_args(**change):
    a = dict(interarrival_ns=np.array([5, 5, 5], I64), service_ns=np.array([3, 3, 3], I64), servers=2)
    a.update(change)
    return a


def market_args(**change):
    a = dict(servers=8, load=0.5, policy=1, choices=2, tasks=1, refresh_ns=1000, jobs=50, warmup=5, seed=1)
    a.update(change)
    return list(a.values())


def dispatch_args(**change):
    a = dict(arrival_ns=np.array([0, 10, 20], I64), work_ns=np.array([100, 50, 50], I64),
             priority=np.array([1, 0, 0], I64), devices=1, quantum_ns=10, pause_ns=1, resume_ns=1,
             preempt=True, n_classes=2, horizon_ns=-1, audit=True)
    a.update(change)
    return a


NO_JOB = 1 << 62


def validate_args(**change):
    nodes = np.zeros((2, 8), I64)
    nodes[:, 2], nodes[:, 3], nodes[:, 4] = 100, 4, NO_JOB  # memory, free devices, lowest priority
    slots = np.zeros((8, 6), I64)
    slots[:, 0] = -1  # every slot empty
    a = dict(leases=np.array([[0, 0, 1, 1, 0, 10**12, 0, 0]], I64), nodes=nodes, ic_ok=np.ones(1, np.uint8),
             n_ic=1, slots=slots, K=4, now=1, preempt=True, out=np.zeros((1, 2), I64),
             pre=np.zeros((4, 5), I64))
    a.update(change)
    return list(a.values())


def place_args(**change):
    nodes = np.zeros((2, 8), I64)
    nodes[:, 2], nodes[:, 3] = 100, 4
    a = dict(view_free=np.array([4, 4], I64), nodes=nodes, ic_ok=np.ones(1, np.uint8), n_ic=1,
             requests=np.array([[0, 1, 1, 0]], I64), policy=2, draws=np.array([[0, 1]], I32),
             hints=np.zeros((1, 0), I64), out_node=np.zeros(1, I64))
    a.update(change)
    return list(a.values())


def contention_args(**change):
    a = dict(view_occ=np.array([0, 1, 2, 0], I32), feas=np.array([0, 1, 3], I64), ll_node=0, S=2, policy=2,
             p_stale=np.zeros(2), u_stale=np.ones((2, 3)), redraw_occ=np.zeros((2, 3), I32),
             pick1=np.zeros((2, 3), I32), pick2=np.ones((2, 3), I32), new_prio=np.zeros((2, 3), I32),
             old_prio=np.zeros((2, 3, 2), I32), t_node=np.zeros(3, I64), t_occ=np.zeros(3, I32),
             t_prio=np.zeros(6, I32))
    a.update(change)
    return list(a.values())


def _nodes(col, value):
    nodes = validate_args()[1].copy()
    nodes[0, col] = value
    return nodes


def _slots_occupied(count):
    slots = validate_args()[4].copy()
    slots[0] = (7, 0, count, 1, 10**12, 0)  # slot 0 of node 0 holds job 7
    return slots


def _readonly(a):
    a = a.copy()
    a.flags.writeable = False
    return a


# ---------------------------------------------------------------- the cases
# (kernel, id, code): ``code`` is evaluated in the child with ``m`` = the kernel module;
# "baseline" cases must succeed, all others must raise ValueError or TypeError.

CASES = [
    ("packing", "baseline", "m.pack_kernel(**pack_args())"),
    ("packing", "layer_ptr-past-layers", "m.pack_kernel(**pack_args(layer_ptr=np.array([0, 2, 99], I64)))"),
    ("packing", "layer_ptr-decreasing", "m.pack_kernel(**pack_args(layer_ptr=np.array([0, 3, 2], I64)))"),
    ("packing", "layer_ptr-negative", "m.pack_kernel(**pack_args(layer_ptr=np.array([0, -1, 3], I64)))"),
    ("packing", "layer_ptr-short", "m.pack_kernel(**pack_args(layer_ptr=np.array([0, 3], I64)))"),
    ("packing", "runtime-short", "m.pack_kernel(**pack_args(runtime=np.array([5, 5], I64)))"),
    ("packing", "xfer-short", "m.pack_kernel(**pack_args(xfer=np.array([0], I64)))"),
    ("packing", "link-out-of-range", "m.pack_kernel(**pack_args(link=np.array([-1, 5, -1], I64)))"),
    ("packing", "link-missing-for-transfer", "m.pack_kernel(**pack_args(link=np.array([-1, -1, -1], I64)))"),
    ("packing", "n_links-zero", "m.pack_kernel(**pack_args(n_links=0))"),
    ("packing", "n_links-negative", "m.pack_kernel(**pack_args(n_links=-3))"),
    ("packing", "runtime-float", "m.pack_kernel(**pack_args(runtime=np.array([5.5, 5, 5])))"),
    ("packing", "runtime-nan", "m.pack_kernel(**pack_args(runtime=np.array([np.nan, 5, 5])))"),
    ("packing", "runtime-2^62", "m.pack_kernel(**pack_args(runtime=np.array([2**62, 5, 5], I64)))"),
    ("packing", "runtime-zero", "m.pack_kernel(**pack_args(runtime=np.array([0, 5, 5], I64)))"),
    ("packing", "no-jobs-m0", "m.pack_kernel(**pack_args(arrival=np.zeros(0, I64), reserve=np.zeros(0, I64),"
                              " layer_ptr=np.zeros(1, I64), runtime=np.zeros(0, I64), xfer=np.zeros(0, I64),"
                              " link=np.zeros(0, I64)))"),
    ("packing", "reserve-over-capacity", "m.pack_kernel(**pack_args(reserve=np.array([1, 11], I64)))"),
    ("packing", "capacity-huge", "m.pack_kernel(**pack_args(capacity=2**70))"),
    ("packing", "max_resident-zero", "m.pack_kernel(**pack_args(max_resident=0))"),
    ("packing", "window-negative", "m.pack_kernel(**pack_args(window=-1))"),
    ("packing", "switch-negative", "m.pack_kernel(**pack_args(switch_ns=-5))"),
    ("packing", "arrival-2d", "m.pack_kernel(**pack_args(arrival=np.zeros((2, 1), I64)))"),
    ("packing", "arrival-none", "m.pack_kernel(**pack_args(arrival=None))"),
    ("packing", "uint64-overflowing", "m.pack_kernel(**pack_args(runtime=np.array([2**63, 5, 5], np.uint64)))"),

    ("queue", "baseline", "m.simulate_fifo(**fifo_args())"),
    ("queue", "service-short", "m.simulate_fifo(**fifo_args(service_ns=np.array([3, 3], I64)))"),
    ("queue", "no-jobs-m0", "m.simulate_fifo(**fifo_args(interarrival_ns=np.zeros(0, I64), service_ns=np.zeros(0, I64)))"),
    ("queue", "servers-zero", "m.simulate_fifo(**fifo_args(servers=0))"),
    ("queue", "servers-negative", "m.simulate_fifo(**fifo_args(servers=-4))"),
    ("queue", "servers-2^40", "m.simulate_fifo(**fifo_args(servers=2**40))"),
    ("queue", "servers-2^70", "m.simulate_fifo(**fifo_args(servers=2**70))"),
    ("queue", "servers-float", "m.simulate_fifo(**fifo_args(servers=2.5))"),
    ("queue", "times-float", "m.simulate_fifo(**fifo_args(service_ns=np.array([3.0, 3, 3])))"),
    ("queue", "times-negative", "m.simulate_fifo(**fifo_args(service_ns=np.array([3, -3, 3], I64)))"),
    ("queue", "times-none", "m.simulate_fifo(**fifo_args(service_ns=None))"),
    ("queue", "horizon-overflow", "m.simulate_fifo(**fifo_args(service_ns=np.full(3, 2**62, I64)))"),

    ("heap", "baseline", "h = m.EventHeap(4); h.push(5, 1); assert h.pop() == (5, 1)"),
    ("heap", "capacity-2^62", "m.EventHeap(2**62)"),
    ("heap", "capacity-2^70", "m.EventHeap(2**70)"),
    ("heap", "capacity-float", "m.EventHeap(1.5)"),
    ("heap", "capacity-none", "m.EventHeap(None)"),
    ("heap", "time-float", "m.EventHeap(4).push(1.5)"),

    ("balance", "baseline", "m.simulate_supermarket(*market_args())"),
    ("balance", "baseline-place", "m.place_power_of_d(np.zeros(8, I64), 100, 2, 3)"),
    ("balance", "servers-zero", "m.simulate_supermarket(*market_args(servers=0))"),
    ("balance", "servers-2^70", "m.simulate_supermarket(*market_args(servers=2**70))"),
    ("balance", "choices-over-servers", "m.simulate_supermarket(*market_args(choices=9))"),
    ("balance", "jobs-x-tasks-wraps", "m.simulate_supermarket(*market_args(servers=2**31 - 1, policy=0, choices=1,"
                                      " tasks=2**31, jobs=2**33))"),
    ("balance", "jobs-negative", "m.simulate_supermarket(*market_args(jobs=-5))"),
    ("balance", "warmup-past-jobs", "m.simulate_supermarket(*market_args(warmup=50))"),
    ("balance", "load-nan", "m.simulate_supermarket(*market_args(load=float('nan')))"),
    ("balance", "load-over-1", "m.simulate_supermarket(*market_args(load=1.5))"),
    ("balance", "policy-unknown", "m.simulate_supermarket(*market_args(policy=7))"),
    ("balance", "stale-refresh-zero", "m.simulate_supermarket(*market_args(policy=2, refresh_ns=0))"),
    ("balance", "tasks-float", "m.simulate_supermarket(*market_args(tasks=1.5))"),
    ("balance", "place-loads-none", "m.place_power_of_d(None, 10, 2, 3)"),
    ("balance", "place-loads-float", "m.place_power_of_d(np.zeros(8), 10, 2, 3)"),
    ("balance", "place-loads-readonly", "m.place_power_of_d(_readonly(np.zeros(8, I64)), 10, 2, 3)"),
    ("balance", "place-loads-empty-m0", "m.place_power_of_d(np.zeros(0, I64), 10, 1, 3)"),
    ("balance", "place-loads-strided", "m.place_power_of_d(np.zeros(16, I64)[::2], 10, 2, 3)"),
    ("balance", "place-choices-over-servers", "m.place_power_of_d(np.zeros(8, I64), 10, 9, 3)"),
    ("balance", "place-choices-zero", "m.place_power_of_d(np.zeros(8, I64), 10, 0, 3)"),
    ("balance", "place-decisions-negative", "m.place_power_of_d(np.zeros(8, I64), -1, 2, 3)"),
    ("balance", "place-decisions-2^70", "m.place_power_of_d(np.zeros(8, I64), 2**70, 2, 3)"),

    ("dispatcher", "baseline", "m.run_dispatch(**dispatch_args())"),
    ("dispatcher", "priority-past-classes", "m.run_dispatch(**dispatch_args(priority=np.array([1, 0, 5], I64)))"),
    ("dispatcher", "priority-negative", "m.run_dispatch(**dispatch_args(priority=np.array([1, -1, 0], I64)))"),
    ("dispatcher", "work-short", "m.run_dispatch(**dispatch_args(work_ns=np.array([100, 50], I64)))"),
    ("dispatcher", "priority-short", "m.run_dispatch(**dispatch_args(priority=np.array([1], I64)))"),
    ("dispatcher", "arrival-unsorted", "m.run_dispatch(**dispatch_args(arrival_ns=np.array([0, 30, 20], I64)))"),
    ("dispatcher", "arrival-negative", "m.run_dispatch(**dispatch_args(arrival_ns=np.array([-5, 10, 20], I64)))"),
    ("dispatcher", "work-zero", "m.run_dispatch(**dispatch_args(work_ns=np.array([0, 50, 50], I64)))"),
    ("dispatcher", "work-overflow", "m.run_dispatch(**dispatch_args(work_ns=np.full(3, 2**62, I64)))"),
    ("dispatcher", "quantum-zero", "m.run_dispatch(**dispatch_args(quantum_ns=0))"),
    ("dispatcher", "devices-zero", "m.run_dispatch(**dispatch_args(devices=0))"),
    ("dispatcher", "devices-2^70", "m.run_dispatch(**dispatch_args(devices=2**70))"),
    ("dispatcher", "classes-zero", "m.run_dispatch(**dispatch_args(n_classes=0))"),
    ("dispatcher", "classes-huge", "m.run_dispatch(**dispatch_args(n_classes=2**40))"),
    ("dispatcher", "horizon-below-minus-1", "m.run_dispatch(**dispatch_args(horizon_ns=-5))"),
    ("dispatcher", "pause-negative", "m.run_dispatch(**dispatch_args(pause_ns=-1))"),
    ("dispatcher", "times-float", "m.run_dispatch(**dispatch_args(work_ns=np.array([1.5, 50, 50])))"),
    ("dispatcher", "preempt-not-bool", "m.run_dispatch(**dispatch_args(preempt='yes'))"),
    ("hedge_rule", "baseline", "m.hedge_plan(np.array([5, 30], I64), np.array([10, 10], I64), 2000)"),
    ("hedge_rule", "expected-short", "m.hedge_plan(np.array([5, 30], I64), np.array([10], I64), 2000)"),
    ("hedge_rule", "expected-overflow", "m.hedge_plan(np.array([5], I64), np.array([2**62], I64), 2000)"),
    ("hedge_rule", "duration-negative", "m.hedge_plan(np.array([-5], I64), np.array([10], I64), 2000)"),
    ("hedge_rule", "duration-float", "m.hedge_plan(np.array([1.5]), np.array([10], I64), 2000)"),
    ("hedge_rule", "duration-2d", "m.hedge_plan(np.zeros((2, 2), I64), np.array([10, 10], I64), 2000)"),
    ("hedge_rule", "factor-negative", "m.hedge_plan(np.array([5], I64), np.array([10], I64), -1)"),
    ("hedge_rule", "factor-huge", "m.hedge_plan(np.array([5], I64), np.array([10], I64), 2**40)"),
    ("hedge_rule", "factor-float", "m.hedge_plan(np.array([5], I64), np.array([10], I64), 2.0)"),

    ("ring", "baseline", "r = m.RingBuffer(8); r.push_many(np.arange(3, dtype=I64)); o = np.zeros(3, I64);"
                         " assert r.pop_many(o) == 3"),
    ("ring", "capacity-zero", "m.RingBuffer(0)"),
    ("ring", "capacity-not-power-of-2", "m.RingBuffer(3)"),
    ("ring", "capacity-2^70", "m.RingBuffer(2**70)"),
    ("ring", "pop-into-readonly", "m.RingBuffer(8).pop_many(_readonly(np.zeros(3, I64)))"),
    ("ring", "pop-into-float", "m.RingBuffer(8).pop_many(np.zeros(3))"),
    ("ring", "push-2d", "m.RingBuffer(8).push_many(np.zeros((2, 2), I64))"),
    ("ring", "push-none", "m.RingBuffer(8).push_many(None)"),
    ("ring", "produce-negative-n", "m.produce_range(m.RingBuffer(8), -1, 1)"),
    ("ring", "produce-batch-zero", "m.produce_range(m.RingBuffer(8), 4, 0)"),
    ("ring", "produce-no-ring", "m.produce_range(None, 4, 1)"),
    ("ring", "produce-n-2^70", "m.produce_range(m.RingBuffer(8), 2**70, 1)"),
    ("ring", "consume-batch-2^40", "m.consume_range(m.RingBuffer(8), 4, 2**40)"),

    ("validator", "baseline", "assert m.validate_batch(*validate_args()) == 0"),
    ("validator", "baseline-place", "assert m.place_batch(*place_args()) == 1"),
    ("validator", "baseline-K-63", "s = np.zeros((126, 6), I64); s[:, 0] = -1;"
                                   " assert m.validate_batch(*validate_args(K=63, slots=s)) == 0"),
    ("validator", "lease-ic-past-table", "m.validate_batch(*validate_args(leases=np.array([[0, 0, 1, 1, 5, 10**12, 0, 0]], I64)))"),
    ("validator", "lease-count-zero", "m.validate_batch(*validate_args(leases=np.array([[0, 0, 0, 1, 0, 10**12, 0, 0]], I64)))"),
    ("validator", "node-ic-past-table", "m.validate_batch(*validate_args(nodes=_nodes(1, 7)))"),
    ("validator", "node-ic-negative", "m.validate_batch(*validate_args(nodes=_nodes(1, -2)))"),
    ("validator", "occupancy-bit-without-job", "m.validate_batch(*validate_args(nodes=_nodes(5, 0b1111)))"),
    ("validator", "occupancy-bit-past-K", "m.validate_batch(*validate_args(nodes=_nodes(5, 1 << 10)))"),
    ("validator", "job-without-occupancy-bit", "m.validate_batch(*validate_args(slots=_slots_occupied(1)))"),
    ("validator", "free-past-K", "m.validate_batch(*validate_args(nodes=_nodes(3, 99)))"),
    ("validator", "free-negative", "m.validate_batch(*validate_args(nodes=_nodes(3, -1)))"),
    ("validator", "K-64", "m.validate_batch(*validate_args(K=64, slots=np.zeros((128, 6), I64)))"),
    ("validator", "K-zero", "m.validate_batch(*validate_args(K=0))"),
    ("validator", "slots-short", "m.validate_batch(*validate_args(slots=np.zeros((7, 6), I64)))"),
    ("validator", "slots-narrow", "m.validate_batch(*validate_args(slots=np.zeros((8, 3), I64)))"),
    ("validator", "out-short", "m.validate_batch(*validate_args(out=np.zeros((0, 2), I64)))"),
    ("validator", "pre-short", "m.validate_batch(*validate_args(pre=np.zeros((0, 5), I64)))"),
    ("validator", "ic_ok-short", "m.validate_batch(*validate_args(n_ic=2))"),
    ("validator", "out-aliases-nodes", "a = validate_args(); a[8] = a[1][:, :2]; m.validate_batch(*a)"),
    ("validator", "pre-aliases-slots", "a = validate_args(); a[9] = a[4][:4, :5]; m.validate_batch(*a)"),
    ("validator", "nodes-readonly", "m.validate_batch(*validate_args(nodes=_readonly(validate_args()[1])))"),
    ("validator", "leases-float", "m.validate_batch(*validate_args(leases=np.zeros((1, 8))))"),
    ("validator", "leases-none", "m.validate_batch(*validate_args(leases=None))"),
    ("validator", "now-2^70", "m.validate_batch(*validate_args(now=2**70))"),
    ("validator", "place-draw-past-nodes", "m.place_batch(*place_args(draws=np.array([[0, 5]], I32)))"),
    ("validator", "place-draw-negative", "m.place_batch(*place_args(draws=np.array([[-1, 0]], I32)))"),
    ("validator", "place-nodes-mismatch", "m.place_batch(*place_args(view_free=np.array([4, 4, 4], I64)))"),
    ("validator", "place-node-ic-past-table", "m.place_batch(*place_args(nodes=_nodes(1, 3)))"),
    ("validator", "place-request-ic-past-table", "m.place_batch(*place_args(requests=np.array([[0, 1, 1, 9]], I64)))"),
    ("validator", "place-policy-unknown", "m.place_batch(*place_args(policy=9))"),
    ("validator", "place-out-short", "m.place_batch(*place_args(out_node=np.zeros(0, I64)))"),
    ("validator", "place-draws-rows-short", "m.place_batch(*place_args(draws=np.zeros((0, 2), I32)))"),
    ("validator", "place-hints-rows-short", "m.place_batch(*place_args(policy=3, hints=np.zeros((0, 2), I64)))"),
    ("validator", "place-view-readonly", "m.place_batch(*place_args(view_free=_readonly(np.array([4, 4], I64))))"),
    ("validator", "place-out-aliases-view", "a = place_args(); a[8] = a[0][:1]; m.place_batch(*a)"),
    ("validator", "place-draws-int64", "m.place_batch(*place_args(draws=np.array([[0, 1]], I64)))"),
    ("validator", "place-no-nodes-m0", "m.place_batch(*place_args(view_free=np.zeros(0, I64), nodes=np.zeros((0, 8), I64)))"),

    ("contention", "baseline", "m.contention_batch(*contention_args())"),
    ("contention", "pick-past-feasible", "m.contention_batch(*contention_args(pick1=np.full((2, 3), 7, I32)))"),
    ("contention", "pick2-negative", "m.contention_batch(*contention_args(pick2=np.full((2, 3), -1, I32)))"),
    ("contention", "feasible-past-nodes", "m.contention_batch(*contention_args(feas=np.array([0, 9], I64)))"),
    ("contention", "view-occupancy-past-S", "m.contention_batch(*contention_args(view_occ=np.array([0, 5, 2, 0], I32)))"),
    ("contention", "redraw-occupancy-past-S", "m.contention_batch(*contention_args(redraw_occ=np.full((2, 3), 5, I32),"
                                             " p_stale=np.ones(2), u_stale=np.zeros((2, 3))))"),
    ("contention", "old-prio-wrong-depth", "m.contention_batch(*contention_args(old_prio=np.zeros((2, 3, 1), I32)))"),
    ("contention", "scratch-prio-short", "m.contention_batch(*contention_args(t_prio=np.zeros(5, I32)))"),
    ("contention", "scratch-node-short", "m.contention_batch(*contention_args(t_node=np.zeros(2, I64)))"),
    ("contention", "scratch-aliased", "a = contention_args(); a[13] = a[14][:3]; m.contention_batch(*a)"),
    ("contention", "p_stale-short", "m.contention_batch(*contention_args(p_stale=np.zeros(1)))"),
    ("contention", "pick2-short", "m.contention_batch(*contention_args(pick2=np.zeros((1, 3), I32)))"),
    ("contention", "least-loaded-past-nodes", "m.contention_batch(*contention_args(policy=1, ll_node=99))"),
    ("contention", "policy-unknown", "m.contention_batch(*contention_args(policy=5))"),
    ("contention", "S-zero", "m.contention_batch(*contention_args(S=0))"),
    ("contention", "view-float", "m.contention_batch(*contention_args(view_occ=np.zeros(4)))"),
    ("contention", "scratch-none", "m.contention_batch(*contention_args(t_node=None))"),
]

BACKENDS = ("compiled", "python")


def _run_case(index: int, backend: str) -> str:
    """In the child: run one case and describe the outcome in one line."""
    import importlib
    kernel, _, code = CASES[index]
    module = importlib.import_module(MODULES[kernel][0 if backend == "compiled" else 1])
    namespace = dict(globals(), m=module)
    try:
        exec(code, namespace)
    except Exception as exc:  # noqa: BLE001 - the outcome is what is being tested
        return f"{type(exc).__name__}: {str(exc)[:10_000]}"  # the length is checked too
    return "ok"


CASE_TIMEOUT_S = 60  # a case still running after this is a hang (the child exits)


def _child(start: int, backend: str, kernel: str | None = None) -> None:
    """Run cases ``start..`` (of one ``kernel`` if given), printing a JSON line when each
    starts and one with its outcome (flushed, so a crash loses only the case that
    crashed). A watchdog thread ends the child if one case runs past CASE_TIMEOUT_S, even
    inside a nogil loop."""
    import faulthandler
    import resource
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crash writes no core file
    for index in range(start, len(CASES)):
        if kernel is not None and CASES[index][0] != kernel:
            continue
        print(json.dumps([index, None]), flush=True)
        faulthandler.dump_traceback_later(CASE_TIMEOUT_S, exit=True)
        outcome = _run_case(index, backend)
        faulthandler.cancel_dump_traceback_later()
        print(json.dumps([index, outcome]), flush=True)


def run_cases(src: Path, backend: str, kernel: str | None = None) -> dict:
    """``{index: outcome}`` for every case (of one ``kernel`` if given), run against the
    package in ``src``; a case that kills the child is "crashed (exit N)" (or "hung" after
    CASE_TIMEOUT_S) and the child restarts after it."""
    results: dict = {}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src), str(ROOT)]))
    env.pop("MAGNUM_PUREPYTHON", None)
    start = 0
    while start < len(CASES):
        proc = subprocess.run(
            [sys.executable, "-c", "from tests.test_kernel_boundaries import _child; "
                                   f"_child({start}, {backend!r}, {kernel!r})"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=CASE_TIMEOUT_S * len(CASES))
        last = None
        for line in proc.stdout.splitlines():
            if line.startswith("["):
                last, outcome = json.loads(line)
                if outcome is not None:
                    results[last] = outcome
        if last is None or last in results:  # finished (or nothing left to run)
            break
        hung = "Timeout" in proc.stderr
        results[last] = f"{'hung' if hung else 'crashed'} (exit {proc.returncode}): {proc.stderr[-500:]}"
        start = last + 1
    return results


def _clean(index: int, outcome: str) -> bool:
    if CASES[index][1].startswith("baseline"):
        return outcome == "ok"
    return outcome.startswith(("ValueError:", "TypeError:", "ParameterError:")) and len(outcome) < 400


@pytest.fixture(scope="module")
def outcomes() -> dict:
    """``{(backend, index): outcome}`` for this checkout."""
    return {(backend, i): o for backend in BACKENDS for i, o in run_cases(ROOT / "src", backend).items()}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("index", range(len(CASES)), ids=[f"{k}-{name}" for k, name, _ in CASES])
def test_kernel_answers_cleanly(outcomes, backend, index):
    kernel, name, code = CASES[index]
    outcome = outcomes[backend, index]
    if name.startswith("baseline"):
        assert outcome == "ok", f"the valid call {code} must succeed, got {outcome[:500]}"
    else:
        # ValueError or TypeError, in one short line (no echo of a whole array).
        assert _clean(index, outcome), f"{code} must raise ValueError or TypeError, got {outcome[:500]}"


def test_the_harness_survives_and_reports_a_crash(tmp_path):
    # A stand-in package whose pack_kernel segfaults on the baseline call: the crash must
    # become that case's outcome, and the cases after it must still run.
    pkg = tmp_path / "magnum_lib" / "graph"
    pkg.mkdir(parents=True)
    (tmp_path / "magnum_lib" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "_packing.py").write_text(
        "import ctypes\n"
        "import numpy as np\n"
        "from tests.test_kernel_boundaries import pack_args\n"
        "def pack_kernel(**kw):\n"
        "    if all(np.array_equal(v, kw[k]) for k, v in pack_args().items()):\n"
        "        ctypes.string_at(0)  # segfault on the baseline call only\n"
        "    raise ValueError('refused')\n")
    found = run_cases(tmp_path, "compiled", kernel="packing")
    assert found[0].startswith("crashed")
    assert found[1] == "ValueError: refused"
    assert sorted(found) == [i for i, case in enumerate(CASES) if case[0] == "packing"]
    assert not _clean(0, found[0]) and _clean(1, found[1])

if __name__ == "__main__":
    # Summarize another checkout: python tests/test_kernel_boundaries.py /work/main/src compiled
    src, backend = Path(sys.argv[1]), sys.argv[2]
    found = run_cases(src, backend)
    bad = {i: o for i, o in found.items() if not _clean(i, o)}
    crashed = [i for i, o in bad.items() if o.startswith("crashed")]
    hung = [i for i, o in bad.items() if o.startswith("hung")]
    print(f"{backend} at {src}: {len(CASES)} cases, {len(crashed)} crashed, {len(hung)} hung, "
          f"{len(bad) - len(crashed) - len(hung)} other unclean")
    for i, o in sorted(bad.items()):
        print(f"  {CASES[i][0]} {CASES[i][1]}: {o[:100]}")
