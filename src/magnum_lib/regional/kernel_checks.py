"""What the regional kernels trust, checked at their Python boundary (both backends).

``validate_batch``, ``place_batch`` (``_validator.pyx`` / ``validator_ref.py``) and
``contention_batch`` (``_contention.pyx`` / ``contention_ref.py``) index arrays by values
stored in other arrays (a node's interconnect code, a slot bitmask, a pick into the
feasible list) without bounds checks. These functions check every such value, every
shape, every output length and that no output shares memory with another argument, so
a bad call is a ValueError or TypeError and never a write out of bounds. They cost a few
vectorized passes over the arrays, linear in what the kernel reads.
"""
from __future__ import annotations

import numpy as np

from magnum_lib.base.kernel_args import int_scalar

# Row layouts, as in validator_ref (kept here too: this module imports only the engine).
L_NODE, L_TYPE, L_COUNT, L_MEM, L_IC, L_EXPIRY, L_PRIO, L_JOB = range(8)
N_TYPE, N_IC, N_MEM, N_FREE, N_MINPRIO, N_OCC = range(6)
S_JOB, S_PRIO, S_COUNT, S_MEM, S_EXPIRY, S_START = range(6)
MAX_SLOTS = 63  # slots per node: the occupancy bitmask is one int64
MAX_IC = 1 << 12  # interconnect classes (the table is n_ic^2 bytes)


def _array(name: str, value, dtype, ndim: int, min_cols: int = 0, writable: bool = False) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{name} must be a numpy array of {np.dtype(dtype).name}, got {type(value).__name__}")
    if value.dtype != dtype or value.ndim != ndim or not value.flags.c_contiguous:
        raise TypeError(f"{name} must be a C-contiguous {ndim}-D {np.dtype(dtype).name} array, got "
                        f"{value.ndim}-D {value.dtype}")
    if writable and not value.flags.writeable:
        raise ValueError(f"{name} must be writable")
    if ndim >= 2 and value.shape[1] < min_cols:
        raise ValueError(f"{name} must have at least {min_cols} columns, got shape {value.shape}")
    return value


def _in_range(name: str, a: np.ndarray, low: int, high: int) -> None:
    """Every value of ``a`` in ``[low, high]``."""
    if a.size and (a.min() < low or a.max() > high):
        raise ValueError(f"{name} must lie in [{low}, {high}], got values in [{int(a.min())}, {int(a.max())}]")


def _no_overlap(outputs: dict, inputs: dict) -> None:
    """No output may share memory with another output or with an input."""
    items = list(outputs.items())
    for i, (name, a) in enumerate(items):
        for other, b in items[i + 1:] + list(inputs.items()):
            if a.size and b.size and np.may_share_memory(a, b):
                raise ValueError(f"{name} must not share memory with {other}")


#: What a content check of validate_batch / place_batch can find, by code (the compiled
#: kernels run the same checks in C and report the code; both backends say the same).
PROBLEMS = {
    1: "leases[:, L_COUNT] must be >= 1 (a lease holds at least one device)",
    2: "leases[:, L_IC] must be < n_ic (it indexes the ic_ok table)",
    3: "nodes[:, N_IC] must lie in [0, n_ic) (it indexes the ic_ok table)",
    4: "slots[:, S_COUNT] of an occupied slot must lie in [1, K]",
    5: "nodes[:, N_OCC] must be exactly the bitmask of the node's occupied slots (bits < K)",
    6: "nodes[:, N_FREE] must be >= 0 and free + held devices <= K",
    7: "pre must have a row for every job the batch may preempt: min(leases x K, jobs running on "
       "the named nodes + leases)",
    8: "requests[:, 1] (device count) must be >= 0",
    9: "requests[:, 3] (interconnect) must be < n_ic (it indexes the ic_ok table)",
    10: "draws must be node indices in [0, len(view_free))",
}


def problem(code: int) -> ValueError:
    """The ValueError for a content-check code of :data:`PROBLEMS`."""
    return ValueError(PROBLEMS[code])


def check_validate_shapes(leases, nodes, ic_ok, n_ic, slots, K, now, preempt, out, pre) -> tuple:
    """The O(1) part of the checks of ``validate_batch``: types, shapes, scalars, aliasing.

    Returns ``(n_ic, K, now)`` as Python ints.
    """
    leases = _array("leases", leases, np.int64, 2, 8)
    nodes = _array("nodes", nodes, np.int64, 2, 6, writable=True)
    ic_ok = _array("ic_ok", ic_ok, np.uint8, 1)
    slots = _array("slots", slots, np.int64, 2, 6, writable=True)
    out = _array("out", out, np.int64, 2, 2, writable=True)
    pre = _array("pre", pre, np.int64, 2, 5, writable=True)
    n_ic = int_scalar("n_ic", n_ic, 1, MAX_IC)
    K = int_scalar("K", K, 1, MAX_SLOTS)
    now = int_scalar("now", now, -(1 << 63), (1 << 63) - 1)
    n_nodes, n_leases = nodes.shape[0], leases.shape[0]
    if slots.shape[0] != n_nodes * K:
        raise ValueError(f"slots must have nodes x K = {n_nodes * K} rows, got {slots.shape[0]}")
    if out.shape[0] < n_leases:
        raise ValueError(f"out must have a row per lease ({n_leases}), got {out.shape[0]}")
    if ic_ok.shape[0] != n_ic * n_ic:
        raise ValueError(f"ic_ok must hold n_ic^2 = {n_ic * n_ic} entries, got {ic_ok.shape[0]}")
    _no_overlap({"nodes": nodes, "slots": slots, "out": out, "pre": pre}, {"leases": leases, "ic_ok": ic_ok})
    return n_ic, K, now


def validate_contents_problem(leases, nodes, n_ic, slots, K, pre) -> int:
    """The content checks of ``validate_batch`` (numpy form); 0 or a :data:`PROBLEMS` code.

    Lease counts >= 1 and interconnect codes < ``n_ic``; on every node a lease names (the
    only ones the kernel reads or writes): its interconnect code indexes ``ic_ok``, its
    occupancy bitmask is exactly its occupied slots, each holding 1..K devices, and
    free >= 0 with free + held <= K (so an accepted lease always finds an empty slot);
    ``pre`` has a row for every job the batch can preempt.
    """
    n_nodes, n_leases = nodes.shape[0], leases.shape[0]
    if n_leases and leases[:, L_COUNT].min() < 1:
        return 1
    if n_leases and leases[:, L_IC].max() >= n_ic:
        return 2
    named = leases[:, L_NODE]
    named = named[(named >= 0) & (named < n_nodes)]  # others are refused as unknown nodes
    t_nodes = nodes[named]
    if named.size and (t_nodes[:, N_IC].min() < 0 or t_nodes[:, N_IC].max() >= n_ic):
        return 3
    t_slots = slots.reshape(n_nodes, K, slots.shape[1])[named]
    occupied = t_slots[:, :, S_JOB] >= 0
    held = np.where(occupied, t_slots[:, :, S_COUNT], 0)
    if ((held < 0) | (held > K) | (occupied & (held < 1))).any():
        return 4
    bits = (t_nodes[:, N_OCC, None] >> np.arange(K, dtype=np.int64)) & 1
    if (bits.astype(bool) != occupied).any() or (t_nodes[:, N_OCC] >> K).any():
        return 5
    free = t_nodes[:, N_FREE]
    if ((free < 0) | (free + held.sum(axis=1) > K)).any():
        return 6
    running = int(np.count_nonzero(slots.reshape(n_nodes, K, slots.shape[1])[np.unique(named), :, S_JOB] >= 0))
    if pre.shape[0] < min(n_leases * K, running + n_leases):  # only named nodes' jobs can go
        return 7
    return 0


def check_validate_inputs(leases, nodes, ic_ok, n_ic, slots, K, now, preempt, out, pre) -> tuple:
    """Every check of ``validate_batch`` (the reference runs this; the compiled kernel runs
    the shapes here and the contents in C); returns ``(n_ic, K, now)``."""
    n_ic, K, now = check_validate_shapes(leases, nodes, ic_ok, n_ic, slots, K, now, preempt, out, pre)
    code = validate_contents_problem(leases, nodes, n_ic, slots, K, pre)
    if code:
        raise problem(code)
    return n_ic, K, now


def check_place_shapes(view_free, nodes, ic_ok, n_ic, requests, policy, draws, hints, out_node) -> tuple:
    """The O(1) part of the checks of ``place_batch``; returns ``(n_ic, policy)``.

    ``view_free`` and ``nodes`` describe the same nodes; the random policies need a draw
    row per request and the hints policy a hint row per request; ``out_node`` has a slot
    per request; outputs overlap nothing.
    """
    view_free = _array("view_free", view_free, np.int64, 1, writable=True)
    nodes = _array("nodes", nodes, np.int64, 2, 6)
    ic_ok = _array("ic_ok", ic_ok, np.uint8, 1)
    requests = _array("requests", requests, np.int64, 2, 4)
    draws = _array("draws", draws, np.int32, 2)
    hints = _array("hints", hints, np.int64, 2)
    out_node = _array("out_node", out_node, np.int64, 1, writable=True)
    n_ic = int_scalar("n_ic", n_ic, 1, MAX_IC)
    policy = int_scalar("policy", policy, 0, 3)
    n_nodes, n_req = view_free.shape[0], requests.shape[0]
    if nodes.shape[0] != n_nodes:
        raise ValueError(f"nodes must have a row per view_free entry ({n_nodes}), got {nodes.shape[0]}")
    if out_node.shape[0] < n_req:
        raise ValueError(f"out_node must have an entry per request ({n_req}), got {out_node.shape[0]}")
    if policy != 1 and draws.shape[1] and draws.shape[0] < n_req:
        raise ValueError(f"draws must have a row per request ({n_req}), got {draws.shape[0]}")
    if policy == 3 and hints.shape[1] and hints.shape[0] < n_req:
        raise ValueError(f"hints must have a row per request ({n_req}), got {hints.shape[0]}")
    if ic_ok.shape[0] != n_ic * n_ic:
        raise ValueError(f"ic_ok must hold n_ic^2 = {n_ic * n_ic} entries, got {ic_ok.shape[0]}")
    _no_overlap({"view_free": view_free, "out_node": out_node},
                {"nodes": nodes, "ic_ok": ic_ok, "requests": requests, "draws": draws, "hints": hints})
    return n_ic, policy


def place_contents_problem(view_free, nodes, n_ic, requests, policy, draws) -> int:
    """The content checks of ``place_batch`` (numpy form); 0 or a :data:`PROBLEMS` code."""
    n_nodes, n_req = view_free.shape[0], requests.shape[0]
    if n_nodes and (nodes[:, N_IC].min() < 0 or nodes[:, N_IC].max() >= n_ic):
        return 3
    if n_req and requests[:, 1].min() < 0:
        return 8
    if n_req and requests[:, 3].max() >= n_ic:
        return 9
    d = draws[:n_req]
    if policy != 1 and d.size and (d.min() < 0 or d.max() >= n_nodes):
        return 10
    return 0


def check_place_inputs(view_free, nodes, ic_ok, n_ic, requests, policy, draws, hints, out_node) -> tuple:
    """Every check of ``place_batch`` (the reference runs this); returns ``(n_ic, policy)``."""
    n_ic, policy = check_place_shapes(view_free, nodes, ic_ok, n_ic, requests, policy, draws, hints, out_node)
    code = place_contents_problem(view_free, nodes, n_ic, requests, policy, draws)
    if code:
        raise problem(code)
    return n_ic, policy


def check_contention_inputs(view_occ, feas, ll_node, S, policy, p_stale, u_stale, redraw_occ, pick1, pick2,
                            new_prio, old_prio, t_node, t_occ, t_prio) -> tuple:
    """Check ``contention_batch``'s arguments; return ``(ll_node, S, policy)`` as Python ints.

    Every per-pick array covers the B x C picks of ``pick1``; picks index ``feas``, which
    indexes the N nodes; occupancies lie in ``[0, S]`` (they index the priority rows);
    ``old_prio`` has S priorities per pick or none; the scratch arrays hold C, C and C x S
    entries and overlap nothing.
    """
    view_occ = _array("view_occ", view_occ, np.int32, 1)
    feas = _array("feas", feas, np.int64, 1)
    p_stale = _array("p_stale", p_stale, np.float64, 1)
    u_stale = _array("u_stale", u_stale, np.float64, 2)
    redraw_occ = _array("redraw_occ", redraw_occ, np.int32, 2)
    pick1 = _array("pick1", pick1, np.int32, 2)
    pick2 = _array("pick2", pick2, np.int32, 2)
    new_prio = _array("new_prio", new_prio, np.int32, 2)
    old_prio = _array("old_prio", old_prio, np.int32, 3)
    t_node = _array("t_node", t_node, np.int64, 1, writable=True)
    t_occ = _array("t_occ", t_occ, np.int32, 1, writable=True)
    t_prio = _array("t_prio", t_prio, np.int32, 1, writable=True)
    S = int_scalar("S", S, 1, 1 << 20)
    policy = int_scalar("policy", policy, 0, 2)
    n, (B, C) = view_occ.shape[0], pick1.shape
    ll_node = int_scalar("ll_node", ll_node, 0 if policy == 1 else -1, n - 1)
    for name, a in (("u_stale", u_stale), ("redraw_occ", redraw_occ), ("new_prio", new_prio),
                    ("pick2", pick2)):
        if a.shape[0] < B or a.shape[1] < C:
            raise ValueError(f"{name} must cover pick1's {B} x {C} picks, got shape {a.shape}")
    if p_stale.shape[0] < B:
        raise ValueError(f"p_stale must have an entry per trial ({B}), got {p_stale.shape[0]}")
    if old_prio.shape[0] < B or old_prio.shape[1] < C or old_prio.shape[2] not in (0, S):
        raise ValueError(f"old_prio must have shape ({B}, {C}, {S} or 0), got {old_prio.shape}")
    if t_node.shape[0] < C or t_occ.shape[0] < C or t_prio.shape[0] < C * S:
        raise ValueError(f"scratch t_node, t_occ, t_prio must hold {C}, {C}, {C * S} entries, got "
                         f"{t_node.shape[0]}, {t_occ.shape[0]}, {t_prio.shape[0]}")
    _no_overlap({"t_node": t_node, "t_occ": t_occ, "t_prio": t_prio},
                {"view_occ": view_occ, "feas": feas, "pick1": pick1, "pick2": pick2, "redraw_occ": redraw_occ,
                 "old_prio": old_prio, "new_prio": new_prio})
    _in_range("view_occ", view_occ, 0, S)
    _in_range("feas", feas, 0, n - 1)
    _in_range("redraw_occ", redraw_occ[:B, :C], 0, S)
    if feas.shape[0] and policy != 1:
        _in_range("pick1", pick1, 0, feas.shape[0] - 1)
        if policy == 2:
            _in_range("pick2", pick2[:B, :C], 0, feas.shape[0] - 1)
    return ll_node, S, policy
