"""`faux-magnum plan`: JSON keys, agreement with the library, one-line errors with exit 2."""
from __future__ import annotations

import json

import pytest

from magnum_lib.cli import main
from magnum_lib.planner.plan import plan
from magnum_lib.planner.snapshot import make_snapshot


def run(capsys, *argv):
    status = main(["plan", *argv])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize("algo", ["greedy", "article", "assignment", "flow", "lp"])
def test_json_keys_and_values(capsys, algo):
    status, out, err = run(capsys, "--nodes", "300", "--jobs", "120", "--algo", algo, "--seed", "5", "--json")
    assert status == 0 and err == ""
    d = json.loads(out)
    for key in ("cost", "lower_bound", "gap", "unplaced", "hints", "wall_s"):
        assert key in d
    assert d["hints"] + d["unplaced"] == 120
    assert d["lower_bound"] <= d["cost"] + 1e-9 * d["cost"]
    assert d["gap"] == pytest.approx(d["cost"] / d["lower_bound"] - 1, abs=1e-9)
    expected = plan(make_snapshot(300, 120, seed=5), algo)
    assert d["cost"] == pytest.approx(expected.cost)


def test_text_output(capsys):
    status, out, _ = run(capsys, "--nodes", "50", "--jobs", "200")
    assert status == 0 and "lower bound" in out and "unplaced:" in out


@pytest.mark.parametrize("argv, flag", [
    (["--nodes", "0", "--jobs", "5"], "--nodes must be >= 1"),
    (["--nodes", "ten", "--jobs", "5"], "--nodes must be an integer"),
    (["--nodes", "10", "--jobs", "-1"], "--jobs must be >= 0"),
    (["--nodes", "10", "--jobs", "5", "--seed", "-3"], "--seed must be >= 0"),
    (["--nodes", "10", "--jobs", "5", "--weight", "2"], "--weight must be a number in [0, 1]"),
    (["--nodes", "10", "--jobs", "5", "--weight", "abc"], "--weight must be a number"),
    (["--nodes", "10", "--jobs", "5", "--group-size", "0"], "--group-size must be >= 1"),
    (["--nodes", "5000", "--jobs", "5", "--algo", "assignment"], "--nodes must be <= 2000"),
    (["--nodes", "100", "--jobs", "5000", "--algo", "assignment"], "--jobs must be <= 1000"),
    (["--nodes", "10", "--jobs", "5", "--algo", "hungarian"], "--algo"),
    (["--jobs", "5"], "--nodes"),
])
def test_bad_input_exits_2_with_one_line(capsys, argv, flag):
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and flag in err
