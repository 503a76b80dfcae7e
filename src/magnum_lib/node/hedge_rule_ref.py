"""The hedging rule as a readable reference (compiled twin: ``_hedge_rule.pxd`` / ``_hedge_rule.pyx``).

Dean & Barroso's hedge (C22): if a request is still running ``delay`` after it started, a
copy is sent at that moment to another replica; the first to finish wins. The whole-system
simulator uses a relative delay, ``factor x the expected service time`` (an absolute 5 ms
would hedge every 20-100 ms request). Times are int64 ns.

:func:`hedge_delay_ns` and :func:`sends_copy` are the rule, and :func:`takes_copy` (with
``HEDGE_PROBES``) where the copy may go; all are called per request by
``sim/core_ref.py`` (the compiled core inlines their ``.pxd`` twins) and by
:func:`magnum_lib.node.hedging.simulate_hedging`; :func:`hedge_plan` applies it to a batch.
"""
from __future__ import annotations

import numpy as np

from magnum_lib.base.kernel_args import int_array, int_scalar

MAX_EXPECTED_NS = 2**42   # ~73 min: expected x factor_milli stays below 2^62
MAX_FACTOR_MILLI = 10**6  # a hedge factor of at most 1000


def hedge_delay_ns(expected_ns, factor_milli):
    """The relative delay: ``factor_milli / 1000`` x the expected service time, rounded down."""
    return expected_ns * factor_milli // 1000


def sends_copy(duration_ns, delay_ns, enabled=True):
    """True where a primary taking ``duration_ns`` gets a copy (it outlives the delay); numpy-friendly."""
    return bool(enabled) & (duration_ns > delay_ns)


#: Replicas probed (over one RTT) for a copy; when none can take it, no copy is sent.
HEDGE_PROBES = 2


def takes_copy(replica, primary, free_devices):
    """A copy goes only to another replica that can start it at once (a copy that queues
    behind other work defeats the hedge)."""
    return replica != primary and free_devices > 0


def check_plan_inputs(duration_ns, expected_ns, factor_milli):
    """Validate :func:`hedge_plan`'s arguments (both backends); return them normalized."""
    duration = int_array("duration_ns", duration_ns, None, 0)
    expected = int_array("expected_ns", expected_ns, duration.shape[0], 0, MAX_EXPECTED_NS)
    factor = int_scalar("factor_milli", factor_milli, 0, MAX_FACTOR_MILLI)
    return duration, expected, factor


def hedge_plan(duration_ns, expected_ns, factor_milli) -> np.ndarray:
    """Per request, the delay after its start at which a copy is sent, or -1 for none.

    ``duration_ns``: how long each primary runs; ``expected_ns``: its expected service time;
    ``factor_milli``: the hedge factor x 1000 (0: never hedge).
    """
    duration, expected, factor = check_plan_inputs(duration_ns, expected_ns, factor_milli)
    out = np.full(duration.shape[0], -1, dtype=np.int64)
    for r in range(duration.shape[0]):
        delay = hedge_delay_ns(int(expected[r]), factor)
        if sends_copy(int(duration[r]), delay, factor > 0):
            out[r] = delay
    return out
