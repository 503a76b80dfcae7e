"""Which devices of a fleet can hold one more statically compiled graph, and with how much room.

A statically compiled accelerator (MTIA) serves a request stream without a graph load only
where the stream's graph is *resident*: reserved whole (:func:`~magnum_lib.graph.reserve.reserve`,
``pre_reserve``) beside the graphs of the other tenants already time-division packed on the
device. Admission follows :func:`~magnum_lib.graph.packing.pack`'s ``"packed"`` policy at one
instant, every graph present: first fit in arrival order, a graph is admitted while the
reservations admitted so far leave room for its whole reservation.

* :func:`tenant_reservations` - the bytes the other tenants hold on each device: every device
  draws ``tenants`` graphs from one seeded pool of :func:`make_inference_graphs` graphs and
  admits them first fit;
* :func:`graph_fits` - where a new graph of ``reserve_bytes`` fits beside them, and the
  capacity left after it (bytes), per device.

Sizes are bytes; everything is vectorized over devices (100,000 devices take milliseconds).
"""
from __future__ import annotations

import numpy as np

from magnum_lib.base.validate import ParameterError, check_int
from magnum_lib.graph.packing import make_inference_graphs
from magnum_lib.hardware import Catalog, default_catalog

__all__ = ["tenant_reservations", "graph_fits", "first_fit_admit", "POOL_GRAPHS"]

#: Graphs in the pool tenants are drawn from (one pool per call; a device draws from it).
POOL_GRAPHS = 512


def first_fit_admit(reservations: np.ndarray, capacity_bytes: int) -> np.ndarray:
    """Bytes admitted per row of ``reservations`` (devices x graphs, in arrival order), first fit.

    A graph is admitted when the row's admitted bytes plus its reservation are at most
    ``capacity_bytes``; one that does not fit is skipped and the next ones still try.
    """
    res = np.asarray(reservations, dtype=np.int64)
    if res.ndim != 2 or (res.size and res.min() < 0):
        raise ParameterError("reservations", f"must be a 2-D array of bytes >= 0, got shape {res.shape}")
    held = np.zeros(res.shape[0], dtype=np.int64)
    for k in range(res.shape[1]):
        take = held + res[:, k] <= capacity_bytes
        held[take] += res[take, k]
    return held


def tenant_reservations(n_devices: int, tenants: int, device: str = "mtia_v2", memory_pressure: float = 0.1,
                        seed: int = 0, catalog: Catalog | None = None) -> np.ndarray:
    """Bytes the other tenants' static graphs reserve on each of ``n_devices`` devices.

    Every device draws ``tenants`` graphs (uniformly, with replacement) from a pool of
    :data:`POOL_GRAPHS` seeded :func:`make_inference_graphs` graphs (``memory_pressure``:
    a graph's mean reservation as a fraction of the device's memory) and admits them first
    fit (:func:`first_fit_admit`). ``tenants = 0``: an empty device (0 bytes everywhere).
    """
    n_devices = check_int("n_devices", n_devices, 0, 10**8)
    tenants = check_int("tenants", tenants, 0, 1024)
    seed = check_int("seed", seed, 0, 2**63 - 1)
    acc = (catalog or default_catalog())[device]
    if tenants == 0 or n_devices == 0:
        return np.zeros(n_devices, dtype=np.int64)
    pool = make_inference_graphs(POOL_GRAPHS, seed=seed, device=acc.key, memory_pressure=memory_pressure,
                                 catalog=catalog)
    rng = np.random.default_rng([seed, 1])
    picks = rng.integers(POOL_GRAPHS, size=(n_devices, tenants))
    return first_fit_admit(pool.reserve_bytes[picks], acc.memory_bytes)


def graph_fits(reserve_bytes: int, resident_bytes, capacity_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """Where one more graph reserving ``reserve_bytes`` fits: (fits per device, bytes left after it).

    ``bytes left`` is ``capacity - resident - reserve_bytes`` where the graph fits and
    ``capacity - resident`` (the graph not admitted) where it does not.
    """
    reserve_bytes = check_int("reserve_bytes", reserve_bytes, 0, 2**62)
    capacity_bytes = check_int("capacity_bytes", capacity_bytes, 1, 2**62)
    res = np.asarray(resident_bytes, dtype=np.int64)
    if res.size and (res.min() < 0 or res.max() > capacity_bytes):
        raise ParameterError("resident_bytes", f"must be in [0, capacity_bytes = {capacity_bytes}]")
    fits = res + reserve_bytes <= capacity_bytes
    return fits, capacity_bytes - res - np.where(fits, reserve_bytes, 0)
