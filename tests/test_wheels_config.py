"""The binary-wheel set-up (issue 20 §2): cibuildwheel's table in pyproject.toml and the
workflow that runs it. These machines cannot run it; what can be checked here is that
both parse and name every platform, architecture and Python version the workshop needs,
and that the smoke test is the one ``scripts/check_wheel.py --smoke`` runs here."""
from __future__ import annotations

from pathlib import Path

import pytest
import tomllib
import yaml

pytestmark = pytest.mark.once  # run once (make unit): the wheel configuration

ROOT = Path(__file__).resolve().parents[1]
PYTHONS = ("cp310", "cp311", "cp312", "cp313")
PLATFORMS = {("linux", "x86_64"), ("linux", "aarch64"), ("macos", "x86_64"), ("macos", "arm64"),
             ("windows", "AMD64")}


def _config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["cibuildwheel"]


def _workflow() -> dict:
    return yaml.safe_load((ROOT / ".github" / "workflows" / "wheels.yml").read_text(encoding="utf-8"))


def test_cibuildwheel_builds_cpython_310_to_313_only():
    config = _config()
    assert sorted(config["build"].split()) == [f"{p}-*" for p in PYTHONS]
    assert "*-win32" in config["skip"].split() and "*_i686" in config["skip"].split()
    assert config["environment"]["MAGNUM_REQUIRE_COMPILED"] == "1"  # no silent pure-Python wheel


def test_cibuildwheel_names_every_architecture():
    config = _config()
    archs = {(platform, arch) for platform in ("linux", "macos", "windows") for arch in config[platform]["archs"]}
    assert archs == PLATFORMS


def test_the_smoke_test_runs_doctor_and_one_notebook():
    config = _config()
    commands = config["test-command"]
    assert "faux-magnum doctor" in commands
    assert any("--nbval" in c and c.endswith(".ipynb") for c in commands)
    assert "lab" in config["test-extras"] and any(r.startswith("nbval") for r in config["test-requires"])


def test_the_workflow_builds_each_platform_on_its_own_architecture():
    workflow = _workflow()
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert "pull_request" in triggers and "push" in triggers
    job = workflow["jobs"]["wheels"]
    matrix = job["strategy"]["matrix"]["include"]
    assert {(m["platform"], m["arch"]) for m in matrix} == PLATFORMS
    assert len(matrix) == len(PLATFORMS)
    steps = job["steps"]
    (build,) = [s for s in steps if str(s.get("uses", "")).startswith("pypa/cibuildwheel@")]
    assert build["env"]["CIBW_ARCHS"] == "${{ matrix.arch }}"
    assert build["env"]["CIBW_PLATFORM"] == "${{ matrix.platform }}"
    assert any(str(s.get("uses", "")).startswith("actions/upload-artifact@") for s in steps)
    assert "sdist" in workflow["jobs"]
    # the arm64 and aarch64 wheels are built and tested on arm runners, not emulated
    runners = {(m["platform"], m["arch"]): m["runner"] for m in matrix}
    assert "arm" in runners[("linux", "aarch64")] and runners[("macos", "arm64")] in ("macos-14", "macos-15")
    assert "intel" in runners[("macos", "x86_64")] or runners[("macos", "x86_64")] == "macos-13"


def test_check_wheel_smoke_runs_the_same_commands():
    import importlib.util

    spec = importlib.util.spec_from_file_location("check_wheel", ROOT / "scripts" / "check_wheel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.smoke_commands() == _config()["test-command"]
