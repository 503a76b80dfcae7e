"""The arena explorer (notebook 10) without a browser: controls drive real replays."""
from __future__ import annotations

import numpy as np
import pytest

from magnum_lib.replay import ReplayCluster, replay
from magnum_lib.widgets.arena_explorer import POLICIES, arena_explorer

pytestmark = pytest.mark.needs_traces   # the explorer replays a Philly slice


@pytest.fixture(scope="module")
def explorer():
    return arena_explorer()


def test_explorer_shows_every_policy_and_matches_a_direct_replay(explorer):
    assert set(explorer.scenario) == set(POLICIES)
    assert explorer.css_class in explorer.widget._dom_classes
    jobs = explorer.all_jobs.subset(slice(0, 400)).shifted()
    direct = replay(jobs, ReplayCluster.uniform(5, 4), "las")
    np.testing.assert_array_equal(explorer.scenario["las"].finish_s, direct.finish_s)
    assert "avg JCT" in explorer.readout.value and explorer.image.value[:4] == b"\x89PNG"


def test_more_gpus_never_hurt_and_the_readout_changes(explorer):
    explorer.controls["gpus"].value = 12
    tight = {p: r.summary()["avg_jct_s"] for p, r in explorer.scenario.items()}
    text = explorer.readout.value
    explorer.controls["gpus"].value = 64
    wide = {p: r.summary()["avg_jct_s"] for p, r in explorer.scenario.items()}
    assert all(wide[p] < tight[p] for p in POLICIES)
    assert explorer.readout.value != text
    explorer.controls["jobs"].value = 200
    assert all(len(r.jct_s) == 200 for r in explorer.scenario.values())
