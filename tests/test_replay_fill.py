"""Workload inflation (FGD paper) and the arrival-only fill: hand-worked cases, invariants,
bad input, and FGD against the baselines on an inflated sample of the real openb cluster.

FGD runs in NumPy only (no compiled path), so these tests have one backend.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magnum_lib.base.validate import ParameterError
from magnum_lib.replay import ReplayCluster, make_jobs
from magnum_lib.replay.fill import FILL_PLACEMENTS, fill
from magnum_lib.workload.inflate import inflate_index


# ----------------------------------------------------------------- inflation
def test_inflation_reaches_the_target_within_one_pod_and_keeps_every_original():
    gpus = np.array([1, 1, 2, 0, 8])
    milli = np.array([500, 1000, 1000, 0, 1000])        # 11.5 GPUs requested
    idx = inflate_index(gpus, milli, capacity_gpus=20, target=1.3, seed=3)   # goal 26 GPUs
    req = gpus * milli
    total = req[idx].sum()
    assert total <= 26_000 and np.all(np.bincount(idx, minlength=5) >= 1)
    # The draw that stopped it would have crossed the goal, so the gap is under one pod.
    assert 26_000 - total < req.max()


def test_inflation_stops_at_the_first_draw_that_would_cross():
    # Only 8-GPU pods: after the original (8), draws of 8 fit while <= goal (40): 32 more.
    idx = inflate_index([8], [1000], capacity_gpus=40, target=1.0, seed=0)
    assert idx.size == 5 and (idx == 0).all()


def test_inflation_tunes_down_a_workload_above_the_target():
    gpus, milli = np.ones(100, int), np.full(100, 1000)
    idx = inflate_index(gpus, milli, capacity_gpus=50, target=1.3, seed=1)
    assert idx.size == 65 and np.unique(idx).size == 65      # removed, never repeated


def test_inflation_is_seeded_and_the_seed_matters():
    gpus, milli = np.ones(50, int), np.arange(100, 1001, 18)[:50]
    a = inflate_index(gpus, milli, 40, 1.3, seed=7)
    assert np.array_equal(a, inflate_index(gpus, milli, 40, 1.3, seed=7))
    assert not np.array_equal(a, inflate_index(gpus, milli, 40, 1.3, seed=8))


@pytest.mark.parametrize("kw, name", [
    (dict(capacity_gpus=0), "capacity_gpus"), (dict(target=0.0), "target"),
    (dict(target=11), "target"), (dict(target=True), "target"), (dict(seed=-1), "seed"),
])
def test_inflation_refuses_bad_parameters(kw, name):
    args = dict(num_gpu=[1], gpu_milli=[1000], capacity_gpus=4, target=1.3, seed=0) | kw
    with pytest.raises(ParameterError, match=name):
        inflate_index(**args)


@pytest.mark.parametrize("gpus, milli", [([], []), ([1], [1001]), ([0], [0]), ([1, 2], [5])])
def test_inflation_refuses_bad_pods(gpus, milli):
    with pytest.raises(ParameterError, match="pods"):
        inflate_index(gpus, milli, 4)


# ----------------------------------------------------------------- fill by hand
def _pods(milli, gpus=None):
    n = len(milli)
    return make_jobs(np.arange(n, dtype=float), np.ones(n), np.ones(n, int) if gpus is None else gpus,
                     gpu_milli=milli)


@pytest.mark.parametrize("placement", FILL_PLACEMENTS)
def test_two_halves_fill_one_gpu_and_a_whole_pod_then_fails(placement):
    r = fill(_pods([500, 500, 1000]), ReplayCluster.uniform(1, 1), placement)
    assert r.placed.tolist() == [True, True, False]
    assert r.allocated.tolist() == [0.5, 1.0, 1.0] and r.arrived.tolist() == [0.5, 1.0, 2.0]
    assert r.unallocated.tolist() == [0.0, 0.0, 1.0] and r.idle[-1] == 0.0


@pytest.mark.parametrize("placement", ["first-fit", "best-fit", "fgd"])
def test_fragmentation_by_hand_after_packing(placement):
    # Two 1-GPU nodes, pods 300, 700, 600, 1000: 300 and 700 share node 0 (lowest / fullest
    # fitting node; for FGD filling node 0 to 0 free removes its fragment), 600 goes to node
    # 1, the whole-GPU pod fails. Node 1's 400 free milli: the 300 class (popularity 1/4)
    # can use them, the 600, 700 and 1000 classes (3/4) cannot: 300 milli of 2000 = 0.15.
    r = fill(_pods([300, 700, 600, 1000]), ReplayCluster.uniform(2, 1), placement)
    assert r.node.tolist() == [0, 0, 1, -1]
    assert r.frag[-1] == pytest.approx(0.15) and r.frag_ratio[-1] == pytest.approx(0.75)


def test_whole_gpu_pods_stay_on_one_node():
    # Two nodes of 2 GPUs: a 2-GPU pod after a 1-GPU one goes to the other node, and a
    # second 2-GPU pod fails although 1 + 1 GPUs are idle on the two nodes.
    r = fill(_pods([1000, 1000, 1000], gpus=[1, 2, 2]), ReplayCluster.uniform(2, 2), "first-fit")
    assert r.placed.tolist() == [True, True, False]


def test_fill_refuses_bad_input():
    cl = ReplayCluster.uniform(1, 1)
    with pytest.raises(ParameterError, match="placement"):
        fill(_pods([500]), cl, "worst-fit")
    with pytest.raises(ParameterError, match="jobs"):
        fill([500], cl)
    with pytest.raises(ParameterError, match="cluster"):
        fill(_pods([500]), "1x1")
    with pytest.raises(ParameterError, match="seed"):
        fill(_pods([500]), cl, "random", seed=-2)


# ----------------------------------------------------------------- invariants
@settings(max_examples=40, deadline=None)
@given(milli=st.lists(st.sampled_from([100, 250, 300, 500, 700, 1000]), min_size=1, max_size=40),
       nodes=st.integers(1, 4), gpus=st.integers(1, 4), placement=st.sampled_from(FILL_PLACEMENTS),
       seed=st.integers(0, 5))
def test_fill_never_overcommits_and_counts_what_it_placed(milli, nodes, gpus, placement, seed):
    jobs = _pods(milli)
    cl = ReplayCluster.uniform(nodes, gpus)
    r = fill(jobs, cl, placement, seed)
    cap = nodes * gpus * 1000
    held = np.cumsum(np.where(r.placed, np.array(milli), 0)) / cap
    assert np.allclose(r.allocated, held) and np.all(r.allocated <= 1 + 1e-12)
    assert np.all(np.diff(r.allocated) >= 0) and np.all(r.allocated <= r.arrived + 1e-12)
    assert np.all(r.frag >= -1e-12) and np.all(r.frag <= r.idle + 1e-12)
    assert np.array_equal(r.placed, fill(jobs, cl, placement, seed).placed)   # deterministic


@settings(max_examples=25, deadline=None)
@given(milli=st.lists(st.sampled_from([100, 250, 500, 1000]), min_size=1, max_size=30),
       placement=st.sampled_from(FILL_PLACEMENTS), seed=st.integers(0, 3))
def test_a_pod_fails_exactly_when_it_fits_on_no_node(milli, placement, seed):
    # Three 1-GPU nodes: replay the recorded nodes and check each decision against the free
    # milli of that moment (placed on a node where it fits, failed only if none fits).
    r = fill(_pods(milli), ReplayCluster.uniform(3, 1), placement, seed)
    free = np.full(3, 1000)
    for j, m in enumerate(milli):
        need = 1000 if m == 1000 else m
        if r.placed[j]:
            assert free[r.node[j]] >= need and (m < 1000 or free[r.node[j]] == 1000)
            free[r.node[j]] -= m
        else:
            assert r.node[j] == -1 and free.max() < need
    assert r.idle[-1] == pytest.approx(free.sum() / 3000)


# ----------------------------------------------------------------- the real cluster
def test_fgd_fragments_less_than_random_and_no_more_than_first_fit_on_inflated_openb(shared_data):
    from magnum_lib.replay.traces import alibaba_pods

    full = ReplayCluster.alibaba(shared_data / "alibaba" / "openb_node_list_gpu_node.csv")
    path = shared_data / "alibaba" / "openb_pod_list_default.csv"
    for seed in (0, 1):
        cl = full.take(np.arange(seed, full.nodes, 8))            # every 8th node: ~150
        jobs = alibaba_pods(cl, path=path, inflate=1.3, seed=seed)
        r = {p: fill(jobs, cl, p, seed=seed) for p in ("fgd", "first-fit", "random")}
        filling = r["fgd"].arrived <= 1.0                          # as the cluster fills
        mean = {p: float(x.frag[filling].mean()) for p, x in r.items()}
        assert mean["fgd"] < 0.6 * mean["random"], mean
        assert mean["fgd"] <= 1.05 * mean["first-fit"], mean
        assert r["fgd"].allocated[-1] > r["random"].allocated[-1] + 0.01
        assert r["fgd"].arrived[-1] == pytest.approx(1.3, abs=0.01)


# ----------------------------------------------------------------- parity: compiled == reference
def _core_args(cluster, jobs, mask=None):
    from magnum_lib.replay.fill import _fill_args

    args = _fill_args(jobs, cluster)
    if mask is not None:
        args[3] = np.asarray(mask, np.int64)
    return args


def _both(args, code):
    from magnum_lib.replay import fill_ref
    from tests.conftest import import_compiled

    fast = import_compiled("magnum_lib.replay._fill")
    out = []
    for mod in (fill_ref, fast):
        a = [x.copy() for x in args]
        node, frag = mod.fill_core(*a, code, 0)
        out.append((node, frag, a[0]))
    return out


@settings(max_examples=60, deadline=None)
@given(data=st.data(), code=st.sampled_from([0, 1, 2]))
def test_compiled_fill_matches_the_reference_exactly(data, code):
    sizes = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=5))
    types = data.draw(st.lists(st.integers(0, 1), min_size=len(sizes), max_size=len(sizes)))
    cl = ReplayCluster(np.array(sizes), np.array(types), ("a", "b"))
    n = data.draw(st.integers(1, 30))
    milli = data.draw(st.lists(st.sampled_from([100, 250, 300, 500, 700, 1000]), min_size=n, max_size=n))
    gpus = [data.draw(st.integers(1, 4)) if m == 1000 else 1 for m in milli]
    mask = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    jobs = make_jobs(np.arange(n, dtype=float), np.ones(n), gpus, gpu_milli=milli)
    (n1, f1, m1), (n2, f2, m2) = _both(_core_args(cl, jobs, mask), code)
    assert np.array_equal(n1, n2) and np.array_equal(f1, f2) and np.array_equal(m1, m2)


@pytest.mark.parametrize("code", [0, 1, 2])
def test_compiled_fill_matches_the_reference_on_inflated_openb(shared_data, code):
    from magnum_lib.replay.traces import alibaba_pods

    full = ReplayCluster.alibaba(shared_data / "alibaba" / "openb_node_list_gpu_node.csv")
    cl = full.take(np.arange(5, full.nodes, 16))
    jobs = alibaba_pods(cl, path=shared_data / "alibaba" / "openb_pod_list_default.csv", inflate=1.3, seed=5)
    (n1, f1, m1), (n2, f2, m2) = _both(_core_args(cl, jobs), code)
    assert np.array_equal(n1, n2) and np.array_equal(f1, f2) and np.array_equal(m1, m2)
    assert (n1 < 0).any() and (n1 >= 0).any()          # it filled past what fits


def test_compiled_fill_refuses_what_it_does_not_do():
    from tests.conftest import import_compiled

    fast = import_compiled("magnum_lib.replay._fill")
    cl = ReplayCluster.uniform(1, 2)
    args = _core_args(cl, _pods([500, 1000]))
    with pytest.raises(ParameterError, match="placement"):
        fast.fill_core(*args, 3, 0)                    # random: the reference's
    bad = list(args)
    bad[2] = bad[2][:1]
    with pytest.raises(ParameterError, match="jobs"):
        fast.fill_core(*bad, 0, 0)
    bad = list(args)
    bad[1] = np.array([0, 1000])
    with pytest.raises(ParameterError, match="jobs"):
        fast.fill_core(*bad, 0, 0)


def test_fill_reports_its_backend():
    from magnum_lib import backend

    r = fill(_pods([500]), ReplayCluster.uniform(1, 1), "fgd")
    assert r.backend == ("compiled" if backend() == "compiled" else "python")
    assert fill(_pods([500]), ReplayCluster.uniform(1, 1), "random").backend == "python"
