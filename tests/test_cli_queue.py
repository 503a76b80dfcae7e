"""The ``faux-magnum`` command: ``queue`` output, bad input handling, ``--version``."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

import magnum_lib
from magnum_lib.cli import main
from tests.conftest import cli_json, replaced

BASE = ["queue", "--servers", "2", "--arrival-rate", "1.5", "--service-rate", "1",
        "--jobs", "2000", "--seed", "3"]


KEYS = {"wait_mean", "time_in_system_mean", "p_wait", "utilization", "p50", "p95", "p99",
        "jobs", "events", "wall_s", "backend"}


def test_json_output(capsys):
    out = cli_json(capsys, BASE)
    assert set(out) == KEYS
    assert out["jobs"] == 2000 and out["events"] == 4000
    assert out["backend"] == magnum_lib.backend()
    assert 0 <= out["p_wait"] <= 1 and 0 < out["utilization"] <= 1
    assert 0 <= out["wait_mean"] < out["time_in_system_mean"]
    assert out["p50"] <= out["p95"] <= out["p99"]
    assert out["wall_s"] > 0


def test_same_seed_same_json(capsys):
    outs = []
    for _ in range(2):
        main(BASE + ["--json"])
        out = json.loads(capsys.readouterr().out)
        out.pop("wall_s")
        outs.append(out)
    assert outs[0] == outs[1]


def test_table_output(capsys):
    assert main(BASE) == 0
    lines = capsys.readouterr().out.splitlines()
    labels = [line[:20].strip() for line in lines]
    for label in ("model", "mean wait", "mean time in system", "P(wait > 0)", "utilization",
                  "p99 time in system", "Little's law error"):
        assert label in labels
    assert lines[0].split()[-1] == "M/M/2"
    # Aligned: every value starts in the same column.
    starts = {len(line) - len(line[20:].lstrip()) for line in lines}
    assert len(starts) == 1


def test_integer_flags_accept_readable_forms(capsys):
    assert main(["queue", "--servers", "1", "--arrival-rate", "0.5", "--service-rate", "1",
                 "--jobs", "1e3", "--seed", "1_0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["jobs"] == 1000


@pytest.mark.parametrize("args, flag", [
    (["--servers", "0"], "--servers"),
    (["--servers", "-3"], "--servers"),
    (["--servers", "two"], "--servers"),
    (["--arrival-rate", "-1"], "--arrival-rate"),
    (["--arrival-rate", "0"], "--arrival-rate"),
    (["--arrival-rate", "fast"], "--arrival-rate"),
    (["--service-rate", "-2"], "--service-rate"),
    (["--arrival-rate", "2"], "--arrival-rate"),  # load 1.0: unstable
    (["--arrival-rate", "5"], "--arrival-rate"),  # load 2.5: unstable
    (["--service", "gamma"], "--service"),
    (["--service", "lognormal", "--cv", "0"], "--cv"),
    (["--jobs", "1.5"], "--jobs"),
    (["--jobs", "0"], "--jobs"),
    (["--jobs", "many"], "--jobs"),
    (["--seed", "-1"], "--seed"),
])
def test_bad_input_exits_2_with_one_line(capsys, args, flag):
    assert main(replaced(BASE, args)) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("faux-magnum queue: error: ") and flag in lines[0]
    assert "Traceback" not in captured.err


def test_unstable_message_says_why(capsys):
    main(replaced(BASE, ["--arrival-rate", "3"]))
    assert "unstable" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    [],  # no command
    ["queue"],  # missing required flags
    ["frobnicate"],
    BASE + ["--bogus"],
])
def test_usage_errors_exit_2_with_one_line(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "error:" in err


def test_version_and_help(capsys):
    assert main(["--version"]) == 0
    out = capsys.readouterr().out
    assert magnum_lib.__version__ in out and magnum_lib.backend() in out
    assert main(["queue", "--help"]) == 0
    assert "--arrival-rate" in capsys.readouterr().out


def run_module(*args):
    return subprocess.run([sys.executable, "-m", "magnum_lib", *args],
                          capture_output=True, text=True, timeout=120)


def test_python_dash_m_bad_input_no_traceback():
    proc = run_module("queue", "--servers", "0", "--arrival-rate", "1", "--service-rate", "2")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "faux-magnum queue: error: --servers must be >= 1, got 0"
    assert proc.stdout == ""


def test_python_dash_m_json():
    proc = run_module(*BASE, "--json")
    assert proc.returncode == 0, proc.stderr
    assert set(json.loads(proc.stdout)) == KEYS
