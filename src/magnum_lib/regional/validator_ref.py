"""Pure-Python reference of the node-side lease validator (same signatures as ``_validator.pyx``).

A batch of leases is checked, in order, against the nodes' true state. Each lease is
accepted (devices committed), accepted after preempting lower-priority jobs, or refused
with a reason; a refused lease changes nothing (atomic per lease).

Arrays are int64 rows, one row per item, so that a lease, a node or a slot is one
contiguous record (one or two cache lines in the compiled kernel):

* ``leases[r]`` = (node, device type code, count, memory per device, interconnect code,
  expiry ns, priority, job index) - columns ``L_*``;
* ``nodes[i]`` = (device type code, interconnect code, memory per device, free devices,
  lowest priority running (``NO_JOB_PRIO`` when idle), bitmask of occupied slots, 2 spare)
  - columns ``N_*``, 8 int64 = one 64-byte cache line; the last four are updated. The
  summaries let a refusal read only the node's row, and an acceptance find its slot
  without scanning;
* ``slots[i*K + k]`` = (job index or -1 when empty, priority, devices held, memory per
  device in use, lease expiry ns, start ns) - columns ``S_*``; K slots per node;
* ``ic_ok`` is a flat ``n_ic * n_ic`` uint8 table: ``ic_ok[node_ic * n_ic + lease_ic]`` is 1
  when the node's interconnect satisfies the lease's class.
"""
from __future__ import annotations

import numpy as np

from magnum_lib.regional.kernel_checks import check_place_inputs, check_validate_inputs

L_NODE, L_TYPE, L_COUNT, L_MEM, L_IC, L_EXPIRY, L_PRIO, L_JOB = range(8)
N_TYPE, N_IC, N_MEM, N_FREE, N_MINPRIO, N_OCC = range(6)
NODE_COLS = 8
NO_JOB_PRIO = 1 << 62  # an idle node's "lowest running priority": above every real one
S_JOB, S_PRIO, S_COUNT, S_MEM, S_EXPIRY, S_START = range(6)

# Result codes (mirrored in _validator.pyx and named in validator.REASONS).
ACCEPTED = 0
ACCEPTED_PREEMPT = 1
INSUFFICIENT_DEVICES = 2
INSUFFICIENT_MEMORY = 3
INTERCONNECT_MISMATCH = 4
DEVICE_TYPE_MISMATCH = 5
EXPIRED = 6
UNKNOWN_NODE = 7


# -- the lease rule, once (compiled twin: _lease_rule.pxd; used here and by sim/core_ref.py) --
LR_ACCEPT, LR_PREEMPT, LR_NO_DEVICES = ACCEPTED, ACCEPTED_PREEMPT, INSUFFICIENT_DEVICES


def lease_expired(expiry, now):
    """A lease is good until (not at) its expiry."""
    return expiry <= now


def checkpoint_s(memory_bytes, bandwidth_Bps):
    """Seconds to save a victim's state: its memory per device over the checkpoint bandwidth
    (each device saves over its own link, in parallel); numpy-friendly."""
    return memory_bytes / bandwidth_Bps


def lost_work_ns(now, started, interval):
    """Work a job evicted at ``now`` loses, per device: the time since its last periodic
    checkpoint (one every ``interval`` ns from ``started``; ``now >= started``); numpy-friendly."""
    return (now - started) % interval


def lease_verdict(free, count, preempt, min_prio, prio):
    """Accept (enough free devices), look for victims (a lower priority runs), or refuse.

    ``min_prio`` is the lowest priority running on the node (>= ``prio`` when nobody can go).
    """
    if free >= count:
        return LR_ACCEPT
    if preempt and min_prio < prio:
        return LR_PREEMPT
    return LR_NO_DEVICES


def victim_after(s, prio_s, last_p, last_s):
    """True when slot ``s`` comes after the victim (last_p, last_s) in (priority, slot) order."""
    return prio_s > last_p or (prio_s == last_p and s > last_s)


def is_victim(live, prio_of, s, prio, last_p, last_s):
    """Slot ``s`` is evicted for a lease of priority ``prio`` whose last victim is (last_p, last_s)."""
    p = prio_of(s)
    return live(s) and p < prio and not victim_after(s, p, last_p, last_s)


def cover_victims(live, prio_of, count_of, lo, hi, free, count, prio):
    """The last victim ``(slot, priority)`` among slots ``lo..hi-1``, or ``(-1, -1)``.

    Victims are strictly lower priorities taken in (priority, slot) order until ``free`` plus
    their devices reaches ``count`` (call it when ``free < count``). Nothing is changed: the
    caller evicts every slot for which :func:`is_victim` holds. ``live(s)``, ``prio_of(s)``
    and ``count_of(s)`` read the caller's own slot layout.
    """
    gained, last_p, last_s = free, -1, -1
    while gained < count:
        best, best_p = -1, 0
        for s in range(lo, hi):
            p = prio_of(s)
            if live(s) and p < prio and victim_after(s, p, last_p, last_s) and (best < 0 or p < best_p):
                best, best_p = s, p
        if best < 0:
            return -1, -1
        last_p, last_s = best_p, best
        gained += count_of(best)
    return last_s, last_p


def validate_batch(leases, nodes, ic_ok, n_ic, slots, K, now, preempt, out, pre):
    """Validate leases ``0..R-1`` in order; return the number of preempted jobs written.

    ``out[r]`` gets (result code, slot taken or -1). K must be at most 63 (the bitmask). Each preempted job is written to
    ``pre[p]`` = (job index, start ns, index of the lease that displaced it, devices,
    memory per device). ``pre`` must hold the running jobs plus ``R`` rows.
    """
    n_ic, K, now = check_validate_inputs(leases, nodes, ic_ok, n_ic, slots, K, now, preempt, out, pre)
    n_nodes = len(nodes)
    n_pre = 0
    for r in range(len(leases)):
        lease = leases[r]
        out[r, 1] = -1
        i = lease[L_NODE]
        if i < 0 or i >= n_nodes:
            out[r, 0] = UNKNOWN_NODE
            continue
        if lease_expired(lease[L_EXPIRY], now):
            out[r, 0] = EXPIRED
            continue
        if lease[L_TYPE] != nodes[i, N_TYPE]:
            out[r, 0] = DEVICE_TYPE_MISMATCH
            continue
        if lease[L_IC] < 0 or not ic_ok[nodes[i, N_IC] * n_ic + lease[L_IC]]:
            out[r, 0] = INTERCONNECT_MISMATCH
            continue
        if lease[L_MEM] > nodes[i, N_MEM]:
            out[r, 0] = INSUFFICIENT_MEMORY
            continue
        base = i * K
        code = ACCEPTED
        prio = lease[L_PRIO]
        verdict = lease_verdict(nodes[i, N_FREE], lease[L_COUNT], preempt, nodes[i, N_MINPRIO], prio)
        if verdict == LR_NO_DEVICES:  # nobody here can be displaced
            out[r, 0] = INSUFFICIENT_DEVICES
            continue
        if verdict == LR_PREEMPT:
            # Find the last victim first without touching anything, so a shortfall leaves the
            # node exactly as it was.
            live = lambda s: slots[s, S_JOB] >= 0  # noqa: E731
            prio_of = lambda s: slots[s, S_PRIO]  # noqa: E731
            last_s, last_p = cover_victims(live, prio_of, lambda s: slots[s, S_COUNT], base, base + K,
                                           nodes[i, N_FREE], lease[L_COUNT], prio)
            if last_s < 0:
                out[r, 0] = INSUFFICIENT_DEVICES
                continue
            low = NO_JOB_PRIO
            for s in range(base, base + K):  # evict every slot up to the last victim, in slot order
                if slots[s, S_JOB] < 0:
                    continue
                if is_victim(live, prio_of, s, prio, last_p, last_s):
                    pre[n_pre] = (slots[s, S_JOB], slots[s, S_START], r, slots[s, S_COUNT],
                                  slots[s, S_MEM])
                    n_pre += 1
                    nodes[i, N_FREE] += slots[s, S_COUNT]
                    nodes[i, N_OCC] &= ~(1 << (s - base))
                    slots[s, S_JOB] = -1
                else:
                    low = min(low, slots[s, S_PRIO])
            nodes[i, N_MINPRIO] = low
            code = ACCEPTED_PREEMPT
        occ = int(nodes[i, N_OCC])
        k = (~occ & (occ + 1)).bit_length() - 1  # lowest empty slot
        s = base + k
        slots[s] = (lease[L_JOB], prio, lease[L_COUNT], lease[L_MEM], lease[L_EXPIRY], now)
        out[r, 1] = s
        nodes[i, N_OCC] = occ | (1 << k)
        nodes[i, N_MINPRIO] = min(nodes[i, N_MINPRIO], prio)
        nodes[i, N_FREE] -= lease[L_COUNT]
        out[r, 0] = code
    return n_pre


def better_of_two(a, room_a, b, room_b):
    """Power of two choices (compiled twin: ``_place_rule.pxd``): of two feasible picks, the
    second only when it has strictly more room in the view, the first on ties."""
    return b if room_b > room_a else a


def place_batch(view_free, nodes, ic_ok, n_ic, requests, policy, draws, hints, out_node):
    """Place requests ``0..R-1`` from a view, without checking the truth; return placed count.

    ``requests[r]`` = (device type code, count, memory per device, interconnect code).
    ``policy``: 0 random, 1 least-loaded (most free in the view, lowest index on ties),
    2 power-of-two-choices (two random feasible nodes, the one with more free; the first
    on ties), 3 hints (first feasible node in ``hints[r]``, a ranked list; -1 pads; falls
    back to two-choices). ``draws[r, t]`` are uniform node indices drawn by the caller:
    a random choice takes the next feasible draw, and if none is left, the first feasible
    node at or after the last draw (cyclically). ``view_free`` is the scheduler's own view:
    it subtracts what it places (it knows its own decisions). ``out_node[r]`` is -1 when
    no node in the view fits.
    """
    n_ic, policy = check_place_inputs(view_free, nodes, ic_ok, n_ic, requests, policy, draws, hints, out_node)
    n_nodes = len(view_free)
    n_draws = draws.shape[1]
    placed = 0

    def fits(r, i):
        typ, count, mem, ic = requests[r]
        return (nodes[i, N_TYPE] == typ and ic >= 0 and ic_ok[nodes[i, N_IC] * n_ic + ic]
                and nodes[i, N_MEM] >= mem and view_free[i] >= count)

    def fitting(r):
        """``fits(r, i)`` for every node i at once (a boolean array): the scans over all
        nodes below read it instead of calling ``fits`` node by node (NumPy, for speed; the
        compiled twin loops)."""
        typ, count, mem, ic = requests[r]
        if ic < 0:
            return np.zeros(n_nodes, dtype=bool)
        return ((nodes[:, N_TYPE] == typ) & (ic_ok[nodes[:, N_IC] * n_ic + ic] != 0)
                & (nodes[:, N_MEM] >= mem) & (view_free >= count))

    def pick_random(r, t):
        while t < n_draws:
            t += 1
            if fits(r, draws[r, t - 1]):
                return draws[r, t - 1], t
        # No draw left: the first feasible node at or after the last draw, cyclically
        # (rolling the mask puts node ``start`` first, then start + 1, ...).
        start = int(draws[r, n_draws - 1]) if n_draws else 0
        ok = np.flatnonzero(np.roll(fitting(r), -start))
        return (int((start + ok[0]) % n_nodes), t) if ok.size else (-1, t)

    for r in range(len(requests)):
        best = -1
        if policy == 3:
            for i in hints[r]:
                if 0 <= i < n_nodes and fits(r, i):
                    best = i
                    break
        if best < 0 and policy == 1:
            # The feasible node with the most free devices in the view; the lowest index on
            # ties (argmax returns the first maximum).
            feasible = np.flatnonzero(fitting(r))
            if feasible.size:
                best = int(feasible[np.argmax(view_free[feasible])])
        elif best < 0 and policy == 0:
            best, _ = pick_random(r, 0)
        elif best < 0:
            a, t = pick_random(r, 0)
            b = pick_random(r, t)[0] if a >= 0 else -1
            best = a if b < 0 else better_of_two(a, view_free[a], b, view_free[b])
        out_node[r] = best
        if best >= 0:
            view_free[best] -= requests[r, 1]
            placed += 1
    return placed
