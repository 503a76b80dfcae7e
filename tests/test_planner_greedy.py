"""The article's score as written against the corrected cost, on hand-made cases."""
from __future__ import annotations

import numpy as np
import pytest

from magnum_lib.planner.metrics import violations
from magnum_lib.planner.plan import plan
from magnum_lib.planner.scoring import article_score, placement_cost
from magnum_lib.planner.snapshot import Snapshot, make_snapshot

# Four 8-device nodes, one per group:        node 0     node 1     node 2     node 3
#                                             busy 6/8   busy 2/8   idle       busy 4/8
HAND = dict(node_group=[0, 1, 2, 3], node_type=[0, 0, 0, 0], node_capacity=[8] * 4,
            node_free=[2, 6, 8, 4], group_bandwidth=[50.0, 400.0, 100.0, 25.0], type_keys=("h100",))


def one_job(demand, comm):
    return Snapshot(**HAND, job_demand=[demand], job_type=[-1], job_comm=[comm], job_priority=[1])


def test_score_formulas_closed_form():
    assert article_score(4, 0.25, 100.0, 2.0) == pytest.approx(4 * 0.75 + 200.0)
    # 3 devices left over, 2 GB over 50 GB/s = 40 ms.
    assert placement_cost(1, 4, 2.0, 50.0, 0.5) == pytest.approx(0.5 * 3 + 0.5 * 40.0)
    assert placement_cost(1, 4, 2.0, 50.0, 0.0) == 3.0
    assert placement_cost(1, 4, 2.0, 50.0, 1.0) == pytest.approx(40.0)
    assert np.isinf(placement_cost(1, 4, 2.0, 0.0, 0.5))
    assert np.isnan(placement_cost(1, 4, 2.0, np.nan, 0.5))


def test_article_picks_busiest_node_when_traffic_is_nil():
    # No traffic: the article's argmin is the busiest node that fits (node 0, 2 free).
    p = plan(one_job(2, 0.0), "article")
    assert p.job_node[0] == 0
    assert p.hints[0].groups[0] == 0


def test_article_picks_lowest_bandwidth_for_heavy_traffic():
    # 8 GB per step: the article sends it to the slowest group it fits (node 3, 25 GB/s),
    # the corrected cost to the fastest (node 1, 400 GB/s).
    snap = one_job(2, 8.0)
    article, corrected = plan(snap, "article"), plan(snap, "greedy")
    assert article.job_node[0] == 3
    assert corrected.job_node[0] == 1
    assert corrected.cost < article.cost
    # The article's choice costs 8 GB / 25 GB/s = 320 ms per step against 20 ms.
    assert article.metrics.comm_time_s == pytest.approx(8.0 / 25.0)
    assert corrected.metrics.comm_time_s == pytest.approx(8.0 / 400.0)


def test_weight_slider_moves_between_packing_and_bandwidth():
    snap = one_job(2, 8.0)
    assert plan(snap, "greedy", weight=0.0).job_node[0] == 0   # best fit: 2 free -> 0 left
    assert plan(snap, "greedy", weight=1.0).job_node[0] == 1   # fastest network


def test_greedy_goes_in_priority_order():
    snap = Snapshot(**HAND, job_demand=[8, 8], job_type=[-1, -1], job_comm=[0.0, 0.0], job_priority=[1, 2])
    p = plan(snap, "greedy")
    assert p.job_node.tolist() == [-1, 2]  # one idle node: the priority-2 job gets it
    assert "turn came" in p.unplaced[0][1]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_corrected_beats_article_on_cost(seed):
    snap = make_snapshot(2000, 800, seed=seed)
    article, corrected, flow = (plan(snap, a) for a in ("article", "greedy", "flow"))
    for p in (article, corrected, flow):
        assert violations(snap, p.job_node, 0.5) == []
    assert flow.cost <= corrected.cost + 1e-9 < article.cost
    assert article.gap > corrected.gap >= 0.0
