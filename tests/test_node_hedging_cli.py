"""``faux-magnum hedge``: JSON keys, table output, bad input (one line, exit 2)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from magnum_lib.cli import main

BASE = ["hedge", "--dist", "lognormal", "--sigma", "1.5", "--hedge-at", "p95",
        "--requests", "20000", "--seed", "3"]
ISSUE_KEYS = {"extra_load", "p50", "p99", "p999", "p50_unhedged", "p99_unhedged", "p999_unhedged"}


def test_json_has_the_issue_keys_and_agrees_with_the_api(capsys):
    from magnum_lib.node.hedging import simulate_hedging

    assert main(BASE + ["--json"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and len(captured.out.strip().splitlines()) == 1
    out = json.loads(captured.out)
    assert ISSUE_KEYS | {"hedge_delay_s", "backend", "wall_s"} <= set(out)
    api = simulate_hedging("lognormal", requests=20_000, hedge_at="p95", seed=3, sigma=1.5)
    for key in ISSUE_KEYS | {"hedge_delay_s"}:
        assert out[key] == getattr(api, key), key
    assert out["p999"] < out["p999_unhedged"] and out["wall_s"] > 0


def test_fixed_delay_and_table(capsys):
    assert main(["hedge", "--dist", "pareto", "--alpha", "3", "--hedge-at", "15ms",
                 "--requests", "1e4", "--cancel-delay", "1ms"]) == 0
    rows = {line[:16].strip(): line[16:].strip() for line in capsys.readouterr().out.splitlines()}
    assert rows["hedge delay"] == "15 ms (15ms)"
    assert rows["requests"] == "10,000" and "extra busy time" in rows


def test_pool_model_json(capsys):
    from magnum_lib.node.hedging_queue import simulate_hedging_queue

    args = ["hedge", "--dist", "exp", "--hedge-at", "p50", "--load", "0.6", "--servers", "4",
            "--cancel", "queued", "--requests", "3000", "--seed", "2", "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    api = simulate_hedging_queue("exp", servers=4, load=0.6, requests=3000, hedge_at="p50",
                                 seed=2, cancel="queued")
    for key in ISSUE_KEYS | {"hedge_delay_s", "utilization"}:
        assert out[key] == getattr(api, key), key
    assert out["cancel"] == "queued" and out["servers"] == 4


@pytest.mark.parametrize("args, flag", [
    (["--dist", "weibull", "--hedge-at", "p95"], "--dist"),
    (["--dist", "lognormal", "--sigma", "0", "--hedge-at", "p95"], "--sigma"),
    (["--dist", "pareto", "--alpha", "1", "--hedge-at", "p95"], "--alpha"),
    (["--dist", "exp", "--hedge-at", "p100"], "--hedge-at"),
    (["--dist", "exp", "--hedge-at=-5ms"], "--hedge-at"),
    (["--dist", "exp", "--hedge-at", "soon"], "--hedge-at"),
    (["--dist", "exp", "--hedge-at", "p95", "--requests", "0"], "--requests"),
    (["--dist", "exp", "--hedge-at", "p95", "--cancel-delay=-1ms"], "--cancel-delay"),
    (["--dist", "exp", "--hedge-at", "p95", "--sigma", "x"], "--sigma"),
    (["--dist", "exp", "--hedge-at", "p95", "--load", "1"], "--load"),
    (["--dist", "exp", "--hedge-at", "p95", "--load", "0.5", "--servers", "1"], "--servers"),
    (["--dist", "exp", "--hedge-at", "p95", "--load", "0.5", "--warmup", "10"], "--warmup"),
    (["--dist", "exp", "--hedge-at", "p95", "--cancel", "none"], "--cancel"),
])
def test_bad_input_one_line_exit_2(capsys, args, flag):
    assert main(["hedge"] + args) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and flag in lines[0] and captured.out == ""


def test_subprocess_exit_code():
    # One real process: the exit status and stderr line through `python -m magnum_lib`
    # (the JSON path is covered in-process above, same main()).
    bad = subprocess.run([sys.executable, "-m", "magnum_lib", "hedge", "--dist", "weibull",
                          "--hedge-at", "p95"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.count("\n") == 1 and "--dist" in bad.stderr
