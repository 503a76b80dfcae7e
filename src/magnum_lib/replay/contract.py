"""The replay kernels' contract, once: their codes and the fields of their state structs.

Two compiled kernels keep their whole state in one C struct: ``_gavel_rounds.pyx``
(``RoundsState``) and ``_fastloop.pyx`` (``Ctx``). Each includes a ``.pxi`` that
``scripts/gen_replay_contract.py`` generates from this module: the codes as ``cdef enum``s,
the int64 constants, the struct with every field's C type, and the binding functions
that set the options by name and the arrays' data pointers by name. The readable twins
(``event_loop.py``, ``api.py``, ``gavel_rounds.py``, ``fastloop_adapter.py``) import the
codes they share from here. ``tests/test_replay_contract.py`` checks that the committed
``.pxi`` files are current and that every field is used.

Each struct's fields, by how the wrapper fills them:

- ``*_OPTIONS``: ``(name, C type)``: scalars the wrapper sets by name before the loop.
- ``*_ARRAYS``: ``(name, dtype, length rule, fill)``: arrays the wrapper hands over. The
  rule is a Python expression over the sizes (``*_SIZES``); ``fill`` is ``IN`` (given,
  read only: a ``const`` pointer), ``GIVEN`` (given, written by the kernel) or a number
  (a new array of that value, made by :func:`new_arrays`). :func:`check_given` checks
  each given array's dtype, layout and length before the nogil loop.
- ``*_STATE``: ``(name, C type, initial value)``: scalars the loop keeps, set before it.
- ``*_OWNED``: ``(name, C type)``: memory the kernel allocates and frees itself.

A new field is one entry here (then ``python scripts/gen_replay_contract.py``) plus its use.
"""
from __future__ import annotations

from types import CodeType
from typing import TypedDict

import numpy as np

from magnum_lib.base.validate import ParameterError

# -- shared by both kernels and the readable loop ---------------------------------------
NS_S = 1_000_000_000
# A job's status (``status`` arrays of the loop and of both kernels).
JOB_NEW, JOB_WAIT, JOB_RUN, JOB_DONE = range(4)
JOB_STATUS_NAMES = ("not submitted yet", "waiting", "running", "finished")

# -- _gavel_rounds.pyx ---------------------------------------------------------------------
# Error codes (``RoundsState.err``).
E_NONE = 0
E_PY = 1          # a callback raised: re-raised by the wrapper
E_STUCK = 2       # waiting jobs, nothing running, nothing to come
E_NOFIT = 3       # (internal) a chosen job does not fit
E_LAG = 4         # (internal) a job outlived its last micro-task
E_MEM = 5
NEVER = 2**63 - 1
EXACT = 2**53     # below: now / 1e9 in doubles is Python's int / int
LAG_NS = 10_000   # most work (ns) a job may have left when its last micro-task ends

IN, GIVEN = "in", "given"

ROUNDS_SIZES = ("n", "m", "T")   # jobs, max(n, 1) (arrays never empty), GPU types
ROUNDS_OPTIONS = (
    ("n", "Py_ssize_t"), ("T", "Py_ssize_t"), ("fifo", "bint"), ("iteration_s", "double"),
    ("reset_s", "double"), ("half", "double"), ("restore_ns", "int64_t"), ("last_submit", "int64_t"),
    # callbacks (borrowed; the wrapper holds them; None: NULL)
    ("allocate", "PyObject*"), ("permute", "PyObject*"), ("errbox", "PyObject*"), ("holder", "PyObject*"),
)
_M, _MT, _2M = "m", "m * T", "2 * m"
ROUNDS_ARRAYS = (
    # inputs (read only)
    ("submit", "int64", _M, IN), ("gpus", "int64", _M, IN),
    ("speed", "float64", _MT, IN),              # jobs x types (engine speed)
    ("thr", "float64", _MT, IN),                # jobs x types (Gavel's steps/s)
    ("N", "int64", "T", IN),                    # GPUs per type
    ("type_order", "int64", "T", IN),
    ("wf_thr", "float64", _M, IN),              # the max-min LP's thr per job (waterfill); None: NULL
    # given, written: the work left, the free GPUs, Gavel's steps left, and the outputs
    ("rem", "int64", _M, GIVEN), ("free_t", "int64", "T", GIVEN), ("steps_left", "float64", _M, GIVEN),
    ("status", "int8", _M, GIVEN),              # JOB_* codes
    ("first", "int64", _M, GIVEN), ("fin", "int64", _M, GIVEN), ("pre", "int64", _M, GIVEN),
    ("held", "int64", _M, GIVEN),               # ns each job held its GPUs (run time plus restores)
    # the waterfill: a_j = ((1 / thr_j) s_j) thr_j (0 where thr_j = 0); per active position: x = 1
    ("wf_a", "float64", _M, 0), ("wf_frozen", "uint8", _M, 0),
    # engine state
    ("overhead", "int64", _M, 0), ("erate", "float64", _M, 1.0), ("jtype", "int64", _M, -1),
    ("running", "int64", _M, 0),                # running job ids (unordered)
    ("run_pos", "int64", _M, -1),               # index in running, -1 if not running
    # policy state
    ("ran", "float64", _MT, 0), ("ran_all", "float64", "T", 0), ("deficit", "float64", _MT, 0),
    ("alloc", "float64", _MT, 0), ("in_alloc", "uint8", _M, 0), ("act_flag", "uint8", _M, 0),
    ("active", "int64", _M, 0),                 # active ids, ascending (arrival order)
    ("fifo_in", "uint8", _M, 0), ("fifo_ids", "int64", _M, 0), ("fifo_tmp", "int64", _M, 0),
    ("queue_tmp", "int64", _M, 0), ("in_round", "uint8", _M, 0), ("is_last", "uint8", _M, 0),
    ("rj_end", "int64", _M, 0),                 # end of the micro-task on our clock (ns)
    ("rs_type", "int64", _M, 0), ("rs_steps", "float64", _M, 0),
    ("rs_end", "float64", _M, 0),               # end on Gavel's clock (s)
    ("rlist", "int64", _M, 0),                  # jobs of the current round, in the order chosen
    # one round's choice: entries (kept entries at 0.., the rest at m..) and their sort
    ("ent_j", "int64", _2M, 0), ("ent_p", "float64", _2M, 0), ("ent_d", "float64", _2M, 0),
    ("ent_a", "float64", _2M, 0), ("idx", "int64", _2M, 0), ("idx2", "int64", _2M, 0),
    ("runs", "intp", "m + 2", 0),               # the natural merge sort's run starts
    # each type's list as last ranked (job ids), to rank the next round's list by a merge
    ("ord", "int64", _MT, 0), ("nord", "intp", "T", 0),
    ("ord_upto", "intp", "T", 0),               # jobs < this id were known when it was ranked
    ("moved", "uint8", _M, 0),                  # job ran (or arrived) since the last ranking
    ("mv", "int64", _M, 0),                     # those jobs
    ("left", "int64", "T", 0), ("taken", "uint8", _M, 0),
    ("cj", "int64", _M, 0), ("ct", "int64", _M, 0), ("cr", "uint8", _M, 0),   # chosen: job, type, runs
    ("run_type", "int64", _M, -1),              # job -> type it runs on this round, -1 none
    ("order", "int64", "T", 0),
    # decisions of one call
    ("dpre", "int64", _M, 0), ("dstart", "int64", _M, 0), ("dstype", "int64", _M, 0),
)
ROUNDS_OPTIONAL = ("wf_thr",)
ROUNDS_STATE = (
    ("nrun", "Py_ssize_t", 0), ("now", "int64_t", 0), ("na", "Py_ssize_t", 0), ("known_upto", "Py_ssize_t", 0),
    ("nfifo", "Py_ssize_t", 0), ("nround", "Py_ssize_t", 0),
    ("round_set", "bint", False), ("round_end", "int64_t", 0), ("round_start", "double", 0.0),
    ("stop_set", "bint", False), ("round_stop", "double", 0.0), ("need_update", "bint", True),
    ("last_reset", "double", 0.0),
    ("nmv", "Py_ssize_t", 0),
    ("rerank", "bint", True),                   # an allocation reset since the last ranking: rank all anew
    ("nchosen", "Py_ssize_t", 0),
    # the blind policy's type orders, drawn in batches (perms: the batch ``holder`` keeps)
    ("perms", "int64_t*", None), ("nperm", "Py_ssize_t", 0), ("perm_at", "Py_ssize_t", 0),
    ("ndpre", "Py_ssize_t", 0), ("ndstart", "Py_ssize_t", 0), ("wake", "int64_t", -1),
    ("err", "int", E_NONE), ("err_job", "int64_t", -1),
)
ROUNDS_OWNED: tuple[tuple[str, str], ...] = ()

# -- _fastloop.pyx -------------------------------------------------------------------------
# Policy kinds (``Ctx.kind``), by the names of the policies' ``fast`` specs.
K_STRICT, K_SKIP, K_SJF, K_SRTF, K_LAS = range(5)
KINDS = {"fifo-strict": K_STRICT, "fifo-skip": K_SKIP, "sjf": K_SJF, "srtf": K_SRTF, "las": K_LAS}
# SJF's and SRTF's rank key (``Ctx.by``): work (or remaining work), GPUs, or their product.
BY_WORK, BY_GPUS, BY_GPU_TIME = range(3)
BY = {"duration": BY_WORK, "time": BY_WORK, "gpus": BY_GPUS, "gpu_time": BY_GPU_TIME}
LAS_OFF = 1 << 43   # LAS keys: (queue << 44) + (order + LAS_OFF)

FAST_SIZES = ("n", "total", "nb", "nlim")   # jobs (>= 1), GPUs, GPU-count buckets, LAS limits
FAST_OPTIONS = (
    ("n", "Py_ssize_t"), ("kind", "int"),
    ("by", "int"),                              # BY_* code
    ("sjf_pre", "bint"),                        # preemptive SJF
    ("total", "int64_t"), ("restore", "int64_t"), ("nlim", "int"), ("knob", "double"),
    ("tjump", "bint"),                          # Tiresias' demotion wake-up formula (see TiresiasLAS)
    ("nb", "Py_ssize_t"),
)
FAST_ARRAYS = (
    ("submit", "int64", "n", IN), ("work", "int64", "n", IN), ("gpus", "int64", "n", IN),
    ("lim", "int64", "max(nlim, 1)", IN),       # LAS queue limits (GPU-ns)
    ("bucket_of", "int64", "n", IN),            # each job's bucket (by GPU count)
    ("bsize", "int64", "nb", IN),               # each bucket's GPU count, ascending
    # given, written: the work left, and the outputs
    ("rem", "int64", "n", GIVEN), ("start", "int64", "n", GIVEN), ("finish", "int64", "n", GIVEN),
    ("preempts", "int64", "n", GIVEN), ("att", "int64", "n", GIVEN),
    # per-job state
    ("status", "int8", "n", 0),                 # JOB_* codes
    ("ovh", "int64", "n", 0),
    ("key", "int64", "n", 0),                   # current rank key (waiting jobs: the valid heap key)
    # LAS
    ("q", "int64", "n", 0), ("seq", "int64", "n", 0), ("base", "int64", "n", 0), ("starve", "int64", "n", 0),
    ("in_starv", "int8", "n", 0),
    ("dem_t", "int64", "n", -1),                # the valid demotion time of each running job (-1: none)
    # running jobs in rank order, and scratch for small lists
    ("run", "int64", "total + 1", 0), ("tmp", "int64", "total + n + 1", 0),
    ("tmp2", "int64", "total + n + 1", 0), ("starv", "int64", "n + 1", 0),
)
FAST_OPTIONAL: tuple[str, ...] = ()
FAST_STATE = (
    ("counter", "int64_t", 0), ("front", "int64_t", 0),
    ("reordered", "bint", False),               # a LAS demotion or promotion happened at this instant
    ("nrun", "Py_ssize_t", 0), ("nstarv", "Py_ssize_t", 0),
    ("nu", "Py_ssize_t", 0),                    # the utilization timeline's length
)
FAST_OWNED = (
    ("dem", "Heap"),                            # (demotion time, job) of running jobs; stale entries skipped
    ("heaps", "Heap*"),                         # one per bucket
    ("ut", "int64_t*"), ("ub", "double*"),      # the utilization timeline
    ("ucap", "Py_ssize_t"),                     # its capacity
)



class Kernel(TypedDict):
    """One kernel's struct: its name, sizes, fields by kind, and the code groups and
    constants its .pxi declares."""

    struct: str
    sizes: tuple[str, ...]
    options: tuple[tuple[str, str], ...]
    arrays: tuple[tuple[str, str, str, str | float], ...]
    optional: tuple[str, ...]
    state: tuple[tuple[str, str, int | float | None], ...]
    owned: tuple[tuple[str, str], ...]
    codes: tuple[str, ...]
    constants: tuple[str, ...]


#: The two structs: their name, fields and sizes, by kernel.
KERNELS: dict[str, Kernel] = {
    "gavel_rounds": Kernel(struct="RoundsState", sizes=ROUNDS_SIZES, options=ROUNDS_OPTIONS, arrays=ROUNDS_ARRAYS,
                           optional=ROUNDS_OPTIONAL, state=ROUNDS_STATE, owned=ROUNDS_OWNED,
                           codes=("E",), constants=("NS_S", "NEVER", "EXACT", "LAG_NS")),
    "fastloop": Kernel(struct="Ctx", sizes=FAST_SIZES, options=FAST_OPTIONS, arrays=FAST_ARRAYS,
                       optional=FAST_OPTIONAL, state=FAST_STATE, owned=FAST_OWNED,
                       codes=("K", "BY"), constants=("NS_S", "LAS_OFF")),
}
SHARED_CODES = ("JOB",)

_RULES: dict[str, CodeType] = {}  # the length rules, compiled once
_ALL_RULES: dict[str, tuple[tuple[str, ...], CodeType]] = {}   # each kernel's, as one tuple
_PLANS: dict[str, tuple[list, list, set]] = {}


def codes(prefix: str) -> list[tuple[str, int]]:
    """The ``(name, value)`` pairs of one code group, by value."""
    return sorted(((k, v) for k, v in globals().items()
                   if k.startswith(prefix + "_") and k.split("_")[0] == prefix and isinstance(v, int)),
                  key=lambda kv: kv[1])


def length(rule: str, sizes: dict) -> int:
    """The number of items an array must have by its rule, given the sizes."""
    code = _RULES.get(rule)
    if code is None:
        code = _RULES[rule] = compile(rule, rule, "eval")
    return int(eval(code, {"__builtins__": {}, "max": max}, sizes))  # noqa: S307 - this module's literals


def _lengths(kernel: str, sizes: dict) -> dict[str, int]:
    """Each length rule of the kernel's arrays, evaluated (all in one ``eval``: this runs at
    every kernel call)."""
    rules = _ALL_RULES.get(kernel)
    if rules is None:
        names = tuple(sorted({a[2] for a in KERNELS[kernel]["arrays"]}))
        rules = _ALL_RULES[kernel] = (names, compile(f"({', '.join(names)},)", kernel, "eval"))
    values = eval(rules[1], {"__builtins__": {}, "max": max}, sizes)  # noqa: S307 - this module's literals
    return dict(zip(rules[0], values, strict=True))


def _plan(kernel: str) -> tuple[list, list, set]:
    """The kernel's made and given arrays as ``(name, np.dtype, rule, fill)``, and the given
    names (built once: the functions below run at every kernel call)."""
    plan = _PLANS.get(kernel)
    if plan is None:
        rows = [(name, np.dtype(dtype), rule, fill) for name, dtype, rule, fill in KERNELS[kernel]["arrays"]]
        given = [r for r in rows if r[3] in (IN, GIVEN)]
        plan = _PLANS[kernel] = ([r for r in rows if r[3] not in (IN, GIVEN)], given, {r[0] for r in given})
    return plan


def new_arrays(kernel: str, sizes: dict) -> dict:
    """The kernel's arrays that have a fill value, new, by name."""
    n = _lengths(kernel, sizes)
    return {name: np.zeros(n[rule], dtype) if fill == 0 else np.full(n[rule], fill, dtype)
            for name, dtype, rule, fill in _plan(kernel)[0]}


def check_given(kernel: str, given: dict, sizes: dict) -> None:
    """Refuse (ParameterError naming the array) given arrays that do not match the contract:
    every given name once, numpy, C-contiguous, the dtype, the length by the rule, writable
    unless read only (``None`` only for an optional one)."""
    spec, (_, rows, names) = KERNELS[kernel], _plan(kernel)
    if given.keys() != names:
        extra, missing = sorted(given.keys() - names), sorted(names - given.keys())
        raise ParameterError("arrays", f"{spec['struct']}: unknown {extra}, missing {missing}")
    n = _lengths(kernel, sizes)
    for name, dtype, rule, fill in rows:
        a = given[name]
        if a is None and name in spec["optional"]:
            continue
        flags = a.flags if isinstance(a, np.ndarray) else None
        if flags is None or a.dtype != dtype or not flags.c_contiguous or a.size != n[rule] \
                or (fill != IN and not flags.writeable):
            got = f"{a.dtype} x {a.size}" if isinstance(a, np.ndarray) else type(a).__name__
            raise ParameterError(name, f"{spec['struct']}.{name} must be a C-contiguous"
                                       f"{'' if fill == IN else ', writable'} {dtype} array of "
                                       f"{rule} = {n[rule]} items, got {got}")
