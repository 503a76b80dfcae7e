"""The replay kernels' contract (replay/contract.py) is the one source of their state: the
generated .pxi files are current, the kernels include them and declare no copy, every field
is used, the readable twins take the shared codes from it, and the wrappers hand the
kernels exactly the arrays it names (dtype, length), checked before the loop."""
from __future__ import annotations

import re
import runpy
from pathlib import Path

import numpy as np
import pytest

from magnum_lib.base.validate import ParameterError
from magnum_lib.replay import contract
from magnum_lib.replay.contract import KERNELS, check_given, new_arrays

ROOT = Path(__file__).resolve().parents[1]
REPLAY = ROOT / "src" / "magnum_lib" / "replay"
GEN = runpy.run_path(str(ROOT / "scripts" / "gen_replay_contract.py"))
STRUCT_VAR = {"gavel_rounds": "s", "fastloop": "c"}   # the struct pointer's name in each kernel


def _fields(kernel: str) -> list[str]:
    spec = KERNELS[kernel]
    return [f[0] for f in spec["options"] + spec["arrays"] + spec["state"] + spec["owned"]]


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_committed_pxi_is_current(kernel):
    committed = GEN["pxi_path"](kernel).read_text(encoding="utf-8")
    assert committed == GEN["render"](kernel), "run python scripts/gen_replay_contract.py and commit the .pxi"


def test_the_generator_covers_every_kernel():
    assert tuple(GEN["KERNELS"]) == tuple(KERNELS)


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_the_pxi_struct_is_the_contract_field_for_field(kernel):
    """Each field of the generated struct, name and C type, in the contract's order."""
    text = GEN["pxi_path"](kernel).read_text(encoding="utf-8")
    body = text.split(f"cdef struct {KERNELS[kernel]['struct']}:\n")[1].split("\n\n")[0]
    declared = [re.match(r"\s+(.+?)\s*(\w+)\s*(#.*)?$", line).group(1, 2)
                for line in body.splitlines() if not line.strip().startswith("#")]
    spec = KERNELS[kernel]
    ctypes = GEN["CTYPES"]
    want = [(t, n) for n, t in spec["options"]]
    want += [(f"{'const ' if fill == contract.IN else ''}{ctypes[d]}*", n) for n, d, _, fill in spec["arrays"]]
    want += [(t, n) for n, t, _ in spec["state"]] + [(t, n) for n, t in spec["owned"]]
    assert declared == want


def test_codes_are_distinct_and_dense():
    for prefix in ("JOB", "E", "K", "BY"):
        values = [v for _, v in contract.codes(prefix)]
        assert values == list(range(len(values))), prefix
    assert len(contract.JOB_STATUS_NAMES) == len(contract.codes("JOB"))
    assert sorted(contract.KINDS.values()) == [v for _, v in contract.codes("K")]
    assert set(contract.BY.values()) == {v for _, v in contract.codes("BY")}


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_every_field_is_named_once_and_used(kernel):
    fields = _fields(kernel)
    assert len(fields) == len(set(fields)), "a field named twice"
    source = (REPLAY / f"_{kernel}.pyx").read_text(encoding="utf-8")
    var = STRUCT_VAR[kernel]
    used = set(re.findall(rf"\b{var}\.(\w+)", source))
    # options and arrays are also set by the generated functions; every field must be read
    # (or written) by the kernel's own code, or it is dead
    assert set(fields) - used == set(), "fields the kernel never uses"
    assert used - set(fields) == set(), "fields the kernel uses that the contract does not name"


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_the_kernel_includes_the_contract_and_declares_no_copy(kernel):
    source = (REPLAY / f"_{kernel}.pyx").read_text(encoding="utf-8")
    assert f'include "_{kernel}_contract.pxi"' in source
    assert not re.search(r"^\s*cdef (struct|enum)\b", source, re.M), "a struct or enum declared in the .pyx"
    spec = KERNELS[kernel]
    names = [n for p in contract.SHARED_CODES + spec["codes"] for n, _ in contract.codes(p)] + list(spec["constants"])
    for name in names:
        assert not re.search(rf"^\s*(cdef \w+ )?{name}\s*=", source, re.M), f"{name} redefined in _{kernel}.pyx"
    assert not re.search(r"^(KINDS|BY)\s*=", source, re.M)


def test_the_readable_twins_take_their_codes_from_the_contract():
    for name in ("event_loop.py", "api.py", "gavel_rounds.py"):
        source = (REPLAY / name).read_text(encoding="utf-8")
        assert not re.search(r"^NS\s*=", source, re.M), f"NS defined in {name}"
        assert not re.search(r"status\[[^\]]+\]\s*(==|!=|=)\s*\d", source), f"a status code as a number in {name}"
        assert "from magnum_lib.replay.contract import" in source, name
    assert "10_000" not in (REPLAY / "gavel_rounds.py").read_text(encoding="utf-8")   # LAG_NS


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_every_length_rule_uses_only_the_kernels_sizes(kernel):
    spec = KERNELS[kernel]
    for name, _, rule, _ in spec["arrays"]:
        assert contract.length(rule, {s: 3 for s in spec["sizes"]}) >= 1, name
    with pytest.raises(NameError):
        contract.length("n + nope", {s: 3 for s in spec["sizes"]})


def test_new_arrays_by_the_rules():
    sizes = dict(n=3, m=3, T=2)
    a = new_arrays("gavel_rounds", sizes)
    given = {n for n, _, _, fill in contract.ROUNDS_ARRAYS if fill in (contract.IN, contract.GIVEN)}
    assert set(a) == {n for n, *_ in contract.ROUNDS_ARRAYS} - given
    assert a["ent_j"].shape == (6,) and a["ran"].shape == (6,) and a["runs"].shape == (5,)
    assert a["runs"].dtype == np.intp and a["moved"].dtype == np.uint8
    assert np.all(a["erate"] == 1.0) and np.all(a["jtype"] == -1) and np.all(a["alloc"] == 0)
    f = new_arrays("fastloop", dict(n=4, total=10, nb=2, nlim=0))
    assert f["tmp"].shape == (15,) and f["status"].dtype == np.int8 and np.all(f["dem_t"] == -1)
    assert contract.length("max(nlim, 1)", dict(nlim=0)) == 1


def _given_fastloop(n=4, total=10):
    sizes = dict(n=n, total=total, nb=2, nlim=0)
    given = {name: np.zeros(contract.length(rule, sizes), dtype)
             for name, dtype, rule, fill in contract.FAST_ARRAYS if fill in (contract.IN, contract.GIVEN)}
    return given, sizes


def test_check_given_refuses_what_the_contract_does_not_allow():
    given, sizes = _given_fastloop()
    check_given("fastloop", given, sizes)
    bad = {"dtype": dict(given, rem=given["rem"].astype(np.int32)),
           "length": dict(given, start=given["start"][:-1].copy()),
           "layout": dict(given, finish=np.zeros(8, np.int64)[::2]),
           "not numpy": dict(given, att=[0] * 4)}
    for why, a in bad.items():
        with pytest.raises(ParameterError, match=r"Ctx\.\w+ must be") as e:
            check_given("fastloop", a, sizes)
        assert e.value.name == {"dtype": "rem", "length": "start", "layout": "finish", "not numpy": "att"}[why]
    ro = given["rem"].copy()
    ro.flags.writeable = False
    with pytest.raises(ParameterError, match="rem"):
        check_given("fastloop", dict(given, rem=ro), sizes)
    ro_in = given["submit"].copy()
    ro_in.flags.writeable = False
    check_given("fastloop", dict(given, submit=ro_in), sizes)      # read only: fine
    with pytest.raises(ParameterError, match=r"missing \['lim'\]"):
        check_given("fastloop", {k: v for k, v in given.items() if k != "lim"}, sizes)
    with pytest.raises(ParameterError, match=r"unknown \['tmp'\]"):
        check_given("fastloop", dict(given, tmp=np.zeros(15, np.int64)), sizes)   # the contract makes it
    with pytest.raises(ParameterError, match="submit"):
        check_given("fastloop", dict(given, submit=None), sizes)   # only wf_thr may be None


# -- the compiled wrappers hand over exactly the contract's arrays -------------------------
def test_the_rounds_wrapper_gives_what_the_contract_says():
    g = pytest.importorskip("magnum_lib.replay._gavel_rounds")
    n, T = 5, 2
    x = g._checked(np.arange(n) * 10, np.full(n, 7), np.ones(n, np.int64), np.ones((n, T)), np.ones((n, T)),
                   np.full(n, 3.0), np.array([2, 2]), np.array([1, 0]), True, 1.0, 2.0, 0, lambda ids: None,
                   None, None)
    out = dict(first_start=np.full(n, -1, np.int64), finish=np.full(n, -1, np.int64),
               preemptions=np.zeros(n, np.int64), held=np.zeros(n, np.int64), status=np.zeros(n, np.int8))
    given = g._given(x, out, n, T)
    check_given("gavel_rounds", given, dict(n=n, m=n, T=T))
    assert given["wf_thr"] is None and given["status"] is out["status"]
    empty = g._given(g._checked([], [], [], np.ones((0, 1)), np.ones((0, 1)), [], [3], [0], True, 1.0, 2.0, 0,
                                None, None, None),
                     {k: v[:1] for k, v in out.items()}, 0, 1)
    check_given("gavel_rounds", empty, dict(n=0, m=1, T=1))
    with pytest.raises(ParameterError, match="RoundsState.steps_left"):
        check_given("gavel_rounds", dict(given, steps_left=given["steps_left"][:-1].copy()), dict(n=n, m=n, T=T))


def test_the_fastloop_wrapper_gives_what_the_contract_says():
    f = pytest.importorskip("magnum_lib.replay._fastloop")
    sub, wrk, gp = np.arange(6, dtype=np.int64), np.full(6, 9, np.int64), np.array([1, 2, 1, 4, 2, 1], np.int64)
    out = dict(first_start=np.full(6, -1, np.int64), finish=np.full(6, -1, np.int64),
               preemptions=np.zeros(6, np.int64), held=np.zeros(6, np.int64))
    for lim in (np.zeros(0, np.int64), np.array([5, 50], np.int64)):
        given, sizes = f._given(sub, wrk, gp, lim, out, 8)
        assert sizes == dict(n=6, total=8, nb=3, nlim=lim.size)
        check_given("fastloop", given, sizes)
        assert list(given["bsize"]) == [1, 2, 4] and list(given["bucket_of"]) == [0, 1, 0, 2, 1, 0]
