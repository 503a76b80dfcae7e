"""The simulator core's contract (sim/contract.py) is the one source: the generated .pxi is
current, the reference core uses its codes, the compiled core includes the .pxi and declares
none itself, and a built region's arrays and parameters match every name, dtype and rule."""
from __future__ import annotations

import re
import runpy
from pathlib import Path

import numpy as np
import pytest

from magnum_lib.sim import contract, core_ref
from magnum_lib.sim.config import PRESETS, make_config
from magnum_lib.sim.model import build_region

ROOT = Path(__file__).resolve().parents[1]
SIM = ROOT / "src" / "magnum_lib" / "sim"


def test_committed_pxi_is_current():
    committed = (SIM / "_core_contract.pxi").read_text(encoding="utf-8")
    render = runpy.run_path(str(ROOT / "scripts" / "gen_core_contract.py"))["render"]
    assert committed == render(), "run python scripts/gen_core_contract.py and commit the .pxi"


def test_codes_are_distinct_and_dense():
    for prefix in contract.CODE_GROUPS:
        values = [v for _, v in contract.codes(prefix)]
        assert values == list(range(len(values))), prefix
    assert len(contract.codes("K")) == contract.N_COUNTERS


def test_the_reference_core_takes_its_codes_from_the_contract():
    source = (SIM / "core_ref.py").read_text(encoding="utf-8")
    assert not re.search(r"^(EV|POL|VIEW|PRE|ST|C|K|TR|CS)_\w+\s*[,=]", source, re.M), "codes defined in core_ref"
    assert core_ref.PARAMS is contract.PARAMS and core_ref.TRACE_ROWS == contract.TRACE_ROWS


def test_the_compiled_core_includes_the_contract_and_declares_no_copy():
    source = (SIM / "_core.pyx").read_text(encoding="utf-8")
    assert 'include "_core_contract.pxi"' in source and "cdef class Core(CoreState)" in source
    for name in [n for p in contract.CODE_GROUPS for n, _ in contract.codes(p)] + list(contract.SIZES):
        assert not re.search(rf"^\s+{name}\s*=", source, re.M), f"{name} redefined in _core.pyx"
    for name in contract.PARAMS + tuple(a[0] for a in contract.ARRAYS):
        # a class attribute: "    cdef <type> a, b" at the class body's indent, no value, no call
        assert not re.search(rf"^    cdef [^\n(=]*\b{name}\b\s*(,|$)", source, re.M), f"{name} declared in _core.pyx"


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_the_wiring_builds_what_the_contract_says(preset):
    run = build_region(make_config(preset, duration_s=0.02, seed=3), backend="python")
    arrays, params = run.arrays, dict(zip(contract.PARAMS, run.params, strict=True))
    assert list(arrays) == [a[0] for a in contract.ARRAYS] or set(arrays) == {a[0] for a in contract.ARRAYS}
    for name, dtype, rule in contract.ARRAYS:
        assert arrays[name].dtype == np.dtype(dtype), name
        assert arrays[name].shape == contract.array_shape(rule, params, arrays), (name, rule)


def test_a_rule_that_does_not_hold_is_caught():
    run = build_region(make_config("magnum_v2", duration_s=0.02, seed=3), backend="python")
    params = dict(zip(contract.PARAMS, run.params, strict=True))
    assert contract.array_shape("n_nodes + 1", params, run.arrays) != run.arrays["node_dev"].shape


compiled = pytest.importorskip("magnum_lib.sim._core")


def test_the_compiled_core_binds_by_name():
    run = build_region(make_config("magnum_v2", duration_s=0.02, seed=3), backend="compiled")
    assert run.core.params == dict(zip(contract.PARAMS, run.params, strict=True))
    with pytest.raises(ValueError, match="params must hold"):
        compiled.Core(run.arrays, run.params[:-1])
    bad = dict(run.arrays, cnt=run.arrays["cnt"][::2])
    with pytest.raises(ValueError, match="cnt"):
        compiled.Core(bad, run.params)
