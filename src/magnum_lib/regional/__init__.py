"""Layer 2, the regional "Conductor": speculative leases, the node-side validator,
preemption on overbooking, and the baselines (pessimistic locking, optimistic retries).

Import from the submodules, e.g. ``from magnum_lib.regional.lease import Lease``.
"""
