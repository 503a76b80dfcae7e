"""Fleet regions in parallel on Dask worker processes give the serial result; sweeps run."""
import pytest

from magnum_lib.sim import make_config
from magnum_lib.sim.run import run_config, run_fleet_dask
from magnum_lib.sim.sweeps import sweep_presets

pytest.importorskip("distributed")


def _strip(out):
    out = dict(out)
    out.pop("wall_s"), out.pop("requests_per_wall_s")
    return out


def test_fleet_on_two_worker_processes_equals_serial():
    cfg = make_config("magnum_v2", "classroom", regions=3, duration_s=0.04, seed=9)
    serial = run_config(cfg)
    parallel = run_fleet_dask(cfg)  # a private LocalCluster with two worker processes
    assert _strip(parallel) == _strip(serial)
    assert serial["regions"] == 3
    assert serial["requests"]["total"] > 0


def test_regions_differ_and_add_up():
    cfg = make_config("magnum_v2", "classroom", regions=2, duration_s=0.04, seed=1)
    one = run_config(make_config("magnum_v2", "classroom", regions=1, duration_s=0.04, seed=1))
    two = run_config(cfg)
    assert two["requests"]["total"] > one["requests"]["total"]
    assert two["nodes"] == 2 * one["nodes"]


def test_sweep_over_presets_and_seeds_serially():
    res = sweep_presets(["magnum_v1", "magnum_v2"], seeds=[0, 1], client="serial", duration_s=0.03)
    assert len(res.rows) == 4
    assert {r["preset"] for r in res.rows} == {"magnum_v1", "magnum_v2"}
    assert all(r["p50_ms"] > 0 for r in res.rows)
