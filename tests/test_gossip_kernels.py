"""The gossip kernels cannot be driven outside their arrays from Python (issue 10, section 4).

Each case calls a kernel (compiled ``_bloom`` / ``_dissemination`` and their references)
with state or arguments that used to write past a buffer, loop forever or try to allocate
128 GiB, in a subprocess: a regression is then a failed test (exit -11, or a timeout), not
a dead pytest. Every case must raise a ``ValueError`` naming the parameter (or, for the
read-only attributes, ``AttributeError``).
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from magnum_lib.gossip import bloom_ref, dissemination_ref
from magnum_lib.gossip.bloom import M_MAX, BloomFilter
from tests.conftest import import_compiled

PRELUDE = """
import numpy as np
from magnum_lib.gossip.bloom import BloomFilter, M_MAX, K_MAX
u8, u64 = np.uint8, np.uint64
keys = np.arange(1000, dtype=u64)
def expect(exc, fn, name=None):
    try:
        fn()
    except exc as e:
        assert name is None or getattr(e, "name", None) == name, (name, e)
        print("raised", type(e).__name__, str(e)[:80].replace("\\n", " "))
    else:
        raise SystemExit("no error")
"""

BLOOM = {
    # The attack from the issue: enlarge m past the bit array, then insert.
    "set m": "f = BloomFilter(64, 3)\nexpect(AttributeError, lambda: setattr(f, 'm', 2**30))\n"
             "f.add_many(keys); assert f.m == 64",
    "set k and seed": "f = BloomFilter(64, 3)\nexpect(AttributeError, lambda: setattr(f, 'k', 64))\n"
                      "expect(AttributeError, lambda: setattr(f, 'seed', 1))",
    "swap the bit array": "f = BloomFilter(2**20, 7)\nf._bits = np.zeros(1, u8)\n"
                          "expect(ValueError, lambda: f.add_many(keys), 'bits')\n"
                          "expect(ValueError, lambda: f.contains_many(keys), 'bits')",
    "m = 0": "expect(ValueError, lambda: K.add_hashed(np.zeros(8, u8), keys, keys, 0, 3), 'm')",
    "m negative": "expect(ValueError, lambda: K.add_hashed(np.zeros(8, u8), keys, keys, -64, 3), 'm')",
    "m past M_MAX": "expect(ValueError, lambda: K.add_hashed(np.zeros(8, u8), keys, keys, M_MAX + 1, 3), 'm')",
    "bits short for m": "expect(ValueError, lambda: K.add_hashed(np.zeros(8, u8), keys, keys, 2**30, 3), 'bits')",
    "bits short, query": "expect(ValueError, lambda: K.contains_hashed(np.zeros(8, u8), keys, keys, 2**30, 3, "
                         "np.zeros(1000, u8)), 'bits')",
    "k = 0": "expect(ValueError, lambda: K.add_hashed(np.zeros(8, u8), keys, keys, 64, 0), 'k')",
    "k past K_MAX": "expect(ValueError, lambda: K.add_hashed(np.zeros(8, u8), keys, keys, 64, K_MAX + 1), 'k')",
    "h2 short": "expect(ValueError, lambda: K.add_hashed(np.zeros(8, u8), keys, keys[:10], 64, 3), 'h2')",
    "out short": "expect(ValueError, lambda: K.contains_hashed(np.zeros(8, u8), keys, keys, 64, 3, "
                 "np.zeros(10, u8)), 'out')",
}

RUMOR = """
i64, i32 = np.int64, np.int32
def rumor(n=100, fanout=3, mode=1, source=0, max_rounds=50, crash=None, inf=None, informed=None, live=None,
          churn_downtime=1):
    crash = np.full(n, 2**62, i64) if crash is None else crash
    inf = np.empty(n, i32) if inf is None else inf
    informed = np.zeros(max_rounds + 1, i64) if informed is None else informed
    live = np.zeros(max_rounds + 1, i64) if live is None else live
    return K.run_rumor(n, fanout, mode, 0, 0, churn_downtime, crash, 0, 0, source, max_rounds, True, 1,
                       inf, informed, live)
def stale(n=20, fanout=2, mode=3, warmup=5, measure=5, hist=None):
    hist = np.zeros(warmup + measure + 2, i64) if hist is None else hist
    return K.run_staleness(n, fanout, mode, 0, 0, 0, warmup, measure, 1, hist)
assert rumor()[0] > 0 and stale() > 0  # the valid calls run
"""

DISSEMINATION = {
    "n past the arrays": "expect(ValueError, lambda: rumor(n=100, crash=np.full(10, 2**62, i64)), 'crash_round')",
    "infection_round short": "expect(ValueError, lambda: rumor(inf=np.empty(10, i32)), 'infection_round')",
    "informed short": "expect(ValueError, lambda: rumor(informed=np.zeros(3, i64)), 'informed')",
    "live short": "expect(ValueError, lambda: rumor(live=np.zeros(3, i64)), 'live')",
    "source out of range": "expect(ValueError, lambda: rumor(source=100), 'source')",
    "source negative": "expect(ValueError, lambda: rumor(source=-1), 'source')",
    # pick_peers draws fanout distinct peers among n - 1: fanout >= n never ends.
    "fanout >= n": "expect(ValueError, lambda: rumor(n=4, fanout=4), 'fanout')",
    "fanout 0": "expect(ValueError, lambda: rumor(fanout=0), 'fanout')",
    "n = 1": "expect(ValueError, lambda: rumor(n=1, fanout=1), 'n')",
    "mode": "expect(ValueError, lambda: rumor(mode=7), 'mode')",
    "churn_downtime 0": "expect(ValueError, lambda: rumor(churn_downtime=0), 'churn_downtime')",
    "histogram short": "expect(ValueError, lambda: stale(hist=np.zeros(3, i64)), 'histogram')",
    "staleness fanout": "expect(ValueError, lambda: stale(n=3, fanout=3), 'fanout')",
    # two n x n views: 2**20 nodes would be 8 TiB
    "staleness n huge": "expect(ValueError, lambda: stale(n=2**20), 'n')",
}

BACKENDS = {"bloom": ("magnum_lib.gossip._bloom", "magnum_lib.gossip.bloom_ref"),
            "dissemination": ("magnum_lib.gossip._dissemination", "magnum_lib.gossip.dissemination_ref")}


def _run_cases(module: str, cases: dict, setup: str = "", *, pure: bool) -> None:
    """All cases in one subprocess (one interpreter start per backend), each announced first,
    so a segfault or hang fails the test and names the case it happened in."""
    code = PRELUDE + f"import {module} as K\n" + setup
    for name, body in cases.items():
        code += f"print({name!r}, end=': ', flush=True)\n" + textwrap.dedent(body) + "\n"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    env.pop("MAGNUM_PUREPYTHON", None)
    if pure:  # BloomFilter's own calls go to the reference kernels too
        env.update(MAGNUM_PUREPYTHON="1", MAGNUM_REQUIRE_COMPILED="0")
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"hung; last output: {(exc.stdout or b'')[-200:]!r}")
    lines = out.stdout.splitlines()
    done = [line.split(":")[0] for line in lines if ": raised " in line]
    crashed = next((c for c in cases if c not in done), None)
    assert out.returncode == 0 and crashed is None, \
        f"case {crashed!r}: exit {out.returncode} (-11 is a segfault): {out.stdout[-500:]}{out.stderr[-2000:]}"
    assert done == list(cases)


@pytest.mark.parametrize("backend", [0, 1], ids=["compiled", "python"])
def test_bloom_kernels_refuse_bad_state(backend):
    module = BACKENDS["bloom"][backend]
    if backend == 0:
        import_compiled(module)
    _run_cases(module, BLOOM, pure=backend == 1)


@pytest.mark.parametrize("backend", [0, 1], ids=["compiled", "python"])
def test_dissemination_kernels_refuse_bad_arguments(backend):
    module = BACKENDS["dissemination"][backend]
    if backend == 0:
        import_compiled(module)
    _run_cases(module, DISSEMINATION, RUMOR, pure=backend == 1)


def test_every_size_bound_is_checked_before_allocating():
    """BloomFilter(2**40, 1) asked for 128 GiB; now it is refused with nothing allocated."""
    import tracemalloc

    for m in (2**40, M_MAX + 1):
        tracemalloc.start()
        try:
            with pytest.raises(ValueError, match="m must be"):
                BloomFilter(m, 1)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 1 << 20  # numpy reports its buffers to tracemalloc: none was made
    f = BloomFilter(2**20, 3)  # the bound still leaves real filters alone
    assert f.nbytes == 2**17


def test_kernel_checks_are_the_same_on_both_backends():
    compiled = import_compiled("magnum_lib.gossip._bloom")
    msgs = []
    for mod in (compiled, bloom_ref):
        with pytest.raises(ValueError) as exc:
            mod.add_hashed(np.zeros(8, np.uint8), np.zeros(3, np.uint64), np.zeros(3, np.uint64), 2**30, 3)
        msgs.append(str(exc.value))
    assert msgs[0] == msgs[1]
    assert dissemination_ref.MAX_STALENESS_NODES < 2**20
