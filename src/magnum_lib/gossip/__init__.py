"""State dissemination underneath the layers: node state, merge rules, vector clocks,
the dissemination simulator, Bloom-filter digests for the planner, and a live UDP mode.

Import from the submodules, e.g. ``from magnum_lib.gossip.dissemination import simulate``.
"""
