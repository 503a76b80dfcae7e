"""Compiled contention kernel; same signature and results as
:mod:`magnum_lib.regional.contention_ref` (read that for the arrays)."""
from magnum_lib._typedefs cimport intp_t
from libc.stdint cimport int64_t, int32_t

from magnum_lib.regional.kernel_checks import check_contention_inputs


def contention_batch(view_occ_a, feas_a, ll_node_, S_, policy_, p_stale_a, u_stale_a, redraw_occ_a,
                     pick1_a, pick2_a, new_prio_a, old_prio_a, t_node_a, t_occ_a, t_prio_a):
    """Run the trials; return (conflicted trials, refused, preemptions, accepted).

    ``kernel_checks.check_contention_inputs`` runs first (picks index ``feas``, which
    indexes the nodes; occupancies index the priority rows).
    """
    ll_node_, S_, policy_ = check_contention_inputs(
        view_occ_a, feas_a, ll_node_, S_, policy_, p_stale_a, u_stale_a, redraw_occ_a, pick1_a, pick2_a,
        new_prio_a, old_prio_a, t_node_a, t_occ_a, t_prio_a)
    cdef const int32_t[::1] view_occ = view_occ_a
    cdef const int64_t[::1] feas = feas_a
    cdef intp_t ll_node = ll_node_, S = S_
    cdef int policy = policy_
    cdef const double[::1] p_stale = p_stale_a
    cdef const double[:, ::1] u_stale = u_stale_a
    cdef const int32_t[:, ::1] redraw_occ = redraw_occ_a, pick1 = pick1_a, pick2 = pick2_a
    cdef const int32_t[:, ::1] new_prio = new_prio_a
    cdef const int32_t[:, :, ::1] old_prio = old_prio_a
    cdef int64_t[::1] t_node = t_node_a
    cdef int32_t[::1] t_occ = t_occ_a, t_prio = t_prio_a
    cdef intp_t B = pick1.shape[0], C = pick1.shape[1], F = feas.shape[0]
    cdef bint use_prio = old_prio.shape[2] > 0, conflict
    cdef intp_t t, j, k, q, low, node, other, n_touched, occ
    cdef int64_t conflicted = 0, refused = 0, preemptions = 0, accepted = 0
    with nogil:
        for t in range(B):
            n_touched = 0
            conflict = False
            for j in range(C):
                if F == 0:
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
                if k == n_touched:
                    t_node[k] = node
                    occ = redraw_occ[t, j] if u_stale[t, j] < p_stale[t] else view_occ[node]
                    t_occ[k] = <int32_t>occ
                    if use_prio:
                        for q in range(occ):
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
            if conflict:
                conflicted += 1
    return conflicted, refused, preemptions, accepted
