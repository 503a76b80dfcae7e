"""``faux-magnum dispatch``: JSON and table output, determinism, one-line errors (exit 2)."""
from __future__ import annotations

import itertools
import json
import subprocess
import sys

import pytest

import magnum_lib
from magnum_lib.cli import main
from tests.conftest import cli_json

BASE = ["dispatch", "--servers", "100", "--choices", "2", "--load", "0.7", "--jobs", "5000",
        "--seed", "3"]
ISSUE_KEYS = {"time_in_system_mean", "queue_tail", "p99", "events", "wall_s"}


_json = cli_json


def test_json_output(capsys):
    out = _json(capsys, BASE)
    assert ISSUE_KEYS <= set(out)
    assert out["events"] == 2 * 5000  # one arrival and one departure per job
    tail = out["queue_tail"]
    assert isinstance(tail, list) and len(tail) == 10
    assert all(0 <= b <= a <= 1 for a, b in itertools.pairwise(tail))
    assert out["time_in_system_mean"] >= 0.5 and out["p99"] >= out["time_in_system_mean"]
    assert out["wall_s"] > 0
    assert out["backend"] == magnum_lib.backend()


def test_same_seed_same_json(capsys):
    first, second = (_json(capsys, BASE) for _ in range(2))
    first.pop("wall_s"), second.pop("wall_s")
    assert first == second


@pytest.mark.parametrize("policy", ["random", "power_of_d", "least_loaded_stale", "batch"])
def test_policies_and_table_output(capsys, policy):
    assert main(BASE + ["--policy", policy, "--refresh", "0.5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    labels = [line.split("  ")[0].strip() for line in lines]
    for label in ("model", "policy", "mean time in system", "p99 time in system",
                  "servers with >= 1 jobs", "wall time"):
        assert label in labels
    assert ("theory (N -> inf)" in labels) == (policy in ("random", "power_of_d"))


def test_multi_task_jobs(capsys):
    out = _json(capsys, BASE + ["--policy", "batch", "--tasks", "5"])
    assert out["tasks"] == 5 and out["events"] == 5000 + 5 * 5000
    assert 0 <= out["zero_wait"] <= 1
    assert main(BASE + ["--tasks", "5"]) == 0
    assert "mean job time" in capsys.readouterr().out


def test_choices_one_is_random_placement_in_theory(capsys):
    out = _json(capsys, ["dispatch", "--servers", "200", "--choices", "1", "--load", "0.5",
                         "--jobs", "20000", "--seed", "1"])
    # d = 1: M/M/1 queues at load 0.5, mean time in system 1 / (1 - 0.5) = 2 s.
    assert out["time_in_system_mean"] == pytest.approx(2.0, rel=0.15)


@pytest.mark.parametrize("argv, flag", [
    (["--load", "0"], "--load"), (["--load", "1"], "--load"), (["--load", "1.5"], "--load"),
    (["--load", "-0.2"], "--load"), (["--load", "x"], "--load"),
    (["--choices", "101"], "--choices"), (["--choices", "0"], "--choices"),
    (["--servers", "0"], "--servers"), (["--servers", "-3"], "--servers"),
    (["--jobs", "0"], "--jobs"), (["--seed", "-1"], "--seed"), (["--refresh", "0"], "--refresh"),
    (["--warmup", "1"], "--warmup"), (["--policy", "jsq"], "--policy"),
    (["--tasks", "0"], "--tasks"), (["--policy", "batch", "--tasks", "51"], "--choices"),
])
def test_bad_input_exits_2_with_one_line_naming_the_flag(capsys, argv, flag):
    args = list(BASE)
    for name, value in zip(argv[::2], argv[1::2], strict=True):
        if name in args:
            args[args.index(name) + 1] = value
        else:
            args += [name, value]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("faux-magnum dispatch: error:") and flag in lines[0]


def test_required_flags():
    assert main(["dispatch", "--servers", "10", "--load", "0.5"]) == 2  # --choices missing


def test_module_entry_point():
    proc = subprocess.run([sys.executable, "-m", "magnum_lib", "dispatch", "--servers", "20",
                           "--choices", "2", "--load", "0.5", "--jobs", "500", "--json"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert ISSUE_KEYS <= set(json.loads(proc.stdout))
    bad = subprocess.run([sys.executable, "-m", "magnum_lib", "dispatch", "--servers", "2",
                          "--choices", "3", "--load", "0.5"], capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--choices" in bad.stderr
