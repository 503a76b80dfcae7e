# The compiled load-balancing kernels (see _balance.pyx and balance_ref.py). Their random
# numbers come from base/_rng.pxd (balance_ref.py draws the same ones from base/rng.py).
from magnum_lib.base._rng cimport below32, splitmix64, unit_double  # noqa: F401 (used by _balance.pyx)
