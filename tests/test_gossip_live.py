"""Live UDP gossip on 127.0.0.1: the wire format, convergence, loss, malformed datagrams, CLI.

Real time is involved, so nothing here asserts a duration beyond the run's own bound; the
measured convergence time is reported (``-s`` prints it, and it is a junit property).
"""
from __future__ import annotations

import json
import math
import random
import socket
import struct
import subprocess
import sys

import pytest

from magnum_lib.cli import main
from magnum_lib.gossip.live import LiveResult, run_live
from magnum_lib.gossip.merge import Versioned, vc_view
from magnum_lib.gossip.state import NodeState, view_of
from magnum_lib.gossip.vclock import VectorClock
from magnum_lib.gossip.wire import (MAGIC, MAX_DATAGRAM, VERSION, WireError, decode, encode_view,
                                    entry_bytes, pack)

FAST = dict(interval="10ms", duration="2s")


def _datagram(body: bytes, *, magic=MAGIC, version=VERSION, kind=1, length=None) -> bytes:
    """A datagram built by hand from the documented layout (independent of encode_view)."""
    return struct.pack("!4sBBH", magic, version, kind, len(body) if length is None else length) + body


GOOD_RECORD = b'{"node_id":"x","generation":3,"busy":5,"gpus":8,"pending":[["j",1]]}'
GOOD_BODY = b'{"from":"x"}\n' + GOOD_RECORD


# -- wire format ------------------------------------------------------------------------
def test_hand_built_datagram_decodes():
    msg = decode(_datagram(GOOD_BODY))
    assert msg.sender == "x" and msg.kind == 1
    assert msg.view == {"x": NodeState("x", 3, 5, 8, (("j", 1),))}


def test_round_trip_plain_and_versioned():
    view = view_of(NodeState("a", 2, 3, 4, (("j1", 7),)), NodeState("b", 9, 0, 256))
    data, n = encode_view("a", view)
    assert n == 2 and data[:4] == MAGIC and decode(data).view == view
    vc = vc_view(view)
    vc["b"] = frozenset({Versioned(NodeState("b", 9, 1, 256), VectorClock({"b": 9, "s": 1})),
                         Versioned(NodeState("b", 9, 2, 256), VectorClock({"b": 10}))})
    data, n = encode_view("a", vc)
    msg = decode(data)
    assert msg.kind == 2 and msg.view == vc


def test_a_view_too_big_for_one_datagram_is_cut_whole_entries_first():
    view = {f"n{i}": NodeState(f"n{i}", i, 0, 256, [(f"job{k}", k) for k in range(20)]) for i in range(60)}
    data, n = encode_view("n0", view)
    assert len(data) <= MAX_DATAGRAM and 0 < n < 60
    got = decode(data).view
    assert len(got) == n and "n0" in got and all(got[k] == view[k] for k in got)
    with pytest.raises(ValueError, match="max_bytes"):
        pack("n0", 1, [entry_bytes(view["n0"])], max_bytes=50)


def _bad_datagrams(rng: random.Random) -> list[tuple[bytes, str]]:
    """(datagram, reason the receiver must count), built by hand."""
    valid = _datagram(GOOD_BODY)
    cases = [
        (b"", "short"),
        (valid[:5], "short"),
        (valid[:-3], "length"),                                   # truncated payload
        (valid + b"xx", "length"),
        (_datagram(GOOD_BODY, magic=b"XXXX"), "magic"),
        (_datagram(GOOD_BODY, version=VERSION + 1), "version"),
        (_datagram(GOOD_BODY, kind=9), "kind"),
        (_datagram(b"{not json"), "json"),
        (_datagram(b'{"from":"x"}\n\xff\xfe'), "json"),           # not UTF-8
        (_datagram(b'{"from":"x"}\n' + GOOD_RECORD[:-1]), "json"),
        (_datagram(b'{"from":""}'), "fields"),
        (_datagram(b'[1,2]'), "fields"),
        (_datagram(b'{"from":"x"}\n' + GOOD_RECORD.replace(b'"generation":3', b'"generation":-3')), "fields"),
        (_datagram(b'{"from":"x"}\n' + GOOD_RECORD.replace(b'"busy":5', b'"busy":256')), "fields"),
        (_datagram(b'{"from":"x"}\n' + GOOD_RECORD.replace(b'"gpus":8', b'"gpus":8.0')), "fields"),
        (_datagram(b'{"from":"x"}\n' + GOOD_RECORD.replace(b'"gpus":8', b'"gpus":true')), "fields"),
        (_datagram(b'{"from":"x"}\n{"node_id":"x"}'), "fields"),
        (_datagram(GOOD_BODY + b"\n" + GOOD_RECORD), "fields"),  # the same node twice
        (_datagram(b'{"from":"x"}\n{"state":' + GOOD_RECORD + b',"clock":{"x":-1}}', kind=2), "fields"),
        (_datagram(b'{"from":"x"}\n' + b"[" * 10_000 + b"]" * 10_000), "oversized"),
        (valid + bytes(MAX_DATAGRAM), "oversized"),
    ]
    for _ in range(5):  # random bytes; first byte never 'F', so never the magic
        cases.append((bytes([rng.randrange(0, 70)]) + rng.randbytes(rng.randrange(7, 300)), "magic"))
    return cases


def test_every_malformed_datagram_raises_wire_error_with_its_reason():
    for data, reason in _bad_datagrams(random.Random(1)):
        with pytest.raises(WireError) as exc:
            decode(data)
        assert exc.value.reason == reason, (data[:40], str(exc.value))


def test_deep_json_is_a_json_error_not_a_crash():
    body = b'{"from":"x"}\n' + b"[" * 5000 + b"]" * 5000  # fits; nesting beats the recursion limit
    with pytest.raises(WireError) as exc:
        decode(_datagram(body))
    assert exc.value.reason in ("json", "fields")


# -- live runs --------------------------------------------------------------------------
def _check_counters(r: LiveResult, injected: int = 0):
    assert r.datagrams_sent > 0 and r.bytes_sent > 0 and r.merges > 0
    assert r.datagrams_received <= r.datagrams_sent + injected  # loopback never invents any
    assert r.dropped_malformed == sum(r.malformed_by_reason.values())
    assert r.merges + r.dropped_malformed == r.datagrams_received
    assert r.wall_s <= r.duration_s + 5.0  # bounded (generous: the machine may be busy)


def test_16_endpoints_converge(record_property):
    r = run_live(16, fanout=3, seed=1, **FAST)
    assert r.converged, r
    assert r.convergence_time_s == max(r.seen_after_s) and min(r.seen_after_s) >= 0
    assert r.seen_after_s[0] == min(r.seen_after_s)  # the updater knows first
    assert 0 < r.convergence_time_s < r.duration_s - r.update_at_s
    assert r.dropped_loss == 0 and r.dropped_malformed == 0
    assert r.phantom_busy_endpoints == 0 and 0 <= r.knew_old_state <= 15
    _check_counters(r)
    record_property("convergence_time_s", r.convergence_time_s)
    print(f"\n16 endpoints, 10 ms, fanout 3: converged in {r.convergence_time_s * 1e3:.1f} ms "
          f"({r.datagrams_sent} datagrams, {r.bytes_sent} bytes)")
    d = r.to_dict()
    assert d["converged"] is True and json.loads(json.dumps(d)) == d


@pytest.mark.parametrize("rule", ["article", "vc", "lww"])
def test_other_merge_rules_run_live(rule):
    r = run_live(6, fanout=2, seed=2, merge=rule, **FAST)
    assert r.merge == rule
    _check_counters(r)
    if rule == "article":
        # Every endpoint that held the old state ORs it into the new one: the flaw, live. And
        # since C32's merge copies no generation, those endpoints never catch up (no convergence).
        assert r.phantom_busy_endpoints >= r.knew_old_state
        assert r.converged == (r.knew_old_state == 0)
    else:
        assert r.converged and r.phantom_busy_endpoints == 0


def test_loss_still_converges():
    r = run_live(16, fanout=3, loss=0.3, seed=3, **FAST)
    assert r.converged
    tried = r.datagrams_sent + r.dropped_loss
    # Each send is dropped with p = 0.3 independently: binomial, 5 sigma.
    assert abs(r.dropped_loss - 0.3 * tried) <= 5 * math.sqrt(tried * 0.3 * 0.7)
    _check_counters(r)


def test_malformed_datagrams_are_counted_and_endpoints_keep_working():
    cases = _bad_datagrams(random.Random(2))
    # Valid but of the vector-clock kind: an lww endpoint counts it as "kind".
    cases.append((encode_view("zz", vc_view(view_of(NodeState("zz", 1))))[0], "kind"))
    sent_to = []

    def inject(addrs):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as raw:
            for addr in addrs[:4]:
                for data, _ in cases:
                    raw.sendto(data, addr)
                sent_to.append(addr)

    r = run_live(8, fanout=2, seed=4, started=inject, **FAST)
    expected = {}
    for _, reason in cases:
        expected[reason] = expected.get(reason, 0) + len(sent_to)
    assert r.malformed_by_reason == expected
    assert r.dropped_malformed == len(cases) * 4
    assert r.converged  # and the endpoints still did their job
    _check_counters(r, injected=len(cases) * 4)


def test_runs_to_duration_when_asked_and_closes_sockets():
    addrs = []
    r = run_live(3, interval="20ms", duration="200ms", fanout=1, update_at=0.0,
                 stop_when_converged=False, started=addrs.extend)
    assert r.wall_s >= 0.2 and r.update_at_s == 0.0
    for addr in addrs:  # every port is free again
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(addr)


def test_sockets_closed_when_the_run_fails():
    addrs = []

    def boom(a):
        addrs.extend(a)
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        run_live(3, fanout=1, started=boom, **FAST)
    for addr in addrs:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(addr)


@pytest.mark.parametrize("kwargs, name", [
    (dict(endpoints=1), "endpoints"), (dict(endpoints=65), "endpoints"), (dict(endpoints=4.0), "endpoints"),
    (dict(fanout=0), "fanout"), (dict(fanout=4), "fanout"),
    (dict(loss=1.0), "loss"), (dict(loss=-0.1), "loss"), (dict(loss=float("nan")), "loss"), (dict(loss="0.1"), "loss"),
    (dict(interval="0ms"), "interval"), (dict(interval="10"), "interval"), (dict(interval=-1.0), "interval"),
    (dict(interval="3s"), "interval"), (dict(duration="abc"), "duration"), (dict(duration="11m"), "duration"),
    (dict(duration=0), "duration"), (dict(seed=-1), "seed"), (dict(merge="max"), "merge"),
    (dict(update_at=2.0), "update_at"), (dict(update_at=-0.1), "update_at"), (dict(update_at="1s"), "update_at"),
])
def test_bad_parameters(kwargs, name):
    args = dict(endpoints=4, interval="10ms", duration="2s", fanout=3)
    args.update(kwargs)
    with pytest.raises(ValueError) as exc:
        run_live(**args)
    assert exc.value.name == name, str(exc.value)


# -- CLI ------------------------------------------------------------------------------
def test_cli_json_subprocess():
    out = subprocess.run([sys.executable, "-m", "magnum_lib", "gossip-live", "--endpoints", "8",
                          "--interval", "10ms", "--duration", "2s", "--fanout", "2", "--json"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    for key in ("endpoints", "converged", "convergence_time_s", "datagrams_sent", "datagrams_received",
                "dropped_loss", "dropped_malformed", "bytes_sent", "wall_s"):
        assert key in d
    assert d["endpoints"] == 8 and d["converged"] is True and d["convergence_time_s"] > 0


def test_cli_table(capsys):
    assert main(["gossip-live", "--endpoints", "4", "--fanout", "1", "--duration", "1s"]) == 0
    out = capsys.readouterr().out
    assert "convergence time" in out and "datagrams sent" in out


@pytest.mark.parametrize("argv, flag", [
    (["--endpoints", "1"], "--endpoints"), (["--endpoints", "65"], "--endpoints"),
    (["--endpoints", "x"], "--endpoints"), (["--endpoints", "4", "--fanout", "4"], "--fanout"),
    (["--endpoints", "4", "--loss", "1"], "--loss"), (["--endpoints", "4", "--loss", "-0.5"], "--loss"),
    (["--endpoints", "4", "--interval", "0s"], "--interval"),
    (["--endpoints", "4", "--interval=-5ms"], "--interval"),
    (["--endpoints", "4", "--duration", "2"], "--duration"),
    (["--endpoints", "4", "--duration", "0ms"], "--duration"),
    (["--endpoints", "4", "--duration", "two seconds"], "--duration"),
    (["--endpoints", "4", "--merge", "or"], "--merge"),
])
def test_cli_bad_input_exits_2_with_one_line(capsys, argv, flag):
    assert main(["gossip-live"] + argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and flag in err and err.startswith("faux-magnum")
