"""The whole system: one event-driven simulator that sends each request through every layer.

A request arrives at its region, waits for the next regional round, is placed by a
scheduler from its view (gossip dissemination every ``gossip_interval`` with fan-out and
loss, corrected by the Bloom digest every ``digest_interval``, false positives included),
is sent as a speculative lease (RTT/2), is validated by the node (accept, preempt
training - checkpointed or micro-preempted -, pause a less urgent inference request
(micro-preemption), queue, or refuse and retry in a later round), starts on a device at
the node's next decision quantum (the node dispatcher's rules: one queue per priority
class, the most urgent served first), may be hedged on another node when it runs past
``hedge_after``, and finishes. Time is int64 ns; runs are seeded
and give the same result on both backends (``MAGNUM_PUREPYTHON=1`` too).

>>> from magnum_lib.sim import simulate
>>> r = simulate("magnum_v2", cluster="classroom", duration_s=0.05, seed=1)
>>> r["requests"]["total"] == r["requests"]["done"] + r["requests"]["dropped"] + r["requests"]["in_flight"]
True

The evolution (C39-C43) is five presets of the same simulator (:data:`EVOLUTION`); see
:mod:`magnum_lib.sim.evolution` for which assumptions give the article's figures.
"""
from magnum_lib.sim.config import (
                                   CLUSTERS,
                                   DEFAULT_CLASSES,
                                   EVOLUTION,
                                   PRESETS,
                                   RequestClass,
                                   SimConfig,
                                   check_config,
                                   make_config,
)
from magnum_lib.sim.run import run_config, simulate

__all__ = ["simulate", "run_config", "make_config", "check_config", "SimConfig", "RequestClass",
           "DEFAULT_CLASSES", "PRESETS", "EVOLUTION", "CLUSTERS"]
