"""The simulator core's contract, once: its codes, its parameters and its arrays.

Both cores read this module: ``core_ref.py`` imports the codes and ``PARAMS``, and the
compiled ``_core.pyx`` includes ``_core_contract.pxi``, which ``scripts/gen_core_contract.py``
generates from this module (the same codes as ``cdef enum``s, and a ``CoreState`` base
class that declares every parameter and typed array and binds them by name). The wiring
(``model.build_region``) builds the arrays and the parameters by these names;
``tests/test_sim_contract.py`` checks that the committed ``.pxi`` is current and that a
built region matches every name, dtype and length rule below.

A new integer parameter is one entry in ``PARAMS`` (then regenerate the ``.pxi``) plus
its use: its value in the wiring (``model._core_params``) and the code that reads
``self.<name>``.
"""
from __future__ import annotations

# -- codes (each group is one ``cdef enum`` in the .pxi) ----------------------------------
# Event kinds (low 3 bits of the heap payload).
EV_ROUND, EV_LEASE, EV_FINISH, EV_HEDGE, EV_GOSSIP, EV_RETRY, EV_CKPT = range(7)
# Placement policies (the wiring's cfg.policy, in this order).
POL_RANDOM, POL_SCAN, POL_TWO, POL_HASH, POL_HINTS = range(5)
# How the scheduler sees the nodes.
VIEW_FRESH, VIEW_ROUND, VIEW_GOSSIP = range(3)
# Preemption modes.
PRE_NONE, PRE_CHECKPOINT, PRE_MICRO = range(3)
# Request status.
ST_WAIT, ST_RUN, ST_DONE, ST_DROP = range(4)
# Components of decision latency (columns of ``comp``).
C_ROUND, C_SCHED, C_RTT, C_VALID, C_RETRY, C_DISPATCH = range(6)
# Counters (indices into ``cnt``).
(K_EVENTS, K_ROUNDS, K_LEASES, K_ACCEPT, K_ACCEPT_MICRO, K_ACCEPT_CKPT, K_QUEUED, K_REFUSED,
 K_EXPIRED, K_NOFIT, K_DROPPED, K_HEDGES, K_HEDGE_NONE, K_HEDGE_WON, K_HEDGE_NS, K_EVICT,
 K_RESUMED, K_LOST_NS, K_CKPT_NS, K_MICRO_NS, K_EXAMINED, K_VIEW_AGE_NS, K_VIEW_SAMPLES,
 K_GOSSIP, K_DONE, K_PAUSED, K_UNPAUSED) = range(27)
# Trace event codes (column 1 of ``trace``).
(TR_ARRIVE, TR_ROUND, TR_PLACED, TR_NOFIT, TR_LEASE, TR_REFUSED, TR_QUEUED, TR_START, TR_HEDGE, TR_FINISH, TR_DROP,
 TR_PAUSE, TR_RESUME) = range(13)
# Copy states (``cstate``).
CS_NONE, CS_RUN, CS_ENDED, CS_PAUSED = range(4)
# Sizes.
N_COUNTERS = 27
TRACE_ROWS = 64

#: The code groups, by prefix: every module-level int named ``<prefix>_*`` belongs to it.
CODE_GROUPS = ("EV", "POL", "VIEW", "PRE", "ST", "C", "K", "TR", "CS")
SIZES = ("N_COUNTERS", "TRACE_ROWS")

# -- parameters: int64 scalars, passed by name -------------------------------------------
PARAMS = ("n_nodes", "n_req", "n_types", "n_cls", "n_sched", "round_ns", "rtt_half_ns", "c_round_ns",
          "c_dec_ns", "c_node_ns", "c_val_ns", "quantum_ns", "policy", "view_mode", "preempt",
          "micro_ns", "hedge_milli", "node_queue", "lease_ns", "max_attempts", "gossip_ns", "ring_m",
          "trace_id", "ckpt_interval_ns", "train_prio", "draws", "scan_limit", "piggyback", "seed",
          "part_start_ns", "part_end_ns", "n_rank", "resume_ns", "part_leases")

# -- arrays: (name, dtype, shape rule) ------------------------------------------------------
# The shape rule is a Python expression over the parameters and the other arrays (a tuple
# for a 2-D array); the wiring's arrays must match it (tests/test_sim_contract.py).
_NODES = "n_nodes"
_REQS = "n_req"
_COPIES = "2 * n_req"  # a request and its hedge copy
ARRAYS: tuple[tuple[str, str, str], ...] = (
    # per node
    ("node_dev", "int64", _NODES), ("node_type", "int64", _NODES), ("node_ckpt_ns", "int64", _NODES),
    ("run", "int64", _NODES), ("qlen", "int64", _NODES), ("train", "int64", _NODES), ("hold", "int64", _NODES),
    ("inflight", "int64", _NODES),
    # the scheduler's view of each node, and the gossip snapshots (ring_m rounds)
    ("view_busy", "int64", _NODES), ("view_train", "int64", _NODES), ("view_time", "int64", _NODES),
    ("view_ver", "int64", _NODES), ("snap_busy", "int64", "n_nodes * ring_m"),
    ("snap_train", "int64", "n_nodes * ring_m"), ("lag", "int64", _NODES), ("part", "int64", _NODES),
    ("own", "int64", "n_sched * n_nodes"), ("own_tick", "int64", "n_sched * n_nodes"),
    # the node queues: one FIFO per dispatcher class, per node
    ("nq_head", "int64", "n_nodes * n_rank"), ("nq_tail", "int64", "n_nodes * n_rank"),
    ("nq_len", "int64", "n_nodes * n_rank"),
    # the nodes' devices as slots
    ("slot_off", "int64", "n_nodes + 1"), ("slot_copy", "int32", "slot_off[-1]"),
    ("slot_rank", "int64", "slot_off[-1]"),
    # per request
    ("arr", "int64", _REQS), ("cls", "int8", _REQS), ("status", "int8", _REQS), ("start", "int64", _REQS),
    ("finish", "int64", _REQS), ("node", "int32", _REQS), ("attempts", "int32", _REQS),
    ("ready", "int64", _REQS), ("expiry", "int64", _REQS), ("noise", "float32", _REQS),
    ("hnoise", "float32", _REQS), ("comp", "int64", "(n_req, 6)"),
    # per copy
    ("cq_next", "int32", _COPIES), ("cstate", "int8", _COPIES), ("cnode", "int32", _COPIES),
    ("cstart", "int64", _COPIES), ("cend", "int64", _COPIES), ("cslot", "int8", _COPIES),
    ("cborrow", "int8", _COPIES),
    # candidate pools, the hash ring and the planner's hints (CSR: *_off holds the offsets)
    ("pool_nodes", "int64", "pool_off[-1]"), ("pool_off", "int64", "len(pool_off)"),
    ("cpool", "int64", "cpool_off[-1]"), ("cpool_off", "int64", "n_sched * n_cls + 1"),
    ("ring_key", "int64", "ring_off[-1]"), ("ring_node", "int64", "ring_off[-1]"),
    ("ring_off", "int64", "len(ring_off)"), ("hint_off", "int64", "n_cls + 1"),
    ("hint_nodes", "int64", "len(hint_nodes)"),
    # training shards
    ("shard_node", "int64", "len(shard_node)"), ("shard_dev", "int64", "len(shard_node)"),
    ("shard_start", "int64", "len(shard_node)"), ("shard_state", "int64", "len(shard_node)"),
    ("node_shard_off", "int64", "n_nodes + 1"),
    # per class and type
    ("service", "int64", "n_cls * n_types"), ("cls_prio", "int64", "n_cls"), ("cls_rank", "int64", "n_cls"),
    ("cls_setup", "int64", "n_cls"), ("type_nodes", "int64", "type_off[-1]"),
    ("type_off", "int64", "n_cls * n_types + 1"), ("busy_type", "int64", "n_types"),
    ("skip", "int64", "n_sched * n_cls"),
    # outputs
    ("cnt", "int64", "N_COUNTERS"), ("trace", "int64", "(TRACE_ROWS, 3)"),
)


def codes(prefix: str) -> list[tuple[str, int]]:
    """The ``(name, value)`` pairs of one code group, by value."""
    return sorted(((k, v) for k, v in globals().items()
                   if k.startswith(prefix + "_") and k.split("_")[0] == prefix and isinstance(v, int)),
                  key=lambda kv: kv[1])


def array_shape(rule: str, params: dict, arrays: dict) -> tuple[int, ...]:
    """The shape an array must have by its rule, given the parameters and the other arrays."""
    env = {**params, **arrays, "N_COUNTERS": N_COUNTERS, "TRACE_ROWS": TRACE_ROWS, "len": len}
    value = eval(rule, {"__builtins__": {}}, env)  # noqa: S307 - rules are this module's literals
    return tuple(int(v) for v in value) if isinstance(value, tuple) else (int(value),)
