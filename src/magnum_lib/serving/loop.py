"""``simulate``: the serving loop on the active backend (compiled kernel or readable reference).

Both forms take the same checked inputs (:func:`~magnum_lib.serving.serve_ref.check_args`,
the one place arguments are validated) and return equal
:class:`~magnum_lib.serving.serve_ref.ServingResult` objects. The compiled kernel
(``serving/_serve.pyx``) runs the four built-in routers; a router plug-in of your own (or a
subclass of a built-in router) runs on the readable loop, whatever the backend.
``MAGNUM_PUREPYTHON=1`` forces the readable loop everywhere.
"""
from __future__ import annotations

from magnum_lib import _backend
from magnum_lib.serving.replica import ReplicaSpec
from magnum_lib.serving.requests import ServingRequests
from magnum_lib.serving.serve_ref import ServingResult, check_args, progress_bar

__all__ = ["simulate", "kernel", "uses_kernel"]


def kernel():
    """The module that runs a checked run: ``magnum_lib.serving._serve`` or ``serve_ref``."""
    return _backend.pick("magnum_lib.serving._serve", "magnum_lib.serving.serve_ref")


def uses_kernel(router) -> bool:
    """True when a run with ``router`` (a name, class or object) would run the compiled kernel."""
    from magnum_lib.serving.routers import make_router

    mod = kernel()
    return mod.__name__.endswith("._serve") and mod.runs_in_kernel(make_router(router))


def simulate(requests: ServingRequests, replica: ReplicaSpec, *, replicas: int = 1, batching: str = "continuous",
             max_batch: int = 256, token_budget: int = 512, preemption: str = "recompute",
             prefix_cache: bool = True, disaggregate: tuple | None = None, router="round-robin",
             seed: int = 0, horizon_s: float | None = None, progress: bool | None = None) -> ServingResult:
    """Serve ``requests`` on ``replicas`` copies of ``replica`` (semantics: :mod:`~magnum_lib.serving.serve_ref`).

    ``disaggregate=(P, D)`` splits ``P + D`` replicas (``replicas`` is then ignored);
    ``horizon_s`` stops the run at that simulated time (later events are left undone);
    ``progress``: a tqdm bar over arrivals (None: only for more than 20,000 requests).
    The compiled kernel runs when built (see the module docstring for plug-in routers).
    """
    args = check_args(requests, replica, replicas=replicas, batching=batching, max_batch=max_batch,
                      token_budget=token_budget, preemption=preemption, prefix_cache=prefix_cache,
                      disaggregate=disaggregate, router=router, seed=seed, horizon_s=horizon_s)
    bar = progress_bar(args, progress)
    try:
        return kernel().run_checked(args, bar)
    finally:
        if bar is not None:
            bar.close()
