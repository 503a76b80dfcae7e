"""The node dispatcher's two queue rules (``_dispatcher.pxd`` and their twins in
``dispatcher_ref``): which class a free device serves and which running item a more urgent
queued class pauses. Both backends against the readable definition, then bad input."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magnum_lib.node import dispatcher_ref

try:
    from magnum_lib.node import _dispatcher
    KERNELS = [dispatcher_ref, _dispatcher]
except ImportError:  # pragma: no cover - the reference-only install
    KERNELS = [dispatcher_ref]
IDS = ["python", "compiled"][:len(KERNELS)]


@pytest.mark.parametrize("m", KERNELS, ids=IDS)
def test_rules_on_small_cases(m):
    assert m.serve_class(np.array([0, 0, 2, 1])) == 2  # class 2 is the most urgent with work
    assert m.serve_class(np.array([3, 1])) == 0
    assert m.serve_class(np.array([0, 0])) == -1
    # least urgent running class after the waiting one, lowest device on a tie; -1 = free
    assert m.pause_choice(np.array([2, 1, 2, -1]), 0) == 0
    assert m.pause_choice(np.array([1, 3, -1, 3]), 1) == 1
    assert m.pause_choice(np.array([0, 1]), 1) == -1  # nothing less urgent than class 1 runs
    assert m.pause_choice(np.array([-1, -1]), 0) == -1
    assert m.pause_choice(np.array([], np.int64), 0) == -1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=9), st.lists(st.integers(-1, 5), max_size=9),
       st.integers(0, 5))
def test_rules_agree_with_their_definition(qlen, rank, waiting):
    want_k = min((k for k, q in enumerate(qlen) if q > 0), default=-1)
    below = [(r, -d) for d, r in enumerate(rank) if r > waiting]
    want_v = -max(below)[1] if below else -1
    for m in KERNELS:
        assert m.serve_class(np.array(qlen, np.int64)) == want_k
        assert m.pause_choice(np.array(rank, np.int64), waiting) == want_v


@pytest.mark.parametrize("m", KERNELS, ids=IDS)
def test_rules_refuse_bad_input(m):
    with pytest.raises(TypeError, match="qlen"):
        m.serve_class(np.array([0.5]))
    with pytest.raises(ValueError, match="qlen"):
        m.serve_class(np.array([1, -1]))
    with pytest.raises(ValueError, match="qlen"):
        m.serve_class(np.zeros(0, np.int64))
    with pytest.raises(TypeError, match="rank"):
        m.pause_choice(np.array([1.0]), 0)
    with pytest.raises(ValueError, match="waiting"):
        m.pause_choice(np.array([1]), -1)
    with pytest.raises(TypeError, match="waiting"):
        m.pause_choice(np.array([1]), 0.5)
