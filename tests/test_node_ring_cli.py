"""``faux-magnum bench ring``: JSON and table output, bad input (exit 2, one line naming the flag)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from magnum_lib.cli import main
from magnum_lib.node import ring
from tests.conftest import cli_json, replaced

KEYS = {"items_per_s", "wall_s", "items", "capacity", "batch", "backend", "verified"}


def test_json_output(capsys):
    out = cli_json(capsys, ["bench", "ring", "--items", "20000", "--capacity", "64", "--batch", "16"])
    assert set(out) == KEYS
    assert (out["items"], out["capacity"], out["batch"]) == (20000, 64, 16)
    assert out["verified"] is True and out["backend"] == ring.BACKEND
    assert out["wall_s"] > 0 and out["items_per_s"] == pytest.approx(20000 / out["wall_s"])


def test_defaults_fit_a_small_capacity(capsys):
    # Without --batch the batch shrinks to the capacity instead of failing.
    assert main(["bench", "ring", "--items", "1e3", "--capacity", "8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["batch"] == 8 and out["items"] == 1000 and out["verified"]


def test_table_output(capsys):
    assert main(["bench", "ring", "--items", "5000", "--capacity", "256"]) == 0
    lines = capsys.readouterr().out.splitlines()
    labels = [line[:10].strip() for line in lines]
    for label in ("items/s", "wall time", "items", "capacity", "batch", "backend", "verified"):
        assert label in labels
    assert lines[labels.index("verified")].split()[-1] == "True"


def test_module_entry_point():
    proc = subprocess.run([sys.executable, "-m", "magnum_lib", "bench", "ring", "--items", "1000",
                           "--json"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["verified"] is True


@pytest.mark.parametrize("args, flag", [
    (["--capacity", "3"], "--capacity"),
    (["--capacity", "0"], "--capacity"),
    (["--capacity", "-8"], "--capacity"),
    (["--capacity", "1e12"], "--capacity"),
    (["--capacity", "2.5"], "--capacity"),
    (["--capacity", "big"], "--capacity"),
    (["--items", "0"], "--items"),
    (["--items", "-5"], "--items"),
    (["--items", "many"], "--items"),
    (["--batch", "0"], "--batch"),
    (["--capacity", "64", "--batch", "128"], "--batch"),
])
def test_bad_input_exits_2_naming_the_flag(capsys, args, flag):
    assert main(replaced(["bench", "ring", "--items", "100"], args)) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("faux-magnum bench: error: " + flag)


@pytest.mark.parametrize("argv, words", [
    (["bench"], "required: TARGET"),
    (["bench", "heap"], "invalid choice: 'heap'"),
    (["bench", "ring", "--speed", "9"], "--speed"),
])
def test_bad_target_exits_2(capsys, argv, words):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0]


def test_bench_regional_target_reports_round_and_validations(capsys):
    from magnum_lib.cli import main

    assert main(["bench", "regional", "--nodes", "2000", "--requests", "200", "--repeats", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["nodes"] == 2000 and out["requests"] == 200
    assert out["round_ms"] > 0 and out["validations_per_s"] > 0
    assert 0.0 <= out["accepted_fraction"] <= 1.0


def test_bench_regional_bad_nodes_names_the_flag(capsys):
    from magnum_lib.cli import main

    assert main(["bench", "regional", "--nodes", "0"]) == 2
    err = capsys.readouterr().err
    assert "--nodes" in err and len(err.strip().splitlines()) == 1
