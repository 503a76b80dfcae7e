"""Routers: the built-ins decide what they say, and a bad plug-in is stopped at the boundary."""
import numpy as np
import pytest

from magnum_lib.serving import ROUTERS, Router, RouterError, generate_requests, make_replica, simulate
from magnum_lib.serving.routers import PrefixAware

SPEC = make_replica("llama3_8b", "h100", 1, kv_blocks=4000)
REQS = generate_requests(120, 40.0, prompt_mean=500, output_mean=60, seed=2)


def test_round_robin_cycles():
    res = simulate(REQS, SPEC, replicas=3, router="round-robin")
    assert list(res.routed[:7]) == [0, 1, 2, 0, 1, 2, 0]


class Recording(Router):
    """Records the view it saw, then defers to a built-in."""

    def __init__(self, inner):
        self.inner, self.name, self.seen = inner, inner.name, []

    def reset(self, n):
        self.inner.reset(n)

    def route(self, view, request):
        loads = {i: view.outstanding_tokens(i) for i in view.candidates}
        choice = self.inner.route(view, request)
        self.seen.append((loads, choice))
        return choice


def test_least_outstanding_picks_the_least_loaded():
    rec = Recording(ROUTERS["least-outstanding"]())
    simulate(REQS, SPEC, replicas=3, router=rec)
    assert all(loads[c] == min(loads.values()) and c == min(i for i in loads if loads[i] == loads[c])
               for loads, c in rec.seen)


def test_power_of_two_never_picks_the_most_loaded_of_three_when_loads_differ():
    rec = Recording(ROUTERS["power-of-two"]())
    simulate(REQS, SPEC, replicas=3, router=rec, seed=7)
    strict = [(l, c) for l, c in rec.seen if len(set(l.values())) == 3]
    assert strict and all(l[c] < max(l.values()) for l, c in strict)


def test_prefix_aware_without_hashes_is_least_loaded():
    a = simulate(REQS, SPEC, replicas=3, router="prefix-aware")
    b = simulate(REQS, SPEC, replicas=3, router="least-outstanding")
    assert np.array_equal(a.routed, b.routed)


class Bad(Router):
    name = "bad"

    def __init__(self, answer):
        self.answer = answer

    def route(self, view, request):
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.mark.parametrize("answer, msg", [
    (5, r"router 'bad': returned 5 for request 0; expected one of the candidate replicas \[0, 1\]"),
    (True, "returned True"), ("0", "returned '0'"), (None, "returned None"),
    (ZeroDivisionError("boom"), "router 'bad': route\\(\\) raised ZeroDivisionError: 'boom'"),
])
def test_a_bad_decision_is_one_error_naming_the_router(answer, msg):
    with pytest.raises(RouterError, match=msg):
        simulate(REQS, SPEC, replicas=2, router=Bad(answer))


def test_disaggregated_decode_choice_is_checked_against_decode_replicas():
    with pytest.raises(RouterError, match=r"expected one of the candidate replicas \[1\]"):
        simulate(REQS, SPEC, disaggregate=(1, 1), router=Bad(0))


def test_router_arguments():
    with pytest.raises(ValueError, match="prefix_weight must be a finite number >= 0"):
        PrefixAware(prefix_weight=-1)
    with pytest.raises(ValueError, match="router must be a name"):
        simulate(REQS, SPEC, router=42)


def test_a_prefill_replica_counts_only_prompt_and_first_token():
    from magnum_lib.serving import ServingRequests

    seen = []

    class Look(Router):
        name = "look"

        def route(self, view, request):
            seen.append((view.candidates, view.outstanding_tokens(0), view.outstanding_tokens(1)))
            return view.candidates[0]

    r = ServingRequests(np.array([0, 1], np.int64), np.array([300, 50], np.int64), np.array([10, 5], np.int64))
    simulate(r, SPEC, disaggregate=(1, 1), router=Look())
    # request 1 arrives 1 ns after request 0: replica 0 holds 300 + 1 tokens of work, not 300 + 10;
    # at request 0's hand-off its 9 remaining tokens move to the decode replica
    assert seen[:2] == [((0,), 0, 0), ((0,), 301, 0)]
    assert seen[2] == ((1,), 50 + 1, 0) and seen[3][0] == (1,) and seen[3][2] == 9
