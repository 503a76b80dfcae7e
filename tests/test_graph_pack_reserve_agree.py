"""pack() and reserve() time a manifest's layers by one rule (``reserve.layer_timing``).

A layer whose bandwidth demand exceeds the device's link is link-bound in both, and a
transfer crosses the link the device has in both: one graph packed alone on a device
runs exactly as it is reserved there, on both packing kernels.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magnum_lib.base.validate import ParameterError
from magnum_lib.graph import packing_ref
from magnum_lib.graph.manifest import load_manifest, parse_manifest
from magnum_lib.graph.packing import POLICIES, jobs_from_manifests, pack
from magnum_lib.graph.reserve import reserve
from magnum_lib.hardware import default_catalog
from tests.conftest import import_compiled
from tests.test_graph_manifest import GOOD

DEVICES = tuple(default_catalog())
# The synthetic bandwidth-bound graph: 100 GB/s over an MTIA v2's PCIe 5 x8 (31.5 GB/s one
# way) is link-bound; 10 GB/s is not; a transfer asked over nvlink_3 crosses PCIe 5 x8.
SYNTHETIC = {"job": {"id": "bw-bound", "gpu_type": "mtia_v2", "graph": [
    {"layer": "stream", "runtime": "300us", "memory": "1GB", "interconnect": "100GB/s"},
    {"layer": "send", "runtime": "200us", "memory": "1GB", "interconnect": "nvlink_3", "transfer": "8MB"},
    {"layer": "light", "runtime": "500us", "memory": "1GB", "interconnect": "10GB/s"},
]}}


def kernels():
    return (import_compiled("magnum_lib.graph._packing"), packing_ref)


def assert_alone_matches(manifest, device=None):
    """Pack ``manifest`` alone under every policy on both kernels: reserve's timeline."""
    r = reserve(manifest, device=device)
    jobs = jobs_from_manifests([manifest], device=device)
    assert jobs.device == r.device
    for kernel in kernels():
        for policy in POLICIES:
            p = pack(jobs, policy, kernel=kernel)  # one job: dynamic's switch cost never applies
            assert p.start_ns.tolist() == r.start_ns.tolist(), (policy, kernel.__name__)
            assert p.end_ns.tolist() == r.end_ns.tolist(), (policy, kernel.__name__)
            assert p.makespan_ns == r.makespan_ns, (policy, kernel.__name__)
            sends = p.xfer_start_ns >= 0
            gap = np.append(r.start_ns[1:], r.makespan_ns) - r.end_ns
            assert (p.xfer_end_ns - p.xfer_start_ns)[sends].tolist() == gap[sends].tolist()
            assert (gap[~sends] == 0).all()
    return r, jobs


def test_article_on_mtia_v2_is_link_bound_in_both():
    """The article's manifest on its own device: 40 and 60 GB/s over 31.5 GB/s, 1.22 ms -> 2.06 ms."""
    m = load_manifest("article")
    link = default_catalog()["mtia_v2"].interconnect.per_direction_Bps
    expect = [math.ceil(420_000 * 40e9 / link), math.ceil(800_000 * 60e9 / link)]
    r, jobs = assert_alone_matches(m)
    assert jobs.runtime_ns.tolist() == expect and r.makespan_ns == sum(expect)
    assert 2_050_000 < r.makespan_ns < 2_060_000 and m.compute_ns == 1_220_000


def test_article_on_h100_is_not_link_bound():
    r, jobs = assert_alone_matches(load_manifest("article"), device="h100")
    assert jobs.runtime_ns.tolist() == [420_000, 800_000] and r.makespan_ns == 1_220_000 and r.notes == ()


def test_synthetic_bandwidth_bound_graph():
    m = parse_manifest(SYNTHETIC)
    have = default_catalog()["mtia_v2"].interconnect
    r, jobs = assert_alone_matches(m)
    stretched = math.ceil(300_000 * 100e9 / have.per_direction_Bps)
    assert jobs.runtime_ns.tolist() == [stretched, 200_000, 500_000]
    # the transfer is timed on the device's PCIe 5 x8, not on the nvlink_3 asked for
    assert jobs.link_names == (have.name,) and jobs.link.tolist() == [-1, 0, -1]
    assert jobs.transfer_ns.tolist() == [0, math.ceil(8e6 / have.per_direction_Bps * 1e9), 0]
    assert r.makespan_ns == stretched + 200_000 + int(jobs.transfer_ns[1]) + 500_000
    # on an H100 (NVLink 4, 450 GB/s) nothing is link-bound and the transfer crosses NVLink 4
    h100 = default_catalog()["h100_sxm"].interconnect
    _, on_h100 = assert_alone_matches(m, device="h100")
    assert on_h100.runtime_ns.tolist() == [300_000, 200_000, 500_000] and on_h100.link_names == (h100.name,)


def test_graph_that_is_not_link_bound_is_unchanged():
    m = parse_manifest(GOOD)
    _, jobs = assert_alone_matches(m)
    assert jobs.runtime_ns.tolist() == [layer.runtime_ns for layer in m.layers]
    assert jobs.transfer_ns.tolist() == [0, 0, 0] and jobs.link.tolist() == [-1, -1, -1]


def test_several_graphs_keep_each_reservations_layer_times():
    """Packed together (layers interleaved), every layer still takes what reserve() gives it."""
    graphs = [load_manifest("article"), parse_manifest(SYNTHETIC), parse_manifest(GOOD)]
    jobs = jobs_from_manifests(graphs, device="mtia_v2", arrivals_s=[0.0, 1e-4, 2e-4])
    alone = [reserve(m, device="mtia_v2") for m in graphs]
    want = np.concatenate([r.end_ns - r.start_ns for r in alone])
    for kernel in kernels():
        for policy in POLICIES:
            p = pack(jobs, policy, kernel=kernel)
            assert (p.end_ns - p.start_ns).tolist() == want.tolist(), (policy, kernel.__name__)


def test_bad_manifests_argument():
    with pytest.raises(ParameterError, match="manifests must be Manifests"):
        jobs_from_manifests([GOOD])
    with pytest.raises(ParameterError, match="arrivals_s") as info:
        jobs_from_manifests([parse_manifest(GOOD)], arrivals_s=list(range(10_000)))
    assert len(str(info.value)) < 200  # an excerpt of the bad value, never all of it


# --- property: for random manifests, pack() of one graph alone equals reserve() --------------

_LINKS = ("nvlink_2", "nvlink_3", "nvlink_4", "pcie_3", "pcie_5_x8", "infinity_fabric")


@st.composite
def layer_docs(draw, i):
    doc = {"layer": f"l{i}", "runtime": f"{draw(st.integers(1, 5_000_000))}ns",
           "memory": f"{draw(st.integers(1, 500))}MB"}
    kind = draw(st.sampled_from(("none", "bandwidth", "link", "transfer")))
    if kind == "bandwidth":
        doc["interconnect"] = f"{draw(st.integers(1, 2_000))}GB/s"
    elif kind in ("link", "transfer"):
        doc["interconnect"] = draw(st.sampled_from(_LINKS))
        if kind == "transfer":
            doc["transfer"] = f"{draw(st.integers(1, 10**9))}B"
    return doc


@st.composite
def manifests(draw):
    n = draw(st.integers(1, 8))
    return parse_manifest({"job": {"id": "prop", "gpu_type": draw(st.sampled_from(DEVICES)),
                                   "pre_reserve": draw(st.booleans()),
                                   "graph": [draw(layer_docs(i)) for i in range(n)]}})


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(manifests(), st.sampled_from((None,) + DEVICES))
def test_property_pack_alone_equals_reserve(manifest, device):
    assert_alone_matches(manifest, device=device)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(manifests(), min_size=2, max_size=4), st.sampled_from(DEVICES),
       st.sampled_from(POLICIES))
def test_property_packed_layer_times_are_reserved_ones(graphs, device, policy):
    jobs = jobs_from_manifests(graphs, device=device)
    want = np.concatenate([r.end_ns - r.start_ns for r in (reserve(m, device=device) for m in graphs)])
    for kernel in kernels():
        p = pack(jobs, policy, kernel=kernel)
        assert (p.end_ns - p.start_ns).tolist() == want.tolist()


def test_a_layer_stretched_past_the_clock_is_refused_by_both():
    """On a (made-up) 1 B/s link one layer of an hour at 100 TB/s would pass 2^62 ns."""
    import dataclasses

    from magnum_lib.hardware import Catalog

    base = default_catalog()
    acc = base["k80"]
    slow = dataclasses.replace(acc, interconnect=dataclasses.replace(acc.interconnect, per_direction_Bps=1.0))
    catalog = Catalog({**{k: base[k] for k in base}, "k80": slow})
    m = parse_manifest({"job": {"id": "x", "gpu_type": "k80", "graph": [
        {"layer": "a", "runtime": "1h", "memory": "1GB", "interconnect": "100TB/s"}]}})
    with pytest.raises(ValueError, match="device: on k80 layer a would run past 2\\^62 ns"):
        reserve(m, catalog=catalog)
    with pytest.raises(ParameterError, match="^device on k80 layer a would run past 2\\^62 ns") as info:
        jobs_from_manifests([m], catalog=catalog)
    assert info.value.name == "device"
