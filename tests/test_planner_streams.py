"""planner.streams: per-stream soft hints from one flow plan."""
import numpy as np
import pytest

from magnum_lib.base.validate import ParameterError
from magnum_lib.planner.streams import jobs_for_devices, stream_hints


def _nodes(n=40):
    rng = np.random.default_rng(0)
    return dict(node_group=np.arange(n) // 10, node_type=np.arange(n) % 2, node_capacity=np.full(n, 8),
                node_free=rng.integers(0, 9, n), group_bandwidth=np.full(4, 100.0))


def test_hints_are_disjoint_fitting_nodes_of_the_stream_type():
    nd = _nodes()
    out, p = stream_hints(**nd, jobs=[5, 4, 3], stream_type=[0, 1, -1], stream_priority=[3, 2, 1], job_demand=4)
    assert [len(h) for h in out] == [5, 4, 3]
    allh = np.concatenate(out)
    assert len(set(allh.tolist())) == len(allh)  # one job per node: disjoint
    assert (nd["node_free"][allh] >= 4).all()
    assert (nd["node_type"][out[0]] == 0).all() and (nd["node_type"][out[1]] == 1).all()
    assert p.metrics.placed == 12


def test_more_jobs_than_fitting_nodes_places_the_higher_priority_first():
    nd = _nodes()
    fit0 = int(((nd["node_type"] == 0) & (nd["node_free"] >= 4)).sum())
    out, _ = stream_hints(**nd, jobs=[fit0, fit0], stream_type=[0, 0], stream_priority=[1, 3], job_demand=4)
    assert len(out[1]) == fit0 and len(out[0]) == 0


def test_ties_fall_anywhere_not_on_the_first_nodes():
    n = 400
    nd = dict(node_group=np.arange(n) // 100, node_type=np.zeros(n, np.int64), node_capacity=np.full(n, 8),
              node_free=np.full(n, 8), group_bandwidth=np.full(4, 100.0))
    picks = [stream_hints(**nd, jobs=[40], stream_type=[0], stream_priority=[1], job_demand=4, seed=s)[0][0]
             for s in (1, 2)]
    assert not np.array_equal(np.sort(picks[0]), np.sort(picks[1]))
    assert len(np.unique(picks[0] // 100)) == 4  # every group gets some
    assert jobs_for_devices([0.0, 7.9, 8.0, 1e9], 4, 100).tolist() == [0, 2, 2, 100]


@pytest.mark.parametrize("kw", [dict(jobs=[-1]), dict(stream_type=[0, 1]), dict(job_demand=0)])
def test_bad_inputs_name_the_parameter(kw):
    args = dict(_nodes(), jobs=[2], stream_type=[0], stream_priority=[1], job_demand=4)
    args.update(kw)
    with pytest.raises(ParameterError):
        stream_hints(**args)
    with pytest.raises(ParameterError):
        jobs_for_devices([np.nan], 4, 10)
