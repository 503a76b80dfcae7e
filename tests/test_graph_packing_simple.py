"""The readable packer (graph/packing_simple.py) and the kernels give the same schedule."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

from magnum_lib.graph import packing, packing_ref
from magnum_lib.graph.packing_simple import jobs_as_dicts, pack_simple
from tests.conftest import import_compiled


def kernels():
    return [packing_ref, import_compiled("magnum_lib.graph._packing")]


def as_arrays(jobset, start, end, done):
    ptr = jobset.layer_ptr
    keys = [(j, k - ptr[j]) for j in range(len(jobset)) for k in range(ptr[j], ptr[j + 1])]
    return (np.array([start[key] for key in keys]), np.array([end[key] for key in keys]),
            np.array([done[j] for j in range(len(jobset))]))


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("policy", ["packed", "exclusive"])
def test_agrees_with_the_kernels(seed, policy):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 25))
    load = [None, 0.5, 0.9, 1.5][seed % 4]
    js = packing.make_inference_graphs(n, seed, runtime_spread=float(rng.uniform(0, 1.5)),
                                       memory_pressure=float(rng.uniform(0.05, 0.9)), load=load)
    start, end, done = as_arrays(js, *pack_simple(jobs_as_dicts(js), js.capacity_bytes,
                                                  1 if policy == "exclusive" else None, len(js.link_names)))
    for kernel in kernels():
        r = packing.pack(js, policy, window=n, kernel=kernel)
        assert np.array_equal(r.start_ns, start) and np.array_equal(r.end_ns, end), kernel.__name__
        assert np.array_equal(r.done_ns, done), kernel.__name__


def test_two_links_and_ties():
    """Hand-made: two jobs arriving together (ties by index), transfers on separate links."""
    jobs = [{"arrival": 0, "reserve": 5, "layers": [(100, 50, 0), (100, 0, -1)]},
            {"arrival": 0, "reserve": 5, "layers": [(80, 30, 1), (40, 0, -1)]}]
    start, end, done = pack_simple(jobs, capacity=10, n_links=2)
    assert start == {(0, 0): 0, (1, 0): 100, (0, 1): 180, (1, 1): 280}
    assert done == {0: 280, 1: 320}
    # memory for one only: the second waits for the first's release
    start, _, done = pack_simple(jobs, capacity=7, n_links=2)
    assert start[1, 0] == done[0] == 250


def test_short_enough_to_read():
    lines = inspect.getsource(pack_simple).splitlines()
    assert 10 <= len(lines) <= 40
