"""Cluster topology: structural invariants, the mix, determinism, memory, bad inputs."""
from __future__ import annotations

import numpy as np
import pytest

from magnum_lib.cluster import DEFAULT_MIX, Cluster, build_cluster


@pytest.fixture(scope="module")
def small() -> Cluster:
    return build_cluster(regions=3, cells_per_region=4, nodes_per_cell=5, devices_per_node=8, seed=7)


@pytest.fixture(scope="module")
def fleet() -> Cluster:
    """The article's fleet: 600,000 GPUs in 15 regions."""
    return build_cluster(regions=15, total_devices=600_000)


def check_structure(c: Cluster) -> None:
    """Invariants every cluster must satisfy, checked from first principles."""
    n_dev, n_nodes, n_cells, n_regions = c.n_devices, c.n_nodes, c.n_cells, c.n_regions
    # CSR offsets: start at 0, end at the child count, never decrease
    for offsets, n_parent, n_child in [(c.node_device_offset, n_nodes, n_dev),
                                       (c.cell_node_offset, n_cells, n_nodes),
                                       (c.region_cell_offset, n_regions, n_cells)]:
        assert offsets.shape == (n_parent + 1,)
        assert offsets[0] == 0 and offsets[-1] == n_child
        assert np.all(np.diff(offsets) >= 0)
    # offsets agree with the child -> parent arrays
    assert np.array_equal(np.diff(c.node_device_offset), np.bincount(c.device_node, minlength=n_nodes))
    assert np.array_equal(np.diff(c.cell_node_offset), np.bincount(c.node_cell, minlength=n_cells))
    assert np.array_equal(np.diff(c.region_cell_offset), np.bincount(c.cell_region, minlength=n_regions))
    d = np.arange(n_dev)
    assert np.all(c.node_device_offset[c.device_node] <= d) and np.all(d < c.node_device_offset[c.device_node + 1])
    # levels nest: a node's region is its cell's region; a device's type is its node's type
    assert np.array_equal(c.node_region, c.cell_region[c.node_cell])
    assert np.array_equal(c.device_type, c.node_type[c.device_node])
    assert c.device_type.max() < len(c.type_keys)
    assert np.array_equal(c.device_free_memory, c.type_memory_bytes[c.device_type])


def test_default_cluster(small):
    check_structure(small)
    assert (small.n_regions, small.n_cells, small.n_nodes, small.n_devices) == (3, 12, 60, 480)
    default = build_cluster()
    check_structure(default)
    assert default.n_devices == 15 * 4 * 16 * 8
    assert default.type_keys == tuple(DEFAULT_MIX)


def test_dtypes_are_narrow(fleet):
    assert fleet.device_type.dtype == np.uint8 and fleet.node_type.dtype == np.uint8
    assert fleet.device_node.dtype == np.int32 and fleet.node_cell.dtype == np.int32
    assert fleet.node_region.dtype == np.uint8 and fleet.cell_region.dtype == np.uint8


def test_many_regions_widen_dtype():
    c = build_cluster(regions=300, cells_per_region=1, nodes_per_cell=1, devices_per_node=1)
    check_structure(c)
    assert c.node_region.dtype == np.uint16 and int(c.node_region.max()) == 299


@pytest.mark.parametrize("mix", [DEFAULT_MIX, {"h100": 1.0}, {"a100": 0.7, "v100": 0.2, "k80": 0.1},
                                 {"h100": 1 / 3, "mi300x": 1 / 3, "mtia": 1 / 3}])
def test_counts_match_mix(mix):
    dpn = 8
    c = build_cluster(regions=5, cells_per_region=3, nodes_per_cell=7, devices_per_node=dpn, mix=mix, seed=3)
    check_structure(c)
    counts = c.counts_by_type()
    assert sum(counts.values()) == c.n_devices
    for (_name, frac), key in zip(mix.items(), c.type_keys, strict=True):
        # types are dealt by node: at most one node's worth of devices from the exact share
        assert abs(counts[key] - frac * c.n_devices) <= dpn
        assert counts[key] % dpn == 0


def test_fleet_counts_and_memory(fleet):
    check_structure(fleet)
    assert fleet.n_devices == 600_000 and fleet.n_regions == 15 and fleet.n_nodes == 75_000
    assert fleet.counts_by_type() == {"h100_sxm": 300_000, "mi300x": 180_000, "mtia_v2": 120_000}
    assert fleet.nbytes < 100 * 10**6
    assert fleet.bytes_per_device == fleet.nbytes / 600_000
    # every region gets 5,000 nodes (75,000 / 15): nodes spread evenly
    for r in range(15):
        nodes = fleet.nodes_of_region(r)
        assert nodes.size == 5000 and np.all(fleet.node_region[nodes] == r)
    s = fleet.summary()
    assert s["devices"] == 600_000 and s["nbytes"] == fleet.nbytes
    assert s["memory_bytes_by_type"]["h100_sxm"] == 300_000 * 80 * 10**9


def test_uneven_total_spreads_nodes():
    c = build_cluster(regions=2, cells_per_region=3, devices_per_node=4, total_devices=4 * 20)
    check_structure(c)
    sizes = np.diff(c.cell_node_offset)
    assert sizes.sum() == 20 and sizes.max() - sizes.min() <= 1


def test_navigation(small):
    for n in (0, 17, small.n_nodes - 1):
        devs = small.devices_of_node(n)
        assert devs.size == 8 and np.all(small.device_node[devs] == n)
    for cell in range(small.n_cells):
        assert np.all(small.node_cell[small.nodes_of_cell(cell)] == cell)
    total = 0
    for r in range(small.n_regions):
        cells = small.cells_of_region(r)
        assert np.all(small.cell_region[cells] == r)
        devs = small.devices_of_region(r)
        assert np.all(small.node_region[small.device_node[devs]] == r)
        total += devs.size
    assert total == small.n_devices
    for bad in (-1, small.n_nodes, 1.0, True):
        with pytest.raises(IndexError, match="node must be an integer"):
            small.devices_of_node(bad)
    with pytest.raises(IndexError, match="region"):
        small.nodes_of_region(small.n_regions)


def test_memory_per_device_from_catalog(small):
    mem = dict(zip(small.type_keys, small.type_memory_bytes, strict=True))
    assert mem == {"h100_sxm": 80 * 10**9, "mi300x": 192 * 10**9, "mtia_v2": 128 * 10**9}
    assert np.array_equal(small.device_memory_bytes, small.device_free_memory)


def test_deterministic_for_a_seed():
    a = build_cluster(seed=11)
    b = build_cluster(seed=11)
    c = build_cluster(seed=12)
    for name in Cluster._ARRAYS:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert not np.array_equal(a.node_type, c.node_type)
    assert a.counts_by_type() == c.counts_by_type()  # the seed moves types, not their counts


def test_mix_within_tolerance_accepted():
    build_cluster(mix={"h100": 0.5 + 5e-10, "mi300x": 0.5})


@pytest.mark.parametrize("kwargs, match", [
    ({"mix": {"h100": 0.5, "mi300x": 0.4}}, r"sum to 1.*0\.9"),
    ({"mix": {"h100": 0.5, "mi300x": 0.5 + 1e-6}}, "sum to 1"),
    ({"mix": {"h200": 1.0}}, r"unknown accelerator 'h200'.*h100_sxm"),
    ({"mix": {"h100": 1.2, "mi300x": -0.2}}, r"mix\['mi300x'\] must be a finite fraction"),
    ({"mix": {"h100": float("nan")}}, "finite fraction"),
    ({"mix": {"h100": "half"}}, "finite fraction"),
    ({"mix": {}}, "non-empty mapping"),
    ({"mix": [("h100", 1.0)]}, "non-empty mapping"),
    ({"mix": {"h100": 0.5, "H100_SXM": 0.5}}, "appears twice"),
    ({"regions": 0}, "regions must be >= 1"),
    ({"regions": -1}, "regions"),
    ({"regions": 1.5}, "regions"),
    ({"regions": True}, "regions"),
    ({"cells_per_region": 0}, "cells_per_region"),
    ({"nodes_per_cell": 0}, "nodes_per_cell"),
    ({"devices_per_node": -8}, "devices_per_node"),
    ({"total_devices": 0}, "total_devices"),
    ({"total_devices": 600_001}, "not a multiple of devices_per_node=8"),
    ({"total_devices": 800, "nodes_per_cell": 4}, "not both"),
    ({"total_devices": 80}, r"10 nodes, fewer than the 60 cells"),
    ({"seed": -1}, "seed"),
    ({"seed": 1.5}, "seed"),
])
def test_build_rejects(kwargs, match):
    with pytest.raises(ValueError, match=match):
        build_cluster(**kwargs)
