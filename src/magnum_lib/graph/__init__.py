"""Graph-aware reservation for statically compiled accelerators: dataflow manifests,
pre-reservation, time-division packing, and heterogeneity-aware allocation on Gavel's
measured throughputs.

Import from the submodules, e.g. ``from magnum_lib.graph.manifest import load_manifest``.
"""
