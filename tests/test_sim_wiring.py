"""The simulator wires the planner (soft hints in magnum_v1/v2) and the graph layer (MTIA residency)."""
import numpy as np
import pytest

from magnum_lib.graph.manifest import load_manifest, resolve_manifest
from magnum_lib.graph.reserve import reserve
from magnum_lib.graph.residency import graph_fits, tenant_reservations
from magnum_lib.hardware import default_catalog
from magnum_lib.sim import make_config
from magnum_lib.sim.model import build_region, graph_seed, run_region


def _class_pool_nodes(run, c):
    """Every node scheduler 0's pools for class c hold."""
    arrays = run.arrays
    out = []
    for q in range(arrays["cpool_off"][c], arrays["cpool_off"][c + 1]):
        p = arrays["cpool"][q]
        out.append(arrays["pool_nodes"][arrays["pool_off"][p]:arrays["pool_off"][p + 1]])
    return set(np.concatenate(out).tolist())


@pytest.mark.parametrize("tenants", [9, 10])
def test_mtia_eligibility_is_what_the_graph_layer_says(tenants):
    cfg = make_config("magnum_v2", "classroom", nodes_per_cell=40, duration_s=0.05, seed=4, graph_tenants=tenants)
    run = run_region(build_region(cfg))
    arrays, keys = run.arrays, run.type_keys
    c = [rc.name for rc in cfg.classes].index("mtia_graph")
    t = keys.index("mtia_v2")
    mtia = np.flatnonzero(arrays["node_type"] == t)
    # the graph layer, called here directly: reserve the class's manifest, admit it beside the tenants
    need = reserve(load_manifest(resolve_manifest(cfg.classes[c].graph)), device="mtia_v2").peak_memory_bytes
    held = tenant_reservations(len(mtia), tenants, "mtia_v2", cfg.graph_memory_pressure, seed=graph_seed(cfg, 0, t))
    fits, _ = graph_fits(need, held, default_catalog()["mtia_v2"].memory_bytes)
    expected = set(mtia[fits].tolist())
    assert 0 < len(expected) < len(mtia)  # some MTIA nodes hold the graph, some cannot
    assert _class_pool_nodes(run, c) == expected
    ran = arrays["node"][(arrays["cls"] == c) & (arrays["node"] >= 0)]
    assert len(ran) and set(ran.tolist()) <= expected
    assert arrays["cls_setup"][c] == 0  # pre-reserved: no graph load where it is resident
    # other classes are not restricted by the graph layer
    assert _class_pool_nodes(run, 0) == set(range(len(arrays["node_dev"])))


def test_without_pre_reservation_every_mtia_node_loads_the_graph():
    cfg = make_config("magnum_v1", "classroom", nodes_per_cell=40, duration_s=0.02, seed=4)
    run = build_region(cfg)
    arrays = run.arrays
    c = [rc.name for rc in cfg.classes].index("mtia_graph")
    t = run.type_keys.index("mtia_v2")
    assert _class_pool_nodes(run, c) == set(np.flatnonzero(arrays["node_type"] == t).tolist())
    assert arrays["cls_setup"][c] == 10_000_000


def test_presets_use_the_planner_at_t0_then_every_interval():
    for p in ("magnum_v1", "magnum_v2"):
        assert make_config(p).policy == "hints"
    cfg = make_config("magnum_v2", "classroom", duration_s=0.05, seed=1)
    run = run_region(build_region(cfg))
    assert run.plan_times == [0]  # the 30 s default: one plan, from the t = 0 snapshot
    assert run.arrays["hint_off"][-1] > 0
    fast = run_region(build_region(make_config("magnum_v2", "classroom", duration_s=0.05, seed=1,
                                               planner_interval_s=0.02)))
    assert fast.plan_times == [0, 20_000_000, 40_000_000]


def test_hints_change_placements_and_fall_back_when_full():
    base = dict(duration_s=0.1, seed=3, load=0.5)
    on = run_region(build_region(make_config("magnum_v2", "classroom", **base)))
    off = run_region(build_region(make_config("magnum_v2", "classroom", policy="two-choices", **base)))
    arrays = on.arrays
    assert not np.array_equal(arrays["node"], off.arrays["node"])
    off_hint = 0
    for c in range(len(on.cfg.classes)):
        h = set(arrays["hint_nodes"][arrays["hint_off"][c]:arrays["hint_off"][c + 1]].tolist())
        nodes = arrays["node"][(arrays["cls"] == c) & (arrays["node"] >= 0)]
        off_hint += sum(i not in h for i in nodes.tolist())
    assert off_hint > 0  # the schedulers' own placement when the hinted nodes are full


def test_hedge_copies_of_a_graph_class_go_only_where_its_graph_is_resident():
    """A hedge copy is a second run of the request: it may only land on a node that can serve
    the class, so for the MTIA graph class only where the graph layer admitted its graph."""
    cfg = make_config("magnum_v2", "classroom", nodes_per_cell=40, duration_s=0.1, seed=4, graph_tenants=9,
                      load=0.6, hedge_factor=1.05)
    run = run_region(build_region(cfg))
    arrays = run.arrays
    c = [rc.name for rc in cfg.classes].index("mtia_graph")
    resident = _class_pool_nodes(run, c)
    mtia = set(np.flatnonzero(arrays["node_type"] == run.type_keys.index("mtia_v2")).tolist())
    assert 0 < len(resident) < len(mtia)
    hedged = np.flatnonzero((arrays["cls"] == c) & (arrays["cnode"][1::2] >= 0))
    assert len(hedged) > 20  # enough copies that a draw onto a graph-less node would show
    assert set(arrays["cnode"][2 * hedged + 1].tolist()) <= resident
