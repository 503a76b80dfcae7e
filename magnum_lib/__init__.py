"""magnum_lib: the library behind the Faux-MAGNUM teaching kit.

Layers (see DESIGN.md): ``engine`` (discrete-event core), ``hardware`` (accelerator
catalog and roofline cost model), ``cluster`` (topology as structure-of-arrays),
``workload`` (arrival generators and real-trace loaders), ``sweep`` (parameter sweeps
on Dask) and ``cli`` (the ``faux-magnum`` command).

Each hot kernel has a compiled Cython form and a readable pure-Python reference;
:func:`backend` tells which one is active. Set ``MAGNUM_PUREPYTHON=1`` to force the
reference.
"""
from magnum_lib._backend import backend

__version__ = "0.1.0"

__all__ = ["backend", "__version__"]
