"""The base layer, below every other: primitives each layer needs and may not copy.

``validate``     input checks and :class:`~magnum_lib.base.validate.ParameterError`
``kernel_args``  argument checks shared by the compiled kernels' wrappers and references
``rng``          SplitMix64 and xorshift64* (compiled twin: ``_rng.pxd``, cimported by kernels)

The import rule (docs/ARCHITECTURE.md) lets every package import ``base``; ``base``
imports nothing of ``magnum_lib``. A kernel cimports the ``.pxd`` primitives.
"""
