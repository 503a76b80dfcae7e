"""Layer 3, the node-level "Bouncer": ring buffer, dispatcher, hedging, load balancing.

Modules: ``ring`` (single-producer single-consumer ring buffer), ``dispatcher``
(per-node decision loop with priority classes and micro-preemption), ``placement``
(heterogeneity-aware device choice), ``hedging`` (hedged requests), ``balance``
(random, power-of-d, stale least-loaded and batch sampling across nodes).
Import from the submodules, e.g. ``from magnum_lib.node.balance import supermarket``.
"""
