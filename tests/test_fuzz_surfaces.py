"""Issue 22 s8: a table fuzz of the newer surfaces (resource bombs, hostile plug-ins, corrupted traces).

Every case runs ``cli.main`` in this process under a wall-clock alarm and must end in exit
0 (a small run, strict JSON without NaN) or exit 2 with one line on stderr: no traceback,
no hang, no other exit status. The cases are a fixed table (no randomness), about 200,
run once per test session in well under a minute; the counts are printed (pytest -s).
"""
from __future__ import annotations

import contextlib
import io
import json
import signal
import sys
import time

import pytest

from magnum_lib import cli
from magnum_lib.replay import event_loop
from tests.conftest import SHARED_DATA, TRACES_FOUND

LIMIT_S = 20.0  # per case; refusals take milliseconds, accepted runs are capped at --max-wall 2s

pytestmark = pytest.mark.skipif(sys.platform == "win32" or not hasattr(signal, "SIGALRM"),
                                reason="the per-case alarm is POSIX")


class _Hang(BaseException):
    pass


def _run(argv):
    """(verdict, detail) of one case: clean, traceback, hang, bad-exit or nan-json."""
    out, err = io.StringIO(), io.StringIO()

    def on_alarm(signum, frame):
        raise _Hang

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, LIMIT_S)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(list(argv))
    except _Hang:
        return "hang", ""
    except BaseException as exc:  # escaped the CLI: what a user sees as a traceback
        return "traceback", f"{type(exc).__name__}: {exc}"[:300]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    o, e = out.getvalue(), err.getvalue()
    if "Traceback" in e:
        return "traceback", e[-300:]
    if code == 2:
        return ("clean", e) if e.count("\n") == 1 and o == "" else ("bad-exit", f"2 with {e[:300]!r}")
    if code == 0:
        if "--json" in argv:
            try:
                json.loads(o, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
            except ValueError as exc:
                return "nan-json", str(exc)[:200]
        return "clean", ""
    return "bad-exit", f"{code}: {e[:300]!r}"


# ------------------------------------------------------------------ the table
def _simulate_cases():
    extremes = [["--regions", "64"], ["--cells-per-region", "4096"], ["--nodes-per-cell", "1000000"],
                ["--rate", "1e9"], ["--load", "10"], ["--round", "100ns"], ["--gossip-interval", "1us"],
                ["--digest-interval", "1us"], ["--cluster", "fleet"], ["--cluster", "region"],
                ["--regions", "64", "--cells-per-region", "4096", "--nodes-per-cell", "488"]]
    for extra in extremes:
        for duration in ("1ms", "1s", "60m"):
            yield ["simulate", *extra, "--duration", duration, "--max-wall", "2s", "--json"]


PLUGINS = {
    "exit3": "import sys\nsys.exit(3)\n",
    "raises": "raise RuntimeError('boom')\n",
    "recurses": "def f():\n    return f()\nf()\n",
    "segfault": "import ctypes\nctypes.string_at(0)\n",
    "keyboard": "raise KeyboardInterrupt\n",
    "nothing": "x = 1\n",
    "start_int": "from magnum_lib.replay import Decision\ndef P(v):\n    return Decision(start=5)\n",
    "start_str": "from magnum_lib.replay import Decision\ndef P(v):\n    return Decision(start=['x'])\n",
    "start_float": "from magnum_lib.replay import Decision\ndef P(v):\n    return Decision(start=[1.5])\n",
    "start_type": "from magnum_lib.replay import Decision\ndef P(v):\n    return Decision(start=[(0, 'nope')])\n",
    "preempt_int": "from magnum_lib.replay import Decision\ndef P(v):\n    return Decision(preempt=5)\n",
    "wake_str": "from magnum_lib.replay import Decision\ndef P(v):\n    return Decision(wake_s='soon')\n",
    "wake_huge": "from magnum_lib.replay import Decision\ndef P(v):\n    return Decision(wake_s=1e300)\n",
    "wake_nan": "from magnum_lib.replay import Decision\ndef P(v):\n    return Decision(wake_s=float('nan'))\n",
    "wake_every_ns": ("def P(v):\n    p = v.plan()\n    [p.start(j) for j in v.queue]\n"
                      "    p.wake_at_ns(int(round(v.now_s * 1e9)) + 1)\n    return p\n"),
    "returns_none": "def P(v):\n    return None\n",
    "returns_42": "def P(v):\n    return 42\n",
    "returns_object": "def P(v):\n    return object()\n",
    "divides": "def P(v):\n    return 1 / 0\n",
    "exits": "def P(v):\n    raise SystemExit('bye')\n",
    "spins": "def P(v):\n    while True:\n        pass\n",
    "recurse_in_call": "def P(v):\n    return P(v)\n",
    "writes_view": "def P(v):\n    v.jobs.num_gpus[:] = 1\n    return []\n",
    "no_schedule": "from magnum_lib.replay import Policy\nclass P(Policy):\n    pass\n",
    "round_nan": ("from magnum_lib.replay import Policy\nclass P(Policy):\n    round_s = float('nan')\n"
                  "    def schedule(self, v):\n        return []\n"),
    "round_neg": ("from magnum_lib.replay import Policy\nclass P(Policy):\n    round_s = -1.0\n"
                  "    def schedule(self, v):\n        return []\n"),
    "round_tiny": ("from magnum_lib.replay import Policy\nclass P(Policy):\n    round_s = 1e-9\n"
                   "    def schedule(self, v):\n        return []\n"),
    "reset_raises": ("from magnum_lib.replay import Policy\nclass P(Policy):\n    def reset(self, j, c):\n"
                     "        raise ValueError('no')\n    def schedule(self, v):\n        return []\n"),
    "ctor_exits": ("from magnum_lib.replay import Policy\nclass P(Policy):\n    def __init__(self):\n"
                   "        raise SystemExit(4)\n    def schedule(self, v):\n        return []\n"),
}


def _replay_cases(tmp):
    for name, text in PLUGINS.items():
        f = tmp / f"{name}.py"
        f.write_text(text)
        yield ["replay", "--trace", "tiresias", "--policy-file", f"{f}:P", "--max-wall", "2s", "--json"]
    for policy in ("gavel", "gavel-blind", "ftf", "gavel-rounds", "gavel-fifo"):
        for rnd in ("1ms", "1s"):
            yield ["replay", "--trace", "tiresias", "--policy", policy, "--round", rnd, "--max-wall", "2s", "--json"]
    yield ["replay", "--trace", "philly", "--nodes", "1000000", "--gpus-per-node", "1024", "--json"]
    yield ["replay", "--trace", "gavel", "--jobs", "10000000", "--json"]
    yield ["replay", "--trace", "gavel", "--jobs", "1000", "--policy", "gavel", "--round", "1ms", "--json"]
    yield ["replay", "--trace", "tiresias", "--policy", "las", "--las-thresholds", "999999999999.999999999", "--json"]
    yield ["replay", "--trace", "tiresias", "--trace-file", "/proc/self/mem", "--json"]
    yield ["replay", "--trace", "sample", "--json"]


def _trace_cases(tmp):
    """Corrupted copies of the real traces: truncation, encodings, NaN, negative, huge, wrong columns."""
    import csv as _csv

    srcs = {"tiresias": "tiresias/60_job.csv", "philly": "philly/philly_jobs.csv",
            "alibaba": "alibaba/openb_pod_list_default.csv"}
    cmd = {"tiresias": ["replay", "--trace", "tiresias"], "philly": ["replay", "--trace", "philly", "--nodes", "8"],
           "alibaba": ["replay", "--trace", "alibaba", "--nodes", "8"]}
    numeric = {"tiresias": ["num_gpu", "submit_time", "duration", "job_id"], "philly": ["duration", "num_gpus"],
               "alibaba": ["num_gpu", "gpu_milli", "creation_time", "deletion_time"]}
    for trace, rel in srcs.items():
        raw = (SHARED_DATA / rel).read_bytes()
        lines = raw.split(b"\n")
        head, body = lines[0], [ln for ln in lines[1:120] if ln]
        small = b"\n".join([head, *body]) + b"\n"
        variants = {"empty": b"", "header_only": head + b"\n", "truncated_row": small[:-7],
                    "nonutf8": small.replace(b",", b",\xff", 3), "crlf": small.replace(b"\n", b"\r\n"),
                    "wrong_columns": b"a,b,c\n1,2,3\n", "binary": bytes(range(256)) * 8,
                    "utf16": small.decode().encode("utf-16"), "nul": small.replace(b",", b"\x00", 2),
                    "long_line": head + b"\n" + b"1" * 3_000_000 + b"\n",
                    "duplicate_rows": head + b"\n" + body[0] + b"\n" + body[0] + b"\n"}
        cols = next(_csv.reader([head.decode()]))
        for col in numeric[trace]:
            i = cols.index(col)
            for tag, v in (("nan", b"nan"), ("neg", b"-5"), ("huge", b"1e308"), ("gpus9e18", b"9000000000000000000"),
                           ("inf", b"inf"), ("text", b"abc"), ("blank", b"")):
                rows = [head]
                for ln in body:
                    f = ln.split(b",")
                    f[i] = v
                    rows.append(b",".join(f))
                variants[f"{col}_{tag}"] = b"\n".join(rows) + b"\n"
        for name, data in variants.items():
            p = tmp / f"{trace}_{name}.csv"
            p.write_bytes(data)
            yield [*cmd[trace], "--trace-file", str(p), "--json"]
    g = (SHARED_DATA / "gavel/simulation_throughputs.json").read_bytes()
    obj = json.loads(g)
    gavel = {"empty_obj": b"{}", "truncated": g[: len(g) // 2], "list": b"[1,2,3]", "empty": b"",
             "zeros": json.dumps({t: {k: {"null": 0.0} for k in v} for t, v in obj.items()}).encode(),
             "nan": g.replace(b"4.795294551566172", b"NaN", 1), "neg": g.replace(b"4.795294551566172", b"-4.8", 1),
             "huge": g.replace(b"4.795294551566172", b"1e308", 1), "nonutf8": b"\xff\xfe" + g[:1000],
             "dupkey": b'{"k80": {"a": 1}, "k80": {"b": 2}}', "deep": b"[" * 100_000 + b"]" * 100_000}
    for name, data in gavel.items():
        p = tmp / f"gavel_{name}.json"
        p.write_bytes(data)
        yield ["hetero", "--trace", "gavel", "--trace-file", str(p), "--json"]


def test_fuzz_new_surfaces(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(event_loop, "POLICY_CPU_S", 0.5)  # the spinning plug-in: stopped sooner
    cases = list(_simulate_cases())
    if TRACES_FOUND:
        cases += list(_replay_cases(tmp_path)) + list(_trace_cases(tmp_path))
    counts, bad = {}, []
    t0 = time.perf_counter()
    for argv in cases:
        verdict, detail = _run(argv)
        counts[verdict] = counts.get(verdict, 0) + 1
        if verdict != "clean":
            bad.append((verdict, " ".join(argv)[-160:], detail))
    wall = time.perf_counter() - t0
    with capsys.disabled():
        print(f"\nfuzz of the new surfaces: {len(cases)} cases in {wall:.1f} s: {counts}")
    assert not bad, f"{len(bad)} of {len(cases)} cases not clean: {bad[:8]}"
