"""Issue 22 s3: a plug-in run in a child process (``replay --isolate``, ``leaderboard(isolate=True)``,
:func:`magnum_lib.replay.isolate.run_isolated`): a crash, a leak or a hang inside ``schedule()``
is one ParameterError (the CLI: one line, exit 2), and a sound run gives the in-process result."""
from __future__ import annotations

import ctypes
import json
import operator
import os
import sys
import time

import pytest

from magnum_lib.base.validate import ParameterError, check_int
from magnum_lib.cli import main
from magnum_lib.replay.isolate import IsolationError, run_isolated

POSIX = sys.platform != "win32"


def test_run_isolated_returns_and_raises():
    assert run_isolated(max, (1, 2)) == 2
    with pytest.raises(ParameterError, match="n must be >= 0") as e:
        run_isolated(check_int, ("n", -1, 0))
    assert e.value.name == "n" and not isinstance(e.value, IsolationError)
    with pytest.raises(ParameterError, match="'p' raised ZeroDivisionError"):
        run_isolated(operator.truediv, (1, 0), label="'p'")


@pytest.mark.skipif(not POSIX, reason="signals name the crash on POSIX")
def test_run_isolated_survives_a_crash_an_exit_and_a_hang():
    with pytest.raises(IsolationError, match=r"'p' crashed the Python interpreter \(SIGSEGV\)"):
        run_isolated(ctypes.string_at, (0,), label="'p'")
    with pytest.raises(IsolationError, match="exit status 3"):
        run_isolated(os._exit, (3,))
    t0 = time.monotonic()
    with pytest.raises(IsolationError, match="time limit of 1 s"):
        run_isolated(time.sleep, (60,), timeout_s=1.0)
    assert time.monotonic() - t0 < 30


PLUGINS = {
    "segv": "import ctypes\ndef P(v):\n    if v.now_s > 0:\n        ctypes.string_at(0)\n    return []\n",
    "abort": "import os\ndef P(v):\n    os.abort()\n",
    "leak": "keep = []\ndef P(v):\n    keep.append(bytearray(2**28))\n    return []\n",
    "sleeps": "import time\ndef P(v):\n    time.sleep(600)\n",
    "greedy": "def P(v):\n    p = v.plan()\n    for j in v.queue:\n        p.start(j)\n    return p\n",
}


def _cli(tmp_path, capsys, name, *extra):
    f = tmp_path / f"{name}.py"
    f.write_text(PLUGINS[name])
    code = main(["replay", "--trace", "tiresias", "--trace-file", str(_trace(tmp_path)),
                 "--policy-file", f"{f}:P", "--json", *extra])
    out, err = capsys.readouterr()
    return code, out, err


def _trace(tmp_path):
    p = tmp_path / "t.csv"
    rows = "".join(f"{i},{1 + i % 4},{10 * i},1,resnet,{100 + 7 * i},0\n" for i in range(40))
    p.write_text("job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n" + rows)
    return p


@pytest.mark.skipif(not POSIX, reason="the crashes and the memory cap are POSIX")
@pytest.mark.parametrize("name, message", [("segv", "SIGSEGV"), ("abort", "SIGABRT"),
                                           ("leak", "MemoryError")])
def test_cli_isolate_turns_a_crash_or_leak_into_one_line(tmp_path, capsys, name, message):
    if name == "leak" and not sys.platform.startswith("linux"):
        pytest.skip("RLIMIT_AS is enforced on Linux")
    code, out, err = _cli(tmp_path, capsys, name, "--isolate", "--max-memory", "1GiB")
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert message in err and (f"{name}.py" in err or "'P'" in err)  # names the file or the policy


def test_cli_isolate_stops_a_hang_and_gives_the_same_result(tmp_path, capsys, monkeypatch):
    from magnum_lib.commands import replay as cmd

    monkeypatch.setattr(cmd, "ISOLATE_START_S", 4.0)
    code, out, err = _cli(tmp_path, capsys, "sleeps", "--isolate", "--max-wall", "1s")
    assert code == 2 and out == "" and "time limit of 5 s" in err and err.count("\n") == 1, err
    code, out, _ = _cli(tmp_path, capsys, "greedy", "--isolate")
    code2, out2, _ = _cli(tmp_path, capsys, "greedy")
    a, b = json.loads(out), json.loads(out2)
    a.pop("wall_s"), b.pop("wall_s")
    assert code == code2 == 0 and a == b


@pytest.mark.skipif(not POSIX, reason="the crash is a POSIX signal")
def test_leaderboard_isolated_ranks_a_crashing_entrant_last(tmp_path):
    from magnum_lib.replay import ReplayCluster, make_jobs
    from magnum_lib.replay.arena import leaderboard

    f = tmp_path / "segv.py"
    f.write_text(PLUGINS["segv"])
    jobs = make_jobs([0, 5, 9, 30], [100, 20, 50, 10], [1, 2, 1, 4])
    rows, _ = leaderboard({"crash": f"{f}:P", "fifo": "fifo-strict", "srtf": "srtf"}, [jobs],
                          ReplayCluster.uniform(1, 4), isolate=True, timeout_s=60)
    assert [r["policy"] for r in rows][-1] == "crash" and rows[-1]["avg_jct_s"] is None
    assert "SIGSEGV" in rows[-1]["error"]
    plain, _ = leaderboard({"fifo": "fifo-strict", "srtf": "srtf"}, [jobs], ReplayCluster.uniform(1, 4))
    assert [(r["policy"], r["avg_jct_s"]) for r in rows[:2]] == [(r["policy"], r["avg_jct_s"]) for r in plain]
