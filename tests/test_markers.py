"""The automatic ``kernel`` / ``cli_fuzz`` markers (tests/_markers.py) select what they must.

``make test-debug`` runs ``-m kernel`` against the bounds-checked build and ``make
unit-python`` leaves those tests out, so a test that drives a compiled kernel but is not
marked would escape the debug build, and a pure test marked by mistake would escape the
pure-Python run.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests._markers import classify, compiled_names, drives_kernel, module_facts

pytestmark = pytest.mark.once  # run once (make unit): pytest's collection, not the backend

ROOT = Path(__file__).resolve().parents[1]

# Files that compare compiled kernels with their references (among them the two the old
# hand-kept list missed): each must hold at least one test the rule marks.
MUST_DRIVE_KERNELS = [
    "test_engine_heap.py", "test_engine_queue.py", "test_node_ring.py", "test_node_balance.py",
    "test_node_dispatcher.py", "test_gossip_sim.py", "test_gossip_bloom.py",
    "test_regional_validator.py", "test_regional_contention.py", "test_graph_packing.py",
    "test_graph_packing_simple.py", "test_gossip_kernels.py", "test_teaching_forms.py",
    "test_kernel_boundaries.py", "test_graph_packing_bounds.py",
    "test_sim_core.py", "test_replay_parity.py", "test_replay_core.py", "test_sim_layer_parity.py",
    "test_replay_fill.py", "test_graph_pack_reserve_agree.py", "test_replay_gavel_fast.py",
    "test_node_dispatch_rules.py", "test_node_hedging_queue.py", "test_sim_clock.py", "test_serving_kernel.py",
]


def _collected(marker: str, files: list[str]) -> set[str]:
    """The files with at least one test pytest selects under ``-m marker`` (a real collection)."""
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                          "--collect-only", "-m", marker, *files], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode in (0, 5), out.stdout[-2000:] + out.stderr[-2000:]
    return {line.split("::")[0].split("/")[-1] for line in out.stdout.splitlines() if "::" in line}


def test_kernel_files_are_selected_and_pure_files_are_not():
    pure = ["test_units.py", "test_hardware.py"]
    selected = _collected("kernel", [f"tests/{name}" for name in MUST_DRIVE_KERNELS + pure])
    assert not set(MUST_DRIVE_KERNELS) - selected, "no test marked `kernel` in these files"
    assert not selected & set(pure)


def test_the_fuzz_is_marked_by_its_file():
    fuzz = SimpleNamespace(fspath=ROOT / "tests" / "test_cli_fuzz.py")
    assert classify(fuzz) == ["cli_fuzz"]


def test_the_rule_reads_imports_parameters_and_module_names():
    assert compiled_names() >= {"_core", "_heap", "_gavel_rounds", "_fill", "_bloom"}
    assert drives_kernel(['def test_a():\n    m = import_compiled("magnum_lib.engine._heap")'], "")
    assert drives_kernel(["def test_a():\n    simulate(backend='compiled')"], "")
    assert drives_kernel(["def test_a():\n    from magnum_lib.sim import _core"], "")
    assert drives_kernel(["def test_a(x):\n    pass"], "", "test_a[compiled-3]")
    module = 'B = ("compiled", "python")\ndef helper():\n    return B\n'
    assert module_facts(module)[1] == {"B", "helper"}
    assert drives_kernel(["def test_a():\n    helper()"], module)
    assert drives_kernel(["def test_a():\n    pass"], "import magnum_lib.replay._gavel_rounds as m\n")
    # pure tests stay unmarked: the pure-Python backend, magnum_lib._backend, a word in prose
    assert not drives_kernel(["def test_a():\n    simulate(backend='python')"], "")
    assert not drives_kernel(["def test_a():\n    from magnum_lib import _backend"], "")
    assert not drives_kernel(["def test_a():\n    '''compiled languages'''"], "")
    assert not drives_kernel(["def test_a(x):\n    pass"], "", "test_a[python-3]")
