"""Compiled node-side lease validator and batch placement.

Same signatures and results as :mod:`magnum_lib.regional.validator_ref` (read that for the
row layouts). Inputs are validated once by :mod:`magnum_lib.regional.validator` and
:mod:`magnum_lib.regional.scheduler`; the ``nogil`` cores trust them.
"""
from magnum_lib._typedefs cimport time_ns, intp_t
from libc.stdint cimport int64_t, int32_t, uint8_t

cdef extern from *:
    int __builtin_ctzll(unsigned long long) nogil

# Columns and result codes: keep equal to validator_ref.
cdef enum:
    L_NODE, L_TYPE, L_COUNT, L_MEM, L_IC, L_EXPIRY, L_PRIO, L_JOB
cdef enum:
    N_TYPE, N_IC, N_MEM, N_FREE, N_MINPRIO, N_OCC
cdef int64_t NO_JOB_PRIO = (<int64_t>1) << 62
cdef enum:
    S_JOB, S_PRIO, S_COUNT, S_MEM, S_EXPIRY, S_START
cdef enum:
    ACCEPTED = 0
    ACCEPTED_PREEMPT = 1
    INSUFFICIENT_DEVICES = 2
    INSUFFICIENT_MEMORY = 3
    INTERCONNECT_MISMATCH = 4
    DEVICE_TYPE_MISMATCH = 5
    EXPIRED = 6
    UNKNOWN_NODE = 7


cdef inline bint _victim_after(intp_t s, int64_t p, int64_t last_p, intp_t last_s) noexcept nogil:
    return p > last_p or (p == last_p and s > last_s)


cdef intp_t validate_core(const int64_t[:, ::1] leases, int64_t[:, ::1] nodes,
                          const uint8_t[::1] ic_ok, intp_t n_ic, int64_t[:, ::1] slots, intp_t K,
                          time_ns now, bint preempt, int64_t[:, ::1] out,
                          int64_t[:, ::1] pre) noexcept nogil:
    cdef intp_t n_nodes = nodes.shape[0], n_pre = 0, r, i, s, base, best, last_s
    cdef int64_t gained, last_p, prio, p, count, code, low, occ
    cdef int k
    for r in range(leases.shape[0]):
        out[r, 1] = -1
        i = leases[r, L_NODE]
        if i < 0 or i >= n_nodes:
            out[r, 0] = UNKNOWN_NODE
            continue
        if leases[r, L_EXPIRY] <= now:
            out[r, 0] = EXPIRED
            continue
        if leases[r, L_TYPE] != nodes[i, N_TYPE]:
            out[r, 0] = DEVICE_TYPE_MISMATCH
            continue
        if leases[r, L_IC] < 0 or not ic_ok[nodes[i, N_IC] * n_ic + leases[r, L_IC]]:
            out[r, 0] = INTERCONNECT_MISMATCH
            continue
        if leases[r, L_MEM] > nodes[i, N_MEM]:
            out[r, 0] = INSUFFICIENT_MEMORY
            continue
        base = i * K
        code = ACCEPTED
        prio = leases[r, L_PRIO]
        count = leases[r, L_COUNT]
        if nodes[i, N_FREE] < count:
            if not preempt or nodes[i, N_MINPRIO] >= prio:  # nobody here can be displaced
                out[r, 0] = INSUFFICIENT_DEVICES
                continue
            # Find the last victim in (priority, slot) order before evicting anything.
            gained = nodes[i, N_FREE]
            last_p = -1
            last_s = -1
            while gained < count:
                best = -1
                for s in range(base, base + K):
                    p = slots[s, S_PRIO]
                    if slots[s, S_JOB] >= 0 and p < prio and _victim_after(s, p, last_p, last_s):
                        if best < 0 or p < slots[best, S_PRIO]:
                            best = s
                if best < 0:
                    break
                last_p = slots[best, S_PRIO]
                last_s = best
                gained += slots[best, S_COUNT]
            if gained < count:
                out[r, 0] = INSUFFICIENT_DEVICES
                continue
            low = NO_JOB_PRIO
            for s in range(base, base + K):
                if slots[s, S_JOB] < 0:
                    continue
                p = slots[s, S_PRIO]
                if p < prio and not _victim_after(s, p, last_p, last_s):
                    pre[n_pre, 0] = slots[s, S_JOB]
                    pre[n_pre, 1] = slots[s, S_START]
                    pre[n_pre, 2] = r
                    pre[n_pre, 3] = slots[s, S_COUNT]
                    pre[n_pre, 4] = slots[s, S_MEM]
                    n_pre += 1
                    nodes[i, N_FREE] += slots[s, S_COUNT]
                    nodes[i, N_OCC] &= ~((<int64_t>1) << (s - base))
                    slots[s, S_JOB] = -1
                elif p < low:
                    low = p
            nodes[i, N_MINPRIO] = low
            code = ACCEPTED_PREEMPT
        occ = nodes[i, N_OCC]
        k = __builtin_ctzll(<unsigned long long>(~occ))  # lowest empty slot
        s = base + k
        slots[s, S_JOB] = leases[r, L_JOB]
        slots[s, S_PRIO] = prio
        slots[s, S_COUNT] = count
        slots[s, S_MEM] = leases[r, L_MEM]
        slots[s, S_EXPIRY] = leases[r, L_EXPIRY]
        slots[s, S_START] = now
        out[r, 1] = s
        nodes[i, N_OCC] = occ | ((<int64_t>1) << k)
        if prio < nodes[i, N_MINPRIO]:
            nodes[i, N_MINPRIO] = prio
        nodes[i, N_FREE] -= count
        out[r, 0] = code
    return n_pre


def validate_batch(const int64_t[:, ::1] leases, int64_t[:, ::1] nodes, const uint8_t[::1] ic_ok,
                   intp_t n_ic, int64_t[:, ::1] slots, intp_t K, time_ns now, bint preempt,
                   int64_t[:, ::1] out, int64_t[:, ::1] pre):
    """Validate leases in order against the true node state; return the preempted-job count."""
    cdef intp_t n
    with nogil:
        n = validate_core(leases, nodes, ic_ok, n_ic, slots, K, now, preempt, out, pre)
    return n


cdef inline bint _fits(intp_t r, intp_t i, const int64_t[::1] view_free,
                       const int64_t[:, ::1] nodes, const uint8_t[::1] ic_ok, intp_t n_ic,
                       const int64_t[:, ::1] requests) noexcept nogil:
    return (nodes[i, N_TYPE] == requests[r, 0] and requests[r, 3] >= 0
            and ic_ok[nodes[i, N_IC] * n_ic + requests[r, 3]] != 0
            and nodes[i, N_MEM] >= requests[r, 2] and view_free[i] >= requests[r, 1])


cdef intp_t place_core(int64_t[::1] view_free, const int64_t[:, ::1] nodes,
                       const uint8_t[::1] ic_ok, intp_t n_ic, const int64_t[:, ::1] requests,
                       int policy, const int32_t[:, ::1] draws, const int64_t[:, ::1] hints,
                       int64_t[::1] out_node) noexcept nogil:
    cdef intp_t n_nodes = view_free.shape[0], n_draws = draws.shape[1], placed = 0
    cdef intp_t r, i, j, t, h, best, a, b, start, pick
    for r in range(requests.shape[0]):
        best = -1
        if policy == 3:
            for h in range(hints.shape[1]):
                i = hints[r, h]
                if 0 <= i < n_nodes and _fits(r, i, view_free, nodes, ic_ok, n_ic, requests):
                    best = i
                    break
        if best < 0 and policy == 1:
            for i in range(n_nodes):
                if _fits(r, i, view_free, nodes, ic_ok, n_ic, requests) and (
                        best < 0 or view_free[i] > view_free[best]):
                    best = i
        elif best < 0:
            # policy 0 takes the first feasible pick; two-choices (2, and 3's fallback) a second.
            a = -1
            b = -1
            t = 0
            for pick in range(1 if policy == 0 else 2):
                if pick == 1 and a < 0:
                    break
                i = -1
                while t < n_draws:
                    t += 1
                    if _fits(r, draws[r, t - 1], view_free, nodes, ic_ok, n_ic, requests):
                        i = draws[r, t - 1]
                        break
                if i < 0:
                    start = draws[r, n_draws - 1] if n_draws > 0 else 0
                    for j in range(n_nodes):
                        if _fits(r, (start + j) % n_nodes, view_free, nodes, ic_ok, n_ic, requests):
                            i = (start + j) % n_nodes
                            break
                if pick == 0:
                    a = i
                else:
                    b = i
            best = b if b >= 0 and view_free[b] > view_free[a] else a
        out_node[r] = best
        if best >= 0:
            view_free[best] -= requests[r, 1]
            placed += 1
    return placed


def place_batch(int64_t[::1] view_free, const int64_t[:, ::1] nodes, const uint8_t[::1] ic_ok,
                intp_t n_ic, const int64_t[:, ::1] requests, int policy,
                const int32_t[:, ::1] draws, const int64_t[:, ::1] hints, int64_t[::1] out_node):
    """Place requests from a view with a policy (0 random, 1 least-loaded, 2 two-choices, 3 hints)."""
    cdef intp_t n
    with nogil:
        n = place_core(view_free, nodes, ic_ok, n_ic, requests, policy, draws, hints, out_node)
    return n
