"""Drop-in means drop-in: SciPy's own ``test_linear_assignment.py`` run against ours.

The test file is taken from the installed SciPy (located with ``importlib.util.find_spec``),
its ``from scipy.optimize import linear_sum_assignment`` is replaced by ours, and pytest
runs the result in a subprocess, once per solver: the public function (SciPy's solver behind
the kit's input checks) and the readable reference. Every test it collects must pass:
SciPy's error messages, its TypeError for a string matrix, its tie-breaking on constant
matrices (SciPy issue 11602), rectangular and infeasible cases, and the comparison with
``min_weight_full_bipartite_matching`` on 100 sparse matrices.
"""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

SCIPY_IMPORT = "from scipy.optimize import linear_sum_assignment"
OURS = {"public": "from magnum_lib.planner import linear_sum_assignment",
        "reference": "from magnum_lib.planner.assignment_ref import linear_sum_assignment"}


def _scipy_test_file() -> Path | None:
    spec = importlib.util.find_spec("scipy")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0], "optimize", "tests", "test_linear_assignment.py")
    return path if path.is_file() else None


SCIPY_FILE = _scipy_test_file()

# once: both solvers are the same on every backend, so the pure-Python run would repeat this.
pytestmark = [pytest.mark.once,
              pytest.mark.skipif(SCIPY_FILE is None, reason="SciPy (with its tests) is not installed: "
                                 "scipy/optimize/tests/test_linear_assignment.py not found")]


def _run(test_file: Path, tmp_path: Path) -> ET.Element:
    """Run pytest on ``test_file`` in a fresh interpreter; return its junit <testsuite>."""
    report = tmp_path / "report.xml"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
           f"--rootdir={tmp_path}", f"--junitxml={report}", str(test_file)]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert report.is_file(), f"pytest wrote no report (exit {proc.returncode}):\n{proc.stdout[-3000:]}" \
                             f"\n{proc.stderr[-3000:]}"
    suite = ET.parse(report).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    failed = [case.get("name") for case in suite.iter("testcase")
              if case.find("failure") is not None or case.find("error") is not None
              or case.find("skipped") is not None]
    assert proc.returncode == 0 and not failed, \
        f"SciPy's tests fail against ours: {failed}\n{proc.stdout[-4000:]}"
    return suite


@pytest.fixture(scope="module", params=list(OURS))
def our_copy(request, tmp_path_factory) -> Path:
    source = SCIPY_FILE.read_text(encoding="utf-8")
    assert source.count(SCIPY_IMPORT) == 1, "SciPy's test file no longer imports linear_sum_assignment " \
                                            "the way this harness expects"
    copy = tmp_path_factory.mktemp("scipy_suite") / f"test_linear_assignment_{request.param}.py"
    copy.write_text(source.replace(SCIPY_IMPORT, OURS[request.param]), encoding="utf-8")
    return copy


def _collected(test_file: Path, tmp_path: Path) -> int:
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           f"--rootdir={tmp_path}", str(test_file)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    # One node id per collected test ("<path>::test_name[params]"; the path is empty
    # for a file outside the rootdir); warning text has spaces, node ids here do not.
    return sum(1 for line in proc.stdout.splitlines() if re.fullmatch(r"\S*::test\S*", line))


def test_scipy_suite_passes_against_ours(our_copy, tmp_path):
    suite = _run(our_copy, tmp_path)
    cases = list(suite.iter("testcase"))
    # Every test SciPy's own file has ran (none lost in the substitution) and passed.
    assert len(cases) == _collected(SCIPY_FILE, tmp_path) > 0
    # The substitution took: the module under test used ours, not SciPy's.
    assert "from scipy.optimize import" not in our_copy.read_text(encoding="utf-8")


def test_the_copy_really_calls_ours(our_copy):
    namespace: dict = {}
    exec(compile(our_copy.read_text(encoding="utf-8"), str(our_copy), "exec"), namespace)
    assert namespace["linear_sum_assignment"].__module__.startswith("magnum_lib.")
