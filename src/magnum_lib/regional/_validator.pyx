"""Compiled node-side lease validator and batch placement.

Same signatures and results as :mod:`magnum_lib.regional.validator_ref` (read that for the
row layouts). Every ``def`` checks its arguments as :mod:`magnum_lib.regional.kernel_checks`
does (here in C, so the checks cost microseconds) before the ``nogil`` cores, which trust them.
"""
import numpy as np

from magnum_lib._typedefs cimport time_ns, intp_t
from libc.stdint cimport int64_t, int32_t, uint8_t, uint64_t, INT64_MAX

from magnum_lib.regional._place_rule cimport better_of_two
from magnum_lib.regional._lease_rule cimport (LR_NO_DEVICES, LR_PREEMPT, VictimSlots, cover_victims,
                                              is_victim, lease_expired, lease_verdict)

from magnum_lib.regional.kernel_checks import check_place_shapes, check_validate_shapes, problem

from magnum_lib.regional import kernel_checks as _checks

cdef enum:
    MAX_IC = 4096
    MAX_SLOTS = 63
assert (MAX_IC, MAX_SLOTS) == (_checks.MAX_IC, _checks.MAX_SLOTS)

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


cdef intp_t validate_core(const int64_t[:, ::1] leases, int64_t[:, ::1] nodes,
                          const uint8_t[::1] ic_ok, intp_t n_ic, int64_t[:, ::1] slots, intp_t K,
                          time_ns now, bint preempt, int64_t[:, ::1] out,
                          int64_t[:, ::1] pre) noexcept nogil:
    cdef intp_t n_nodes = nodes.shape[0], n_pre = 0, r, i, s, base, last_s
    cdef int64_t last_p, prio, count, code, low, occ
    cdef int k, verdict
    cdef VictimSlots vs  # the node's slots as the lease rule reads them (pointers set per use)
    vs.prio_step = vs.count_step = vs.state_step = slots.shape[1]
    vs.live_lo = 0  # a slot runs a job when its job index is >= 0
    vs.live_hi = INT64_MAX
    for r in range(leases.shape[0]):
        out[r, 1] = -1
        i = leases[r, L_NODE]
        if i < 0 or i >= n_nodes:
            out[r, 0] = UNKNOWN_NODE
            continue
        if lease_expired(leases[r, L_EXPIRY], now):
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
        verdict = lease_verdict(nodes[i, N_FREE], count, preempt, nodes[i, N_MINPRIO], prio)
        if verdict == LR_NO_DEVICES:  # nobody here can be displaced
            out[r, 0] = INSUFFICIENT_DEVICES
            continue
        if verdict == LR_PREEMPT:
            # Find the last victim in (priority, slot) order before evicting anything.
            vs.prio = &slots[0, S_PRIO]
            vs.count = &slots[0, S_COUNT]
            vs.state = &slots[0, S_JOB]
            last_s = cover_victims(&vs, base, base + K, nodes[i, N_FREE], count, prio, &last_p)
            if last_s < 0:
                out[r, 0] = INSUFFICIENT_DEVICES
                continue
            low = NO_JOB_PRIO
            for s in range(base, base + K):
                if slots[s, S_JOB] < 0:
                    continue
                if is_victim(&vs, s, prio, last_p, last_s):
                    pre[n_pre, 0] = slots[s, S_JOB]
                    pre[n_pre, 1] = slots[s, S_START]
                    pre[n_pre, 2] = r
                    pre[n_pre, 3] = slots[s, S_COUNT]
                    pre[n_pre, 4] = slots[s, S_MEM]
                    n_pre += 1
                    nodes[i, N_FREE] += slots[s, S_COUNT]
                    nodes[i, N_OCC] &= ~((<int64_t>1) << (s - base))
                    slots[s, S_JOB] = -1
                elif slots[s, S_PRIO] < low:
                    low = slots[s, S_PRIO]
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


cdef int validate_contents_problem(const int64_t[:, ::1] leases, const int64_t[:, ::1] nodes,
                                   intp_t n_ic, const int64_t[:, ::1] slots, intp_t K,
                                   intp_t pre_rows, uint8_t[::1] seen) noexcept nogil:
    # kernel_checks.validate_contents_problem in C (same checks, same codes), each named
    # node once (``seen``, zeroed scratch of one byte per node): O(leases + nodes named x K),
    # so a round of 1,000 leases is checked in microseconds.
    cdef intp_t n_nodes = nodes.shape[0], n_leases = leases.shape[0], r, i, s, base
    cdef int64_t occ, count, held, free, running = 0, need
    cdef int64_t full = <int64_t>(((<uint64_t>1) << K) - 1)  # the K low bits (unsigned: K may be 63)
    for r in range(n_leases):
        if leases[r, L_COUNT] < 1:
            return 1
        if leases[r, L_IC] >= n_ic:
            return 2
    for r in range(n_leases):
        i = leases[r, L_NODE]
        if i < 0 or i >= n_nodes or seen[i]:
            continue  # out of range: refused as an unknown node, never read
        seen[i] = 1
        if nodes[i, N_IC] < 0 or nodes[i, N_IC] >= n_ic:
            return 3
        occ = nodes[i, N_OCC]
        base = i * K
        held = 0
        for s in range(K):
            if slots[base + s, S_JOB] >= 0:
                count = slots[base + s, S_COUNT]
                if count < 1 or count > K:
                    return 4
                held += count
                running += 1
                if not (occ >> s) & 1:
                    return 5
            elif (occ >> s) & 1:
                return 5
        if occ & ~full:
            return 5
        free = nodes[i, N_FREE]
        if free < 0 or free + held > K:
            return 6
    need = running + n_leases
    if n_leases * K < need:
        need = n_leases * K
    if pre_rows < need:
        return 7
    return 0


cdef int place_contents_problem(const int64_t[::1] view_free, const int64_t[:, ::1] nodes, intp_t n_ic,
                                const int64_t[:, ::1] requests, int policy,
                                const int32_t[:, ::1] draws) noexcept nogil:
    # kernel_checks.place_contents_problem in C (same checks, same codes).
    cdef intp_t n_nodes = view_free.shape[0], n_req = requests.shape[0], r, t, i
    for i in range(n_nodes):
        if nodes[i, N_IC] < 0 or nodes[i, N_IC] >= n_ic:
            return 3
    for r in range(n_req):
        if requests[r, 1] < 0:
            return 8
        if requests[r, 3] >= n_ic:
            return 9
    if policy != 1:
        for r in range(n_req if draws.shape[1] else 0):
            for t in range(draws.shape[1]):
                i = draws[r, t]
                if i < 0 or i >= n_nodes:
                    return 10
    return 0


cdef inline bint _apart(const void* a, Py_ssize_t na, const void* b, Py_ssize_t nb) noexcept nogil:
    # True when the byte ranges [a, a + na) and [b, b + nb) do not overlap.
    if na == 0 or nb == 0:
        return True
    return <const char*>a + na <= <const char*>b or <const char*>b + nb <= <const char*>a


cdef inline const void* _p2(const int64_t[:, ::1] x) noexcept nogil:
    return <const void*>&x[0, 0] if x.shape[0] and x.shape[1] else NULL


cdef inline Py_ssize_t _n2(const int64_t[:, ::1] x) noexcept nogil:
    return x.shape[0] * x.shape[1] * 8


cdef bint _validate_shapes_ok(const int64_t[:, ::1] leases, const int64_t[:, ::1] nodes,
                              const uint8_t[::1] ic_ok, intp_t n_ic, const int64_t[:, ::1] slots, intp_t K,
                              const int64_t[:, ::1] out, const int64_t[:, ::1] pre) noexcept nogil:
    # kernel_checks.check_validate_shapes's conditions, in C (no Python overhead per call).
    cdef const void* ptrs[6]
    cdef Py_ssize_t sizes[6]
    cdef int a, b
    if leases.shape[1] < 8 or nodes.shape[1] < 6 or slots.shape[1] < 6 or out.shape[1] < 2 \
            or pre.shape[1] < 5 or not 1 <= n_ic <= MAX_IC or not 1 <= K <= MAX_SLOTS \
            or slots.shape[0] != nodes.shape[0] * K or out.shape[0] < leases.shape[0] \
            or ic_ok.shape[0] != n_ic * n_ic:
        return False
    ptrs[0], sizes[0] = _p2(nodes), _n2(nodes)  # the four outputs first, then the inputs
    ptrs[1], sizes[1] = _p2(slots), _n2(slots)
    ptrs[2], sizes[2] = _p2(out), _n2(out)
    ptrs[3], sizes[3] = _p2(pre), _n2(pre)
    ptrs[4], sizes[4] = _p2(leases), _n2(leases)
    ptrs[5], sizes[5] = (<const void*>&ic_ok[0] if ic_ok.shape[0] else NULL), ic_ok.shape[0]
    for a in range(4):
        for b in range(a + 1, 6):
            if not _apart(ptrs[a], sizes[a], ptrs[b], sizes[b]):
                return False
    return True


def validate_batch(leases_a, nodes_a, ic_ok_a, n_ic_, slots_a, K_, now_, preempt, out_a, pre_a):
    """Validate leases in order against the true node state; return the preempted-job count.

    Checked first, exactly as ``kernel_checks.check_validate_inputs`` checks (types,
    shapes and aliasing, then the contents, both in C here; on a failure the Python
    check runs to raise its message): the nogil core indexes ``ic_ok``, the slots and
    ``pre`` by values held in the arrays.
    """
    cdef const int64_t[:, ::1] leases
    cdef int64_t[:, ::1] nodes, slots, out, pre
    cdef const uint8_t[::1] ic_ok
    cdef intp_t n_ic, K, n = 0
    cdef time_ns now
    cdef bint pre_flag = preempt, ok = False
    cdef int code
    if type(n_ic_) is not int or type(K_) is not int or type(now_) is not int:  # numpy ints, or wrong
        n_ic_, K_, now_ = check_validate_shapes(leases_a, nodes_a, ic_ok_a, n_ic_, slots_a, K_, now_,
                                                preempt, out_a, pre_a)
    if leases_a is not None and nodes_a is not None and ic_ok_a is not None and slots_a is not None \
            and out_a is not None and pre_a is not None:
        try:
            leases, nodes, ic_ok, slots, out, pre = leases_a, nodes_a, ic_ok_a, slots_a, out_a, pre_a
            n_ic, K, now = n_ic_, K_, now_
            ok = _validate_shapes_ok(leases, nodes, ic_ok, n_ic, slots, K, out, pre)
        except (TypeError, ValueError, OverflowError, BufferError):
            ok = False
    if not ok:
        check_validate_shapes(leases_a, nodes_a, ic_ok_a, n_ic_, slots_a, K_, now_, preempt, out_a, pre_a)
        raise ValueError("validate_batch: inconsistent arguments")  # the line above names the problem
    seen_a = np.zeros(nodes.shape[0], dtype=np.uint8)
    cdef uint8_t[::1] seen = seen_a
    with nogil:
        code = validate_contents_problem(leases, nodes, n_ic, slots, K, pre.shape[0], seen)
        if code == 0:
            n = validate_core(leases, nodes, ic_ok, n_ic, slots, K, now, pre_flag, out, pre)
    if code:
        raise problem(code)
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
            best = a if b < 0 else better_of_two(a, view_free[a], b, view_free[b])  # b >= 0: a >= 0
        out_node[r] = best
        if best >= 0:
            view_free[best] -= requests[r, 1]
            placed += 1
    return placed


cdef bint _place_shapes_ok(const int64_t[::1] view_free, const int64_t[:, ::1] nodes,
                           const uint8_t[::1] ic_ok, intp_t n_ic, const int64_t[:, ::1] requests, int policy,
                           const int32_t[:, ::1] draws, const int64_t[:, ::1] hints,
                           const int64_t[::1] out_node) noexcept nogil:
    # kernel_checks.check_place_shapes's conditions, in C.
    cdef intp_t n_req = requests.shape[0]
    cdef const void* vf = <const void*>&view_free[0] if view_free.shape[0] else NULL
    cdef const void* on = <const void*>&out_node[0] if out_node.shape[0] else NULL
    cdef Py_ssize_t nvf = view_free.shape[0] * 8, non = out_node.shape[0] * 8
    cdef const void* dr = <const void*>&draws[0, 0] if draws.shape[0] and draws.shape[1] else NULL
    cdef Py_ssize_t ndr = draws.shape[0] * draws.shape[1] * 4
    cdef const void* ic = <const void*>&ic_ok[0] if ic_ok.shape[0] else NULL
    if nodes.shape[1] < 6 or requests.shape[1] < 4 or not 1 <= n_ic <= MAX_IC or not 0 <= policy <= 3 \
            or nodes.shape[0] != view_free.shape[0] or out_node.shape[0] < n_req \
            or (policy != 1 and draws.shape[1] and draws.shape[0] < n_req) \
            or (policy == 3 and hints.shape[1] and hints.shape[0] < n_req) \
            or ic_ok.shape[0] != n_ic * n_ic:
        return False
    return (_apart(vf, nvf, on, non) and _apart(vf, nvf, _p2(nodes), _n2(nodes))
            and _apart(on, non, _p2(nodes), _n2(nodes)) and _apart(vf, nvf, ic, ic_ok.shape[0])
            and _apart(on, non, ic, ic_ok.shape[0]) and _apart(vf, nvf, _p2(requests), _n2(requests))
            and _apart(on, non, _p2(requests), _n2(requests)) and _apart(vf, nvf, dr, ndr)
            and _apart(on, non, dr, ndr) and _apart(vf, nvf, _p2(hints), _n2(hints))
            and _apart(on, non, _p2(hints), _n2(hints)))


def place_batch(view_free_a, nodes_a, ic_ok_a, n_ic_, requests_a, policy_, draws_a, hints_a, out_node_a):
    """Place requests from a view with a policy (0 random, 1 least-loaded, 2 two-choices, 3 hints).

    Checked first, exactly as ``kernel_checks.check_place_inputs`` checks (in C here; on
    a failure the Python check runs to raise its message): draws and interconnect codes
    index the arrays.
    """
    cdef int64_t[::1] view_free, out_node
    cdef const int64_t[:, ::1] nodes, requests, hints
    cdef const uint8_t[::1] ic_ok
    cdef const int32_t[:, ::1] draws
    cdef intp_t n_ic, n = 0
    cdef int policy, code
    cdef bint ok = False
    if type(n_ic_) is not int or type(policy_) is not int:  # numpy ints, or wrong
        n_ic_, policy_ = check_place_shapes(view_free_a, nodes_a, ic_ok_a, n_ic_, requests_a, policy_, draws_a,
                                            hints_a, out_node_a)
    if view_free_a is not None and nodes_a is not None and ic_ok_a is not None and requests_a is not None \
            and draws_a is not None and hints_a is not None and out_node_a is not None:
        try:
            view_free, nodes, ic_ok, requests, draws, hints, out_node = (
                view_free_a, nodes_a, ic_ok_a, requests_a, draws_a, hints_a, out_node_a)
            n_ic, policy = n_ic_, policy_
            ok = _place_shapes_ok(view_free, nodes, ic_ok, n_ic, requests, policy, draws, hints, out_node)
        except (TypeError, ValueError, OverflowError, BufferError):
            ok = False
    if not ok:
        check_place_shapes(view_free_a, nodes_a, ic_ok_a, n_ic_, requests_a, policy_, draws_a, hints_a,
                           out_node_a)
        raise ValueError("place_batch: inconsistent arguments")  # the line above names the problem
    with nogil:
        code = place_contents_problem(view_free, nodes, n_ic, requests, policy, draws)
        if code == 0:
            n = place_core(view_free, nodes, ic_ok, n_ic, requests, policy, draws, hints, out_node)
    if code:
        raise problem(code)
    return n
