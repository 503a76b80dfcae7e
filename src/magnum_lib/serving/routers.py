"""Routers: which replica serves an arriving request (a small plug-in, like the replay policies).

A router is a class with ``route(view, request) -> replica index``; the simulator calls it
once per request (and once more, with the decode replicas as candidates, when a
disaggregated request leaves its prefill replica)::

    class FewestWaiting(Router):
        name = "fewest-waiting"
        def route(self, view, request):
            return min(view.candidates, key=lambda i: (view.queue_len(i), i))

The answer is checked before it is used: anything but one of ``view.candidates`` raises
:class:`RouterError` naming the router and the value, and an exception inside ``route``
is re-raised as a RouterError naming the router.

The compiled loop (``serving/_serve.pyx``) runs the four built-in routers itself; a
router of your own (or a subclass of a built-in one) runs on the readable loop
(``serve_ref``), whatever the backend: same results, Python's speed.

Built in (:data:`ROUTERS`): ``round-robin``; ``least-outstanding`` (fewest tokens still to
process, prefill and decode, ties to the lowest index); ``power-of-two`` (two distinct
candidates drawn from the run's seeded generator, the one with fewer outstanding tokens,
Mitzenmacher 2001); ``prefix-aware`` (llm-d's scheduler style: a weighted sum of scorers,
``prefix_weight x hit fraction + load_weight x (1 - outstanding / busiest)``, highest wins).
"""
from __future__ import annotations

import numbers

from magnum_lib.base.validate import ParameterError, check_choice, excerpt

__all__ = ["Router", "RouterError", "RoundRobin", "LeastOutstanding", "PowerOfTwo", "PrefixAware",
           "ROUTERS", "make_router", "checked_route"]


class RouterError(ParameterError):
    """A router returned something other than one of its candidates (or raised)."""

    def __init__(self, router_name: str, detail: str):
        super().__init__("router", f"{router_name!r}: {detail}")
        self.router = router_name


class Router:
    """Base class of every router. ``reset`` is called once before a run."""

    name = "router"

    def reset(self, n_replicas: int) -> None:
        """Clear per-run state."""

    def route(self, view, request) -> int:
        raise NotImplementedError("a router must define route(self, view, request)")

    def __repr__(self) -> str:
        return f"<router {self.name}>"


class RoundRobin(Router):
    """Candidates in turn (a separate turn for each candidate set: prefill and decode pools)."""

    name = "round-robin"

    def reset(self, n_replicas):
        self._next = {}

    def route(self, view, request):
        c = view.candidates
        k = self._next.get(c, 0)
        self._next[c] = k + 1
        return c[k % len(c)]


class LeastOutstanding(Router):
    """Fewest outstanding tokens; ties to the lowest index."""

    name = "least-outstanding"

    def route(self, view, request):
        return min(view.candidates, key=lambda i: (view.outstanding_tokens(i), i))


class PowerOfTwo(Router):
    """Two distinct random candidates, the less loaded (ties: the first drawn)."""

    name = "power-of-two"

    def route(self, view, request):
        c = view.candidates
        if len(c) == 1:
            return c[0]
        a, b = view.rng.choice(len(c), size=2, replace=False)
        a, b = c[int(a)], c[int(b)]
        return b if view.outstanding_tokens(b) < view.outstanding_tokens(a) else a


class PrefixAware(Router):
    """Prefix-cache hit against load, as llm-d's scheduler scores replicas."""

    name = "prefix-aware"

    def __init__(self, prefix_weight: float = 2.0, load_weight: float = 1.0):
        for n, w in (("prefix_weight", prefix_weight), ("load_weight", load_weight)):
            if isinstance(w, bool) or not isinstance(w, numbers.Real) or not 0 <= w < float("inf"):
                raise ParameterError(n, f"must be a finite number >= 0, got {excerpt(w)}")
        self.prefix_weight, self.load_weight = float(prefix_weight), float(load_weight)

    def route(self, view, request):
        c = view.candidates
        load = {i: view.outstanding_tokens(i) for i in c}
        busiest = max(load.values()) or 1

        def score(i):
            hit = view.prefix_hit_tokens(i) / request.prompt
            return self.prefix_weight * hit + self.load_weight * (1.0 - load[i] / busiest)

        return max(c, key=lambda i: (score(i), -i))


#: name -> factory of a Router.
ROUTERS = {"round-robin": RoundRobin, "least-outstanding": LeastOutstanding, "power-of-two": PowerOfTwo,
           "prefix-aware": PrefixAware}


def make_router(router) -> Router:
    """A Router from a built-in name, a Router instance or a Router subclass."""
    if isinstance(router, str):
        check_choice("router", router, tuple(ROUTERS))
        return ROUTERS[router]()
    if isinstance(router, type) and issubclass(router, Router):
        router = router()
    if isinstance(router, Router) or callable(getattr(router, "route", None)):
        return router
    raise ParameterError("router", f"must be a name ({', '.join(ROUTERS)}), a Router or an object with "
                                   f"route(view, request), got {excerpt(router)}")


def checked_route(router, view, request) -> int:
    """``router.route(view, request)``, checked to be one of ``view.candidates``."""
    name = getattr(router, "name", type(router).__name__)
    try:
        choice = router.route(view, request)
    except (KeyboardInterrupt, RouterError):
        raise
    except Exception as exc:
        raise RouterError(name, f"route() raised {type(exc).__name__}: {excerpt(str(exc))}") from exc
    if isinstance(choice, bool) or not isinstance(choice, numbers.Integral) or int(choice) not in view.candidates:
        raise RouterError(name, f"returned {excerpt(choice)} for request {request.id}; expected one of the "
                                f"candidate replicas {list(view.candidates)}")
    return int(choice)
