"""``faux-magnum gossip``: JSON keys, the table, and one-line errors naming the flag."""
from __future__ import annotations

import pytest

import magnum_lib
from magnum_lib.cli import main
from tests.conftest import cli_json, replaced

BASE = ["gossip", "--nodes", "500", "--fanout", "2", "--seed", "3"]


run_json = cli_json


@pytest.mark.parametrize("mode", ["push", "pull", "pushpull"])
def test_json_output(capsys, mode):
    out = run_json(capsys, BASE + ["--mode", mode])
    assert {"rounds_to_all", "rounds_to_quorum", "coverage", "bytes_per_node_per_s", "wall_s",
            "backend", "messages"} <= set(out)
    cov = out["coverage"]
    assert cov[0] == 1 / 500 and cov[-1] == 1.0 and cov == sorted(cov)
    assert len(cov) == out["rounds_to_all"] + 1
    assert cov[out["rounds_to_quorum"]] > 0.5 >= cov[out["rounds_to_quorum"] - 1]
    assert out["backend"] == magnum_lib.backend()
    # 88-byte datagrams, 2 peers every 1 ms; pull modes add a reply per request.
    per_contact = 1 if mode == "push" else 2
    assert out["bytes_per_node_per_s"] == pytest.approx(per_contact * 2 * 88 * 1000)
    assert "note" not in out


def test_same_seed_same_json(capsys):
    outs = [run_json(capsys, BASE + ["--loss", "0.2", "--partition-rounds", "5"]) for _ in range(2)]
    for out in outs:
        out.pop("wall_s")
    assert outs[0] == outs[1]


def test_partition_holds_coverage_at_half(capsys):
    out = run_json(capsys, BASE + ["--partition-rounds", "15"])
    assert max(out["coverage"][:16]) <= 0.5 and out["rounds_to_all"] > 15


def test_unreachable_everyone_is_null_with_a_note(capsys):
    out = run_json(capsys, ["gossip", "--nodes", "300", "--loss", "0.99", "--max-rounds", "20"])
    assert out["rounds_to_all"] is None and out["stopped"] == "max_rounds"
    assert "null" in out["note"]


def test_quorum_flag(capsys):
    out = run_json(capsys, BASE + ["--quorum", "1"])
    assert out["quorum"] == 1.0 and out["rounds_to_quorum"] == out["rounds_to_all"]


def test_table_output(capsys):
    assert main(BASE + ["--interval", "200ms", "--crash-fraction", "0.1", "--churn", "0.001"]) == 0
    text = capsys.readouterr().out
    assert "rounds to all" in text and "ms)" in text and "Mbit/s" in text


@pytest.mark.parametrize("extra, flag", [
    (["--fanout", "500"], "--fanout"),
    (["--fanout", "0"], "--fanout"),
    (["--loss", "1"], "--loss"),
    (["--loss", "-0.5"], "--loss"),
    (["--loss", "lots"], "--loss"),
    (["--interval", "0ms"], "--interval"),
    (["--interval=-1ms"], "--interval"),
    (["--interval", "5"], "--interval"),  # a bare number has no unit
    (["--nodes", "1"], "--nodes"),
    (["--partition-rounds", "-2"], "--partition-rounds"),
    (["--seed", "x"], "--seed"),
    (["--mode", "flood"], "--mode"),
    (["--quorum", "0"], "--quorum"),
    (["--churn", "1.5"], "--churn"),
    (["--crash-fraction", "1"], "--crash-fraction"),
    (["--max-rounds", "0"], "--max-rounds"),
])
def test_bad_input_exits_2_naming_the_flag(capsys, extra, flag):
    assert main(replaced(BASE, extra)) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert captured.out == "" and len(lines) == 1
    assert lines[0].startswith("faux-magnum") and flag in lines[0]
