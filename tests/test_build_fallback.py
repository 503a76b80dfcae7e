"""Installing without a C compiler (issue 20 §1): setup.py falls back to the pure-Python
backend in one line, the installed copy says so, and the real wheel passes the README.

The end-to-end check (``scripts/check_wheel.py --no-compiler --notebooks``: an sdist, a
wheel built from it with the compiler made unavailable, a venv, the README's command block,
every notebook under nbval) is CI's ``make wheel-check-all`` step
(tests/test_packaging.py checks that it is).
"""
from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.once  # run once (make unit): it builds and installs its own pure-Python wheel, whatever backend runs pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "magnum_lib"
MARKER = "_pure_python_install.txt"


def _setup_py(project: Path, *args, **env) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith("MAGNUM_") and k != "PYTHONPATH"}
    full.update(env)
    return subprocess.run([sys.executable, "setup.py", *args], cwd=project, env=full, capture_output=True,
                          text=True, timeout=600)


def _project(tmp_path: Path, package_files=None) -> Path:
    """A copy of the build files and the package (no compiled or generated files)."""
    project = tmp_path / "project"
    project.mkdir()
    for name in ("setup.py", "pyproject.toml", "README.md", "MANIFEST.in"):
        shutil.copy2(ROOT / name, project / name)
    shutil.copytree(ROOT / "notebooks", project / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    shutil.copytree(ROOT / "lab-settings", project / "lab-settings")
    if package_files is None:
        shutil.copytree(PACKAGE, project / "src" / "magnum_lib",
                        ignore=shutil.ignore_patterns("*.so", "*.pyd", "*.c", "*.html", "__pycache__"))
    else:
        for rel, text in package_files.items():
            (project / "src" / "magnum_lib" / rel).parent.mkdir(parents=True, exist_ok=True)
            (project / "src" / "magnum_lib" / rel).write_text(text, encoding="utf-8")
    return project


def _build_lines(out: subprocess.CompletedProcess) -> list[str]:
    return [line for line in (out.stdout + out.stderr).splitlines() if line.startswith("magnum-build:")]


NO_CC = {"CC": "/bin/false", "CXX": "/bin/false", "LDSHARED": "/bin/false"}


def test_no_compiler_installs_the_pure_python_backend_in_one_line(tmp_path):
    project = _project(tmp_path)
    out = _setup_py(project, "-q", "build_ext", **NO_CC)
    assert out.returncode == 0, out.stderr
    lines = _build_lines(out)
    assert len(lines) == 1, lines
    assert "cannot compile here" in lines[0] and "installed the pure-Python backend" in lines[0]
    assert "install a C compiler" in lines[0] and "pip install --force-reinstall" in lines[0]
    assert "/bin/false" in lines[0] and len(lines[0]) < 600  # the cause, not the 40 compiler flags
    built = list((project / "build").glob("lib*/magnum_lib"))
    assert len(built) == 1
    assert "CompileError" in (built[0] / MARKER).read_text(encoding="utf-8")
    assert not list(built[0].rglob("*.so")) and not list(built[0].rglob("*.pyd"))
    # the compiler was probed before anything slow: no C was generated
    assert not list((project / "src").rglob("*.c"))


def test_require_compiled_turns_the_fallback_into_an_error(tmp_path):
    project = _project(tmp_path)
    out = _setup_py(project, "-q", "build_ext", MAGNUM_REQUIRE_COMPILED="1", **NO_CC)
    assert out.returncode != 0
    assert "MAGNUM_REQUIRE_COMPILED=1" in out.stderr and "compiling failed" in out.stderr
    assert not list((project / "build").glob(f"lib*/magnum_lib/{MARKER}"))


def test_inplace_fallback_writes_no_marker_into_the_checkout(tmp_path):
    project = _project(tmp_path)
    out = _setup_py(project, "-q", "build_ext", "--inplace", **NO_CC)
    assert out.returncode == 0, out.stderr
    assert len(_build_lines(out)) == 1
    assert not (project / "src" / "magnum_lib" / MARKER).exists()


def test_build_py_ships_the_notebooks_and_lab_settings(tmp_path):
    project = _project(tmp_path)
    out = _setup_py(project, "-q", "build_py", "--build-lib", str(tmp_path / "lib"))
    assert out.returncode == 0, out.stderr
    shipped = tmp_path / "lib" / "magnum_lib" / "_notebooks"
    check_wheel = _check_wheel()
    assert [p for p in check_wheel.kit_files(ROOT) if not (shipped / p).is_file()] == []
    assert len(check_wheel.kit_files(ROOT)) > 20  # 11 notebooks, their solutions, READMEs, settings
    assert (shipped / "00_welcome.ipynb").read_bytes() == (ROOT / "notebooks" / "00_welcome.ipynb").read_bytes()


def test_the_sdist_carries_what_build_py_copies():
    # MANIFEST.in must name every KIT_FILES pattern, or `pip install <sdist>` ships no notebooks.
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    (kit,) = [ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
              and getattr(n.targets[0], "id", None) == "KIT_FILES"]
    manifest = (ROOT / "MANIFEST.in").read_text(encoding="utf-8").split()
    assert set(kit) <= set(manifest)


TINY = {"__init__.py": "", "_tiny.pyx": "def twice(long x):\n    return 2 * x\n"}


def test_compiling_shows_the_warning_up_front_and_one_progress_line_per_module(tmp_path):
    if not (shutil.which("gcc") or shutil.which("cc")):
        pytest.skip("no C compiler here: the fallback tests above cover this machine")
    project = _project(tmp_path, TINY)
    out = _setup_py(project, "build_ext", "--inplace")
    assert out.returncode == 0, out.stderr
    lines = _build_lines(out)
    assert len(lines) == 2, lines
    assert "compiling 1 Cython extensions" in lines[0] and "several minutes" in lines[0]
    assert "pure-Python backend" in lines[0]
    assert lines[1] == "magnum-build: [1/1] compiling magnum_lib._tiny"
    assert list((project / "src" / "magnum_lib").glob("_tiny.*.so")) or list(
        (project / "src" / "magnum_lib").glob("_tiny.*.pyd"))
    again = _setup_py(project, "build_ext", "--inplace")
    assert _build_lines(again)[1:] == ["magnum-build: [1/1] up to date: magnum_lib._tiny"]


# ------------------------------------------------------------------ the installed copy

def _installed_pure_copy(tmp_path: Path) -> Path:
    site = tmp_path / "site-packages"
    shutil.copytree(PACKAGE, site / "magnum_lib",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "*.c", "*.html", "__pycache__"))
    (site / "magnum_lib" / MARKER).write_text("CompileError: /bin/false returned non-zero exit status 1\n",
                                              encoding="utf-8")
    return site


def _run(site: Path, *argv) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAGNUM_")}
    env["PYTHONPATH"] = str(site)
    return subprocess.run([sys.executable, "-W", "always", "-m", "magnum_lib", *argv], cwd=site, env=env,
                          capture_output=True, text=True, timeout=300)


def test_pure_python_install_reports_its_backend_quietly(tmp_path):
    site = _installed_pure_copy(tmp_path)
    out = _run(site, "--version")
    assert out.returncode == 0 and out.stderr == ""  # no "broken install" RuntimeWarning
    assert "backend: python" in out.stdout and "installed without a C compiler" in out.stdout
    doctor = _run(site, "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["backend"]["status"] == "warn"
    assert "/bin/false" in checks["backend"]["detail"] and "install a C compiler" in checks["backend"]["detail"]
    assert checks["extensions"]["status"] == "warn"
    assert "pure-Python" in checks["extensions"]["detail"]


def test_an_install_missing_extensions_without_the_marker_still_warns(tmp_path):
    site = _installed_pure_copy(tmp_path)
    (site / "magnum_lib" / MARKER).unlink()
    out = _run(site, "--version")
    assert "RuntimeWarning" in out.stderr and "lacks" in out.stderr


# ------------------------------------------------------------------ end to end

def _check_wheel():
    import importlib.util

    spec = importlib.util.spec_from_file_location("check_wheel", ROOT / "scripts" / "check_wheel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_compiler_env_shadows_every_compiler(tmp_path):
    env = _check_wheel().no_compiler({"PATH": os.environ["PATH"]}, tmp_path / "shadow")
    for name in ("gcc", "cc", "clang"):
        found = shutil.which(name, path=env["PATH"])
        assert found and Path(found).parent == tmp_path / "shadow"
        assert subprocess.run([found, "--version"], capture_output=True).returncode != 0
    assert env["CC"] == env["CXX"] == env["LDSHARED"] and subprocess.run([env["CC"]]).returncode != 0
