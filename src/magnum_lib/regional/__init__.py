"""Layer 2, the regional "Conductor": speculative leases, the node-side validator,
preemption on overbooking, the baselines (pessimistic locking, optimistic retries) and
consistent hashing (`hashing`, the "Cheetah" placement).

Import from the submodules, e.g. ``from magnum_lib.regional.lease import Lease``.
"""
