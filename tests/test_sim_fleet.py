"""Fleet regions in parallel on Dask worker processes give the serial result; sweeps run."""
import numpy as np
import pytest

from magnum_lib.sim import make_config
from magnum_lib.sim.model import RegionLayout, plan_hints, plan_seed, region_snapshot
from magnum_lib.sim.results import summarize
from magnum_lib.sim.run import region_digest, run_config, run_fleet_dask
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


# A small fleet whose planner exchanges every 10 ms (five plans in 40 ms) at a load where the
# regions' hinted demand is below their free nodes, so the fleet plan differs from per-region plans.
EXCHANGE = dict(regions=3, duration_s=0.04, seed=9, planner_interval_s=0.01, load=0.3, hint_headroom=1.0)


def test_fleet_planner_exchange_on_two_worker_processes_equals_serial():
    cfg = make_config("magnum_v2", "classroom", **EXCHANGE)
    serial = run_config(cfg)
    parallel = run_fleet_dask(cfg)
    assert _strip(parallel) == _strip(serial)


def test_the_exchange_changes_results():
    """The fleet plan (union of the regions' snapshots) is not the regions' own plans, and the
    run with the exchange differs from the regions run alone (each planning itself)."""
    cfg = make_config("magnum_v2", "classroom", **EXCHANGE)
    snaps = [region_snapshot(RegionLayout(cfg, r)) for r in range(cfg.regions)]
    fleet = plan_hints(snaps, plan_seed(cfg, [0, 1, 2], 0))
    alone = [plan_hints([sn], plan_seed(cfg, [r], 0))[0] for r, sn in enumerate(snaps)]
    counts = lambda h: [[len(x) for x in reg] for reg in h]  # noqa: E731
    assert counts(fleet) != counts(alone)  # the fleet planner moves class shares between regions
    jobs = np.bincount(snaps[0]["stream_class"], weights=np.sum([sn["stream_jobs"] for sn in snaps], axis=0))
    assert (np.sum(counts(fleet), axis=0) <= jobs).all()  # no class hinted beyond the fleet's demand
    exchanged = run_config(cfg)
    separate = summarize([region_digest(cfg, r) for r in range(cfg.regions)], 0.0)
    assert _strip(exchanged) != _strip(separate)
    assert exchanged["requests"]["total"] == separate["requests"]["total"]  # same arrivals, other placements


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


class _NoClient:
    """A Dask client that fails the test if any work is scattered to it."""

    def submit(self, *args, **kwargs):
        raise AssertionError("work was scattered before the budget was checked")


def test_fleet_on_dask_checks_the_budget_before_scattering_work():
    from magnum_lib.base.validate import ParameterError

    big = make_config("magnum_v2", "fleet", duration_s=1000.0)
    with pytest.raises(ParameterError, match="max_memory|max_wall_s"):
        run_fleet_dask(big, client=_NoClient())
    small = make_config("magnum_v2", "classroom", regions=2, duration_s=0.01)
    with pytest.raises(ParameterError, match="max_wall_s"):
        run_fleet_dask(small, client=_NoClient(), max_wall_s=1e-6)
    with pytest.raises(AssertionError, match="scattered"):  # within the limits the work goes out
        run_fleet_dask(small, client=_NoClient())
