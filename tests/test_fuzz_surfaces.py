"""Issue 22 s8: a table fuzz of the newer surfaces (resource bombs, hostile plug-ins, corrupted traces).

Every case runs ``cli.main`` in this process under a wall-clock alarm and must end in exit
0 (a small run, strict JSON without NaN) or exit 2 with one line on stderr: no traceback,
no hang, no other exit status. The cases are a fixed table (no randomness), about 200,
run once per test session in well under a minute; the counts are printed (pytest -s). Issue 22's
last classes: a crash, leak or hang inside ``schedule()`` under ``--isolate``, Ctrl-C during a
long replay and simulate, a Philly file at its size limit, and the CPU cap by the watchdog thread.
"""
from __future__ import annotations

import _thread
import contextlib
import gc
import io
import json
import signal
import sys
import threading
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


INTERRUPT = "<ctrl-c>"
WATCHDOG = "<cpu cap by the watchdog thread>"


def _run(argv):
    """(verdict, detail) of one case: clean, traceback, hang, bad-exit or nan-json.

    A case ``[INTERRUPT, seconds, *argv]`` gets a Ctrl-C (KeyboardInterrupt in the main thread)
    after that many seconds and must end in exit 130 with one line."""
    out, err = io.StringIO(), io.StringIO()
    ctrl_c = None
    if argv[0] == INTERRUPT:
        ctrl_c = threading.Timer(argv[1], _thread.interrupt_main)
        argv = argv[2:]

    def on_alarm(signum, frame):
        raise _Hang

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, LIMIT_S)
    callbacks = list(gc.callbacks)
    if ctrl_c is not None:
        # A KeyboardInterrupt raised inside a gc callback (Hypothesis registers one) is
        # "ignored" by Python, as in any callback: the case would look like a hang.
        gc.callbacks.clear()
        ctrl_c.start()
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
        if ctrl_c is not None:
            ctrl_c.cancel()
            gc.callbacks[:] = callbacks
    o, e = out.getvalue(), err.getvalue()
    if "Traceback" in e:
        return "traceback", e[-300:]
    if ctrl_c is not None:
        ok = code == 130 and e.count("\n") == 1 and "interrupted" in e and o == ""
        return ("clean", e) if ok else ("bad-exit", f"{code} after Ctrl-C: {e[:300]!r}")
    if code == 2:
        return ("clean", e) if e.count("\n") == 1 and o == "" else ("bad-exit", f"2 with {e[:300]!r}")
    if code == 0 and any("iso_" in str(a) for a in argv):  # every isolated plug-in above misbehaves
        return "accepted", o[:200]
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
    # a crash, a leak or a hang inside schedule(): the child process takes it (--isolate)
    for name, text in ISOLATED.items():
        f = tmp / f"iso_{name}.py"
        f.write_text(text)
        yield ["replay", "--trace", "tiresias", "--policy-file", f"{f}:P", "--isolate", "--max-memory", "1GiB",
               "--max-wall", "1s", "--json"]
    # Ctrl-C during a long replay (the Python loop: a plug-in) and a long simulate
    greedy = tmp / "greedy.py"
    greedy.write_text("def P(v):\n    p = v.plan()\n    [p.start(j) for j in v.queue]\n    return p\n")
    yield [INTERRUPT, 1.0, "replay", "--trace", "philly", "--nodes", "64", "--policy-file", f"{greedy}:P",
           "--max-wall", "10h", "--json"]
    yield [INTERRUPT, 1.0, "simulate", "--duration", "600s", "--max-wall", "700h", "--max-memory", "8GiB", "--json"]
    # a Philly file at its size limit (256 MiB of valid rows): --max-jobs stops reading early,
    # and without it the read is refused up front when it would pass --max-wall
    big = _philly_at_limit(tmp)
    yield ["replay", "--trace", "philly", "--vc", "6c71a0", "--max-jobs", "500", "--trace-file", big, "--json"]
    yield ["replay", "--trace", "philly", "--nodes", "64", "--max-jobs", "300", "--trace-file", big, "--json"]
    yield ["replay", "--trace", "philly", "--nodes", "64", "--trace-file", big, "--max-wall", "2s", "--json"]


#: Plug-ins run with --isolate: each must end as one line (the segfault and the abort would
#: take the command down in process; the sleep is no CPU time, so only the wall limit stops it).
ISOLATED = {
    "segv_in_schedule": "import ctypes\ndef P(v):\n    if v.now_s > 0:\n        ctypes.string_at(0)\n    return []\n",
    "abort_in_schedule": "import os\ndef P(v):\n    os.abort()\n",
    "exit_in_schedule": "import os\ndef P(v):\n    os._exit(7)\n",
    "leak_in_schedule": "k = []\ndef P(v):\n    k.append(bytearray(2**28))\n    return []\n",
    "sleeps_in_schedule": "import time\ndef P(v):\n    time.sleep(600)\n",
}


def _philly_at_limit(tmp) -> str:
    """The public Philly list repeated up to the --trace-file size limit (2**28 bytes)."""
    raw = (SHARED_DATA / "philly/philly_jobs.csv").read_bytes()
    head, body = raw.split(b"\n", 1)
    p = tmp / "philly_at_limit.csv"
    with open(p, "wb") as f:
        f.write(head + b"\n")
        for _ in range((2**28 - len(head) - 1) // len(body)):
            f.write(body)
    return str(p)


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
    from magnum_lib.commands import replay as replay_command

    monkeypatch.setattr(event_loop, "POLICY_CPU_S", 0.5)  # the spinning plug-in: stopped sooner
    monkeypatch.setattr(replay_command, "ISOLATE_START_S", 4.0)  # the sleeping one: 5 s, not 31 s
    cases = list(_simulate_cases())
    if TRACES_FOUND:
        cases += list(_replay_cases(tmp_path)) + list(_trace_cases(tmp_path))
    # The CPU cap on an OS without the POSIX CPU timer (Windows): the watchdog thread stops the spinner.
    spins = [c for c in cases if any(str(a).endswith("spins.py:P") for a in c)]
    cases += [[WATCHDOG, *c] for c in spins]
    counts, bad = {}, []
    t0 = time.perf_counter()
    for argv in cases:
        with monkeypatch.context() as m:
            if argv[0] == WATCHDOG:
                m.delattr(signal, "ITIMER_VIRTUAL")  # as on Windows
                argv = argv[1:]
            verdict, detail = _run(argv)
        counts[verdict] = counts.get(verdict, 0) + 1
        if verdict != "clean":
            bad.append((verdict, " ".join(map(str, argv))[-160:], detail))
    wall = time.perf_counter() - t0
    with capsys.disabled():
        print(f"\nfuzz of the new surfaces: {len(cases)} cases in {wall:.1f} s: {counts}")
    assert not bad, f"{len(bad)} of {len(cases)} cases not clean: {bad[:8]}"
