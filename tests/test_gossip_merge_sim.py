"""The simulator and the live endpoints merge the same way.

The live mode (gossip/live.py) merges views with :func:`merge.merge_lww`. The staleness
simulator (``dissemination_ref.run_staleness`` and its Cython twin) keeps, per node, only
the generation it last heard of each other node and merges two views with
``np.maximum``. These tests pin down that the two are the same rule: on views whose
states are written by their owners (one state per node and generation), the generations
of ``merge_lww(a, b)`` are exactly the element-wise maximum of the two generation vectors.
"""
from __future__ import annotations

import inspect

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from magnum_lib.gossip import dissemination_ref
from magnum_lib.gossip.merge import merge_lww
from magnum_lib.gossip.state import NodeState

NODES = 6


def owner_state(node: int, generation: int) -> NodeState:
    """The state node ``node`` wrote at ``generation`` (its content follows from both)."""
    busy = (generation * 2654435761 + node) % 256
    return NodeState(node_id=f"n{node}", generation=generation, busy=busy, gpus=8)


def view(generations) -> dict:
    """A view knowing node i at generation g_i (g_i < 0: never heard of node i)."""
    return {f"n{i}": owner_state(i, g) for i, g in enumerate(generations) if g >= 0}


def generations_of(v) -> np.ndarray:
    return np.array([v[f"n{i}"].generation if f"n{i}" in v else -1 for i in range(NODES)])


vectors = st.lists(st.integers(-1, 50), min_size=NODES, max_size=NODES)


@settings(max_examples=300, deadline=None)
@given(vectors, vectors)
def test_merge_lww_on_generations_is_the_elementwise_max(a, b):
    merged = merge_lww(view(a), view(b))
    assert np.array_equal(generations_of(merged), np.maximum(a, b))
    # And the winning state is the owner's state at that generation, not a mixture.
    for node, state in merged.items():
        assert state == owner_state(int(node[1:]), state.generation)


def test_the_simulator_merges_with_elementwise_max():
    """Guard: if the reference simulator stops merging views by np.maximum, the
    equivalence above no longer describes it and this file must be revisited."""
    assert "np.maximum(" in inspect.getsource(dissemination_ref.run_staleness)
