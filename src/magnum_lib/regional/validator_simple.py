"""The node-side lease validator's rule, in the form a person reads (notebook 03).

The kernels (``_validator.pyx`` and its packed reference ``validator_ref``) apply the same
rule to int64 rows; ``tests/test_teaching_forms.py`` checks that this form agrees with both
on seeded random leases. A node has ``devices`` devices and ``slots`` (one job each, or None).
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Job:
    job: int        # job index
    prio: int       # higher wins
    count: int      # devices held


@dataclass
class Node:
    type: int       # device type code
    ic: int         # interconnect code
    mem: int        # bytes per device
    devices: int
    slots: list = field(default_factory=list)   # Job or None, one per slot


def validate(node: Node, lease, now: int, ic_ok, preempt: bool = True):
    """Accept, preempt or refuse ``lease`` on ``node``; return (reason, slot, victims)."""
    if lease.expiry <= now:
        return "expired", -1, []
    if lease.type != node.type:
        return "device_type_mismatch", -1, []
    if not ic_ok(node.ic, lease.ic):
        return "interconnect_mismatch", -1, []
    if lease.mem > node.mem:
        return "insufficient_memory", -1, []
    free = node.devices - sum(j.count for j in node.slots if j)
    victims = []
    if free < lease.count:
        if not preempt:
            return "insufficient_devices", -1, []
        # Strictly lower priorities only, lowest first (then by slot), until enough are free.
        lower = sorted((s for s, j in enumerate(node.slots) if j and j.prio < lease.prio),
                       key=lambda s: (node.slots[s].prio, s))
        while free < lease.count and lower:
            s = lower.pop(0)
            victims.append((s, node.slots[s]))
            free += node.slots[s].count
        if free < lease.count:          # not enough even after every eviction: change nothing
            return "insufficient_devices", -1, []
        for s, _ in victims:
            node.slots[s] = None
    slot = node.slots.index(None)       # the lowest empty slot
    node.slots[slot] = Job(lease.job, lease.prio, lease.count)
    return ("accepted_after_preemption" if victims else "accepted"), slot, [j for _, j in sorted(victims)]
