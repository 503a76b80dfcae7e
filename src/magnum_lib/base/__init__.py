"""The base layer, below every other: primitives each layer needs and may not copy.

``validate``     input checks and :class:`~magnum_lib.base.validate.ParameterError`
``kernel_args``  argument checks shared by the compiled kernels' wrappers and references
``rng``          SplitMix64 and xorshift64* (compiled twin: ``_rng.pxd``, cimported by kernels)
``_growth.pxd`` growing a C array in a nogil loop, and the one clean MemoryError
``_heap.pxd``   the binary heap of (time, seq, payload) entries every compiled event loop uses

The import rule (docs/ARCHITECTURE.md) lets every package import ``base``; ``base``
imports nothing of ``magnum_lib`` but the C typedefs (``_typedefs.pxd``). A kernel cimports
the ``.pxd`` primitives.
"""
