"""The regional scheduler: places jobs from a possibly stale view and issues leases unchecked.

:class:`StaleView` stands in for the gossip layer's view until it lands: a copy of the
nodes' free devices, refreshed from the truth every ``staleness`` seconds. Between
refreshes a scheduler knows only its own placements (it subtracts them from its copy).

:class:`RegionalScheduler` places a batch of requests with a policy (:data:`POLICIES`)
through the compiled ``place_batch`` kernel and returns speculative leases; the nodes'
validator (:mod:`magnum_lib.regional.validator`) decides. ``hints`` is the planner's input:
per request, a ranked list of node ids, tried in order before the fallback policy.
"""
from __future__ import annotations

import numpy as np

from magnum_lib.base.validate import ParameterError, check_choice, check_int
from magnum_lib.regional.lease import Lease, LeaseIds, as_ns
from magnum_lib.regional.validator import NodeState, kernels, pack_rows

__all__ = ["POLICIES", "StaleView", "RegionalScheduler"]

#: Placement policies, in kernel-code order.
POLICIES = ("random", "least-loaded", "two-choices", "hints")
_DRAWS = 4  # random node draws per request before a deterministic scan takes over


class StaleView:
    """A scheduler's view of the free devices, refreshed from the truth every ``staleness``.

    Parameters
    ----------
    state : NodeState
        The truth it copies from.
    staleness : float or str
        Refresh period (seconds or ``"2ms"``); 0 refreshes on every :meth:`refresh` call.
    """

    def __init__(self, state: NodeState, staleness="2ms"):
        if not isinstance(state, NodeState):
            raise ParameterError("state", f"must be a NodeState, got {type(state).__name__}")
        self.state = state
        self.staleness_ns = as_ns("staleness", staleness)
        self.free = state.free.copy()
        self.refreshed_at_ns = 0

    def refresh(self, now_ns: int, force: bool = False) -> bool:
        """Copy the truth if a refresh is due at ``now_ns`` (or ``force``); return whether it did."""
        if not force and now_ns - self.refreshed_at_ns < self.staleness_ns:
            return False
        np.copyto(self.free, self.state.free)
        # Refreshes happen on a fixed cadence, so the view's age is uniform over the period.
        period = max(self.staleness_ns, 1)
        self.refreshed_at_ns = now_ns - (now_ns - self.refreshed_at_ns) % period if not force else now_ns
        return True

    def age_ns(self, now_ns: int) -> int:
        return now_ns - self.refreshed_at_ns


class RegionalScheduler:
    """Places requests from a :class:`StaleView` and issues leases without checking.

    Parameters
    ----------
    view : StaleView
    policy : str
        One of :data:`POLICIES`.
    region : int or str
        Names the lease ids (``"L-<region>-<seq>"``).
    seed : int
        Seeds the scheduler's random node draws.
    timeout : float or str
        Lease timeout (default ``"100ms"``).
    """

    def __init__(self, view: StaleView, policy: str = "two-choices", region=0, seed: int = 0,
                 timeout="100ms"):
        if not isinstance(view, StaleView):
            raise ParameterError("view", f"must be a StaleView, got {type(view).__name__}")
        self.view = view
        self.policy = check_choice("policy", policy, POLICIES)
        self.ids = LeaseIds(region)
        self.rng = np.random.default_rng(check_int("seed", seed, 0))
        self.timeout_ns = as_ns("timeout", timeout)

    def place_arrays(self, r_type, r_count, r_mem, r_ic, hints=None, module=None) -> np.ndarray:
        """Node per request (-1: nothing in the view fits), from coded arrays; updates the view.

        ``hints`` is an int array ``[R, H]`` of ranked node ids (-1 pads), used by the
        ``"hints"`` policy. Random draws come from this scheduler's generator.
        """
        st = self.view.state
        requests = pack_rows("requests", (r_type, r_count, r_mem, r_ic))
        r = len(requests)
        if hints is None:
            hints = np.full((r, 0), -1, dtype=np.int64)
        hints = np.ascontiguousarray(hints, dtype=np.int64)
        if hints.ndim != 2 or hints.shape[0] != r:
            raise ParameterError("hints", f"must be an int array of shape ({r}, H), got {hints.shape}")
        draws = self.rng.integers(0, st.n_nodes, (r, _DRAWS), dtype=np.int32)
        out = np.empty(r, dtype=np.int64)
        (module or kernels()).place_batch(self.view.free, st.nodes, st.ic_ok, len(st.ic_names),
                                          requests, POLICIES.index(self.policy), draws, hints, out)
        return out

    def issue(self, requests, now_ns: int, hints=None) -> list:
        """Place requests and issue leases: one :class:`Lease` or ``None`` (no fit) per request.

        Each request is a mapping with ``job_id``, ``device_type``, ``count``, ``memory``
        (bytes), ``interconnect``; ``timeout`` (seconds or string) is optional.
        """
        now_ns = check_int("now_ns", now_ns, 0)
        st = self.view.state
        try:
            cols = ([st.type_code(q["device_type"]) for q in requests],
                    [check_int("count", q["count"], 1) for q in requests],
                    [check_int("memory", q["memory"], 0) for q in requests],
                    [st.ic_code(q["interconnect"]) for q in requests])
        except KeyError as exc:
            raise ParameterError("requests", f"each needs key {exc}") from None
        nodes = self.place_arrays(*cols, hints=hints)
        leases = []
        for q, node in zip(requests, nodes, strict=True):
            if node < 0:
                leases.append(None)
                continue
            t = as_ns("timeout", q["timeout"]) if "timeout" in q else self.timeout_ns
            leases.append(Lease(self.ids(), str(q["job_id"]), int(node), st.type_keys[st.type_code(q["device_type"])],
                                int(q["count"]), int(q["memory"]), st.ic_names[st.ic_code(q["interconnect"])],
                                now_ns, t, now_ns + t))
        return leases
