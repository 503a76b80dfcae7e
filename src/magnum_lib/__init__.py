"""magnum_lib: the library behind the Faux-MAGNUM teaching kit.

Modules (see docs/ARCHITECTURE.md): ``engine`` (discrete-event core and queueing theory),
``hardware`` (accelerator catalog and roofline cost model), ``cluster`` (topology as
structure-of-arrays), ``units`` (parsing "80GB", "100ms", "nvlink_3"), ``workload``
(arrival generators, real-trace loaders and the shipped Philly-calibrated sample),
``sweep`` (parameter sweeps on Dask), ``widgets`` (notebook explorers) and ``cli``
(the ``faux-magnum`` command).

Each hot kernel has a compiled Cython form and a readable pure-Python reference;
:func:`backend` tells which one is active. Set ``MAGNUM_PUREPYTHON=1`` to force the
reference.
"""
import importlib

from magnum_lib._backend import backend

__version__ = "0.1.0"

_SUBMODULES = ("cluster", "engine", "hardware", "sweep", "units", "widgets", "workload")

__all__ = ["backend", "__version__", *_SUBMODULES]


def __getattr__(name):
    # Import submodules on first use, so `import magnum_lib` stays fast for the CLI.
    if name in _SUBMODULES:
        return importlib.import_module(f"magnum_lib.{name}")
    raise AttributeError(f"module 'magnum_lib' has no attribute {name!r}")
