"""Compiled fill loop: same signature and numbers as :mod:`magnum_lib.replay.fill_ref`.

Placements ``fgd`` (code 0), ``best-fit`` (1) and ``first-fit`` (2); ``random`` stays in
the reference (it draws from NumPy's generator). Fragmentation is computed in int64
(milli-GPU x class pod counts), so both backends agree exactly, ties included: FGD takes
the first candidate (GPU order) with the least fragmentation growth, as the reference's
lexsort does.
"""
import numpy as np

from magnum_lib.base.validate import ParameterError

DEF FULL = 1000


cdef long long _row_frag(long long[:, ::1] M, Py_ssize_t n, long long[::1] k, long long[::1] r,
                         long long[::1] w) noexcept nogil:
    """Weighted fragmentation of node ``n`` (see :func:`magnum_lib.replay.fgd.fragmentation`)."""
    cdef Py_ssize_t s, c, G = M.shape[1]
    cdef long long v, total = 0, full = 0, out = 0, small, part
    cdef bint fits
    for s in range(G):
        v = M[n, s]
        if v > 0:
            total += v
        if v == FULL:
            full += 1
    for c in range(k.shape[0]):
        small = 0
        if r[c] < FULL:
            fits = False
            for s in range(G):
                v = M[n, s] if M[n, s] > 0 else 0
                if v >= r[c]:
                    fits = True
                else:
                    small += v
        else:
            fits = full >= k[c]
            for s in range(G):
                v = M[n, s] if M[n, s] > 0 else 0
                if v < FULL:
                    small += v
        part = small if fits else total
        out += w[c] * part
    return out


cdef inline bint _ok(long long bits, long long t) noexcept nogil:
    return bits == 0 or ((bits >> t) & 1) == 1


cdef Py_ssize_t _take_idle(long long[:, ::1] M, Py_ssize_t n, long long g, Py_ssize_t* out) noexcept nogil:
    """The first ``g`` idle slots of node ``n`` into ``out``; how many were found."""
    cdef Py_ssize_t s, got = 0
    for s in range(M.shape[1]):
        if got < g and M[n, s] == FULL:
            out[got] = s
            got += 1
    return got


cdef struct Pick:
    Py_ssize_t node             # the chosen node so far (-1: none)
    Py_ssize_t nslots           # how many of its slots (best_slots[0..nslots)) the pod takes
    long long score             # fgd: fragmentation growth; best-fit: the node's free milli-GPUs


cdef inline void _pick(Pick* p, Py_ssize_t n, long long score, Py_ssize_t nslots) noexcept nogil:
    """Make node ``n`` (taking ``nslots`` slots, with ``score``) the pick so far."""
    p.node, p.score, p.nslots = n, score, nslots


cdef inline void _fgd_shared(long long[:, ::1] M, Py_ssize_t n, long long m, long long[::1] k,
                             long long[::1] r, long long[::1] w, long long[::1] base, Pick* p,
                             Py_ssize_t* best_slots) noexcept nogil:
    """FGD, a fraction of a GPU: try every distinct fitting GPU of node ``n``."""
    cdef Py_ssize_t s, q
    cdef long long d
    cdef bint dup
    for s in range(M.shape[1]):
        if M[n, s] < m:
            continue
        dup = False                # an equal GPU earlier on this node: same growth
        for q in range(s):
            if M[n, q] == M[n, s]:
                dup = True
                break
        if dup:
            continue
        M[n, s] -= m
        d = _row_frag(M, n, k, r, w) - base[n]
        M[n, s] += m
        if p.node < 0 or d < p.score:
            _pick(p, n, d, 1)
            best_slots[0] = s


cdef inline void _best_fit_shared(long long[:, ::1] M, Py_ssize_t n, long long m, Pick* p,
                                  Py_ssize_t* slots, Py_ssize_t* best_slots) noexcept nogil:
    """Best-fit, a fraction of a GPU: the least free node, then its fullest fitting GPU."""
    cdef Py_ssize_t s, got = 0
    cdef long long free_n = 0
    for s in range(M.shape[1]):
        if M[n, s] > 0:
            free_n += M[n, s]
        if M[n, s] >= m and (got == 0 or M[n, s] < M[n, slots[0]]):
            slots[0] = s
            got = 1
    if got and (p.node < 0 or free_n < p.score):
        _pick(p, n, free_n, 1)
        best_slots[0] = slots[0]


cdef inline void _first_fit_shared(long long[:, ::1] M, Py_ssize_t n, long long m, Pick* p,
                                   Py_ssize_t* best_slots) noexcept nogil:
    """First-fit, a fraction of a GPU: the first fitting GPU of node ``n``."""
    cdef Py_ssize_t s
    for s in range(M.shape[1]):
        if M[n, s] >= m:
            _pick(p, n, p.score, 1)
            best_slots[0] = s
            break


cdef inline void _whole(long long[:, ::1] M, Py_ssize_t n, long long g, long long[::1] k,
                        long long[::1] r, long long[::1] w, int code, long long[::1] base, Pick* p,
                        Py_ssize_t* slots, Py_ssize_t* best_slots) noexcept nogil:
    """Whole GPUs: node ``n``'s first ``g`` idle GPUs, scored by the placement ``code``."""
    cdef Py_ssize_t s, q, got = _take_idle(M, n, g, slots)
    cdef long long d, free_n = 0
    if got < g:
        return
    if code == 0:
        for q in range(got):
            M[n, slots[q]] = 0
        d = _row_frag(M, n, k, r, w) - base[n]
        for q in range(got):
            M[n, slots[q]] = FULL
        if not (p.node < 0 or d < p.score):
            return
        _pick(p, n, d, got)
    elif code == 1:
        for s in range(M.shape[1]):
            if M[n, s] > 0:
                free_n += M[n, s]
        if not (p.node < 0 or free_n < p.score):
            return
        _pick(p, n, free_n, got)
    else:
        _pick(p, n, p.score, got)
    for q in range(got):
        best_slots[q] = slots[q]


cdef void _core(long long[:, ::1] M, long long[::1] milli, long long[::1] gpus, long long[::1] mask,
                long long[::1] node_type, long long[::1] k, long long[::1] r, long long[::1] w,
                int code, long long[::1] base, long long[::1] node, long long[::1] frag,
                Py_ssize_t* slots, Py_ssize_t* best_slots) noexcept nogil:
    """Place each pod in turn on the node its placement ``code`` picks; its node and the total after."""
    cdef Py_ssize_t N = M.shape[0], j, n, q
    cdef long long m, total = 0
    cdef Pick p
    for n in range(N):
        base[n] = _row_frag(M, n, k, r, w)
        total += base[n]
    for j in range(milli.shape[0]):
        m = milli[j]
        _pick(&p, -1, 0, 0)
        for n in range(N):
            if not _ok(mask[j], node_type[n]):
                continue
            if m < FULL and code == 0:
                _fgd_shared(M, n, m, k, r, w, base, &p, best_slots)
            elif m < FULL and code == 1:
                _best_fit_shared(M, n, m, &p, slots, best_slots)
            elif m < FULL:
                _first_fit_shared(M, n, m, &p, best_slots)
            else:
                _whole(M, n, gpus[j], k, r, w, code, base, &p, slots, best_slots)
            if code == 2 and p.node >= 0:
                break
        if p.node >= 0:                        # place the pod; the node's fragmentation anew
            for q in range(p.nslots):
                M[p.node, best_slots[q]] -= m
            total -= base[p.node]
            base[p.node] = _row_frag(M, p.node, k, r, w)
            total += base[p.node]
        node[j] = p.node
        frag[j] = total


def fill_core(M, milli, gpus, mask, node_type, k, r, w, code, seed):
    """See :mod:`magnum_lib.replay.fill_ref` (``seed`` is unused: no placement here draws)."""
    code = int(code)
    if code not in (0, 1, 2):
        raise ParameterError("placement", "the compiled fill handles fgd, best-fit and first-fit")
    cdef long long[:, ::1] Mv = np.ascontiguousarray(M, dtype=np.int64)
    arrs = [np.ascontiguousarray(a, dtype=np.int64) for a in (milli, gpus, mask, node_type, k, r, w)]
    cdef Py_ssize_t n = arrs[0].shape[0], G = Mv.shape[1]
    if any(a.shape[0] != n for a in arrs[1:3]) or arrs[3].shape[0] != Mv.shape[0] \
            or not (arrs[4].shape[0] == arrs[5].shape[0] == arrs[6].shape[0]):
        raise ParameterError("jobs", "pod, node and class arrays must have matching lengths")
    if n and (arrs[0].min() < 1 or arrs[0].max() > FULL or arrs[1].min() < 1):
        raise ParameterError("jobs", "need gpu_milli in [1, 1000] and num_gpus >= 1 per pod")
    cdef long long[::1] mi = arrs[0], gp = arrs[1], ma = arrs[2], nt = arrs[3], kk = arrs[4], rr = arrs[5], ww = arrs[6]
    base = np.zeros(Mv.shape[0], np.int64)
    node = np.full(n, -1, np.int64)
    frag = np.zeros(n, np.int64)
    slots_a = np.zeros(max(G, 1), np.intp)
    best_a = np.zeros(max(G, 1), np.intp)
    cdef long long[::1] bv = base, nv = node, fv = frag
    cdef Py_ssize_t[::1] sv = slots_a, bsv = best_a
    cdef int c = code
    with nogil:
        _core(Mv, mi, gp, ma, nt, kk, rr, ww, c, bv, nv, fv, &sv[0], &bsv[0])
    return node, frag
