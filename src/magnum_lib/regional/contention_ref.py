"""Pure-Python reference of the contention kernel (same signature as ``_contention.pyx``).

One trial: C schedulers each place one single-slot job at the same moment from the same
view; the nodes then validate the C leases against their truth. Every random number is
drawn by the caller (:mod:`magnum_lib.regional.contention`) and passed in, so both
backends agree exactly.
"""
from __future__ import annotations

from magnum_lib.regional.kernel_checks import check_contention_inputs


def contention_batch(view_occ, feas, ll_node, S, policy, p_stale, u_stale, redraw_occ,
                     pick1, pick2, new_prio, old_prio, t_node, t_occ, t_prio):
    """Run ``len(p_stale)`` trials; return (conflicted trials, refused, preemptions, accepted).

    Parameters
    ----------
    view_occ : int32[N]
        Occupied slots per node in the shared view (capacity ``S`` each).
    feas : int64[F]
        Nodes the view shows with a free slot; ``pick1``/``pick2`` index into it.
    ll_node : int
        The least-loaded node of the view (lowest index on ties): every least-loaded
        scheduler picks it, which is the herd.
    policy : int
        0 random, 1 least-loaded, 2 two-choices (the less occupied of two random picks;
        the first on ties).
    p_stale : float64[B]
        Per trial, the chance that a node's view entry is out of date.
    pick1, pick2 : int32[B, C]
        Uniform indices into ``feas`` (two-choices uses both).
    u_stale, redraw_occ : [B, C]
        Uniforms deciding staleness, and the true occupancy of a stale node.
    new_prio : int32[B, C]; old_prio : int32[B, C, S] (or [B, C, 0] when priorities are off)
        Priorities of the new jobs and of the jobs already on the node the pick touches.
        A full node preempts its lowest-priority job if strictly below the new one.
    t_node, t_occ, t_prio : scratch (C, C, C*S).
    """
    ll_node, S, policy = check_contention_inputs(view_occ, feas, ll_node, S, policy, p_stale, u_stale,
                                                 redraw_occ, pick1, pick2, new_prio, old_prio, t_node,
                                                 t_occ, t_prio)
    B, C = pick1.shape
    F = len(feas)
    use_prio = old_prio.shape[2] > 0
    conflicted = refused = preemptions = accepted = 0
    for t in range(B):
        n_touched = 0
        conflict = False
        for j in range(C):
            if F == 0:  # the view shows no free slot: the lease is refused
                refused += 1
                conflict = True
                continue
            if policy == 1:
                node = ll_node
            else:
                node = feas[pick1[t, j]]
                if policy == 2:
                    other = feas[pick2[t, j]]
                    if view_occ[other] < view_occ[node]:
                        node = other
            k = 0
            while k < n_touched and t_node[k] != node:
                k += 1
            if k == n_touched:  # first lease on this node in the trial: learn its truth
                t_node[k] = node
                occ = redraw_occ[t, j] if u_stale[t, j] < p_stale[t] else view_occ[node]
                t_occ[k] = occ
                for q in range(occ if use_prio else 0):
                    t_prio[k * S + q] = old_prio[t, j, q]
                n_touched += 1
            if t_occ[k] < S:
                if use_prio:
                    t_prio[k * S + t_occ[k]] = new_prio[t, j]
                t_occ[k] += 1
                accepted += 1
                continue
            conflict = True
            low = -1
            if use_prio:
                for q in range(S):
                    if low < 0 or t_prio[k * S + q] < t_prio[k * S + low]:
                        low = q
            if low >= 0 and t_prio[k * S + low] < new_prio[t, j]:
                t_prio[k * S + low] = new_prio[t, j]
                preemptions += 1
                accepted += 1
            else:
                refused += 1
        conflicted += conflict
    return conflicted, refused, preemptions, accepted
