"""A normal install: shipped data, the wheel check's pieces, the backend of an installed
copy, the one-compile build, and the JupyterLab settings the kit ships."""
from __future__ import annotations

import ast
import fnmatch
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import tomllib

from magnum_lib import _backend, cli
from magnum_lib._resources import data_path

pytestmark = pytest.mark.once  # run once (make unit): the package's files and the Makefile

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "magnum_lib"


def _check_wheel():
    spec = importlib.util.spec_from_file_location("check_wheel", ROOT / "scripts" / "check_wheel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------ shipped data

def _package_data_patterns() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return config["package-data"]["magnum_lib"]


def test_every_data_file_is_declared_package_data():
    files = [f.relative_to(PACKAGE).as_posix() for f in (PACKAGE / "data").rglob("*") if f.is_file()
             and "__pycache__" not in f.parts]
    assert files, "src/magnum_lib/data is empty"
    patterns = _package_data_patterns()
    # setuptools globs do not cross "/": fnmatch's "*" does, so compare segment counts too
    undeclared = [f for f in files if not any(
        fnmatch.fnmatch(f, p) and f.count("/") == p.count("/") for p in patterns)]
    assert undeclared == []


def test_generated_c_is_kept_out_of_the_wheel():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert {"*.c", "*.html"} <= set(config["exclude-package-data"]["*"])


def _data_path_literals():
    """Every ``data_path("a", "b")`` call with literal arguments in the package."""
    for source in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "data_path"
                    and node.args and all(isinstance(a, ast.Constant) for a in node.args)):
                yield source, tuple(a.value for a in node.args)


def test_every_data_path_in_the_code_exists():
    calls = list(_data_path_literals())
    assert len(calls) >= 2  # the hardware catalog and the sample workload at least
    # a file, or a folder of shipped files (the manifests, listed by name)
    missing = [(str(src.relative_to(ROOT)), parts) for src, parts in calls
               if not (data_path(*parts).is_file() or any(data_path(*parts).glob("*.yaml")))]
    assert missing == []


def test_data_path_is_inside_the_package():
    assert data_path("hardware.yaml") == PACKAGE / "data" / "hardware.yaml"
    assert data_path("manifests", "article.yaml").is_file()


# ------------------------------------------------------------------ the wheel check script

def test_readme_commands_are_extracted_with_the_traces_marker():
    commands = _check_wheel().readme_commands(ROOT / "README.md")
    words = [c.split()[1] for c, _ in commands]
    assert all(c.startswith("faux-magnum ") for c, _ in commands)
    # every command the README shows is a real subcommand
    known = {n.replace("_", "-") for n in cli.command_names()}
    assert set(words) <= known
    # continuation lines are joined; comments dropped
    lease = next(c for c, _ in commands if c.split()[1] == "lease")
    assert "--lease_timeout=100ms" in lease and "#" not in lease
    # the commands that read the public traces are marked (and only those)
    reads_traces = lambda c: (c.startswith("faux-magnum hetero --trace gavel")  # noqa: E731
                              or (c.startswith("faux-magnum replay") and "--trace sample" not in c)
                              or c.startswith("faux-magnum serve"))
    assert [c for c, needs in commands if needs] == [c for c, _ in commands if reads_traces(c)]
    assert any(needs for _, needs in commands)
    assert "faux-magnum reserve article --device mtia_v2" in [c for c, _ in commands]


def test_readme_commands_handle_continuations_and_markers(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# x\n\n## The command line\n\ntext\n\n```bash\n"
                      "faux-magnum a --x 1   # layer 1\n"
                      "faux-magnum b --y=2 \\\n      --z 'two words'   # needs the public traces\n"
                      "\n# a comment line\n```\n\n## Next\n```bash\nfaux-magnum never\n```\n")
    assert _check_wheel().readme_commands(readme) == [
        ("faux-magnum a --x 1", False), ("faux-magnum b --y=2 --z 'two words'", True)]


def test_readme_without_the_block_is_an_error(tmp_path):
    check = _check_wheel()
    readme = tmp_path / "README.md"
    readme.write_text("# nothing here\n")
    with pytest.raises(check.CheckFailed, match="no '## The command line' section"):
        check.readme_commands(readme)


def _fake_wheel(path: Path, names) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for n in names:
            z.writestr(n, "x")
    return path


def _complete_names():
    names = ["magnum_lib/" + f.relative_to(PACKAGE).as_posix()
             for f in (PACKAGE / "data").rglob("*") if f.is_file()]
    names += ["magnum_lib/" + p.relative_to(PACKAGE).with_suffix("").as_posix()
              + ".cpython-311-x86_64-linux-gnu.so" for p in PACKAGE.rglob("_*.pyx")]
    names += [f"magnum_lib/_notebooks/{rel}" for rel in _check_wheel().kit_files()]
    return names + ["magnum_lib/py.typed"]


def test_wheel_problems_accepts_a_complete_file_list(tmp_path):
    assert _check_wheel().wheel_problems(_fake_wheel(tmp_path / "w.whl", _complete_names())) == []


def test_wheel_problems_names_what_is_missing_or_extra(tmp_path):
    names = [n for n in _complete_names() if not n.endswith(("hardware.yaml", ".so", "py.typed"))
             or "_queue" in n]
    names.append("magnum_lib/engine/_heap.c")
    problems = _check_wheel().wheel_problems(_fake_wheel(tmp_path / "w.whl", names))
    assert "missing data file magnum_lib/data/hardware.yaml" in problems
    assert "no compiled module for magnum_lib/engine/_heap.pyx" in problems
    assert "no compiled module for magnum_lib/engine/_queue.pyx" not in problems
    assert "generated C source shipped: magnum_lib/engine/_heap.c" in problems
    assert "missing magnum_lib/py.typed" in problems


def test_wheel_problems_names_a_missing_notebook(tmp_path):
    names = [n for n in _complete_names() if not n.endswith(("_notebooks/04_the_bouncer.ipynb",
                                                             "_notebooks/solutions/02_ex1.py"))]
    problems = _check_wheel().wheel_problems(_fake_wheel(tmp_path / "w.whl", names))
    assert problems == ["missing notebook file magnum_lib/_notebooks/04_the_bouncer.ipynb",
                        "missing notebook file magnum_lib/_notebooks/solutions/02_ex1.py"]


def test_wheel_problems_of_a_pure_python_wheel(tmp_path):
    check = _check_wheel()
    pure = [n for n in _complete_names() if not n.endswith(".so")] + [check.PURE_MARKER]
    assert check.wheel_problems(_fake_wheel(tmp_path / "pure.whl", pure), compiled=False) == []
    # a compiled module, or no marker, is not what a build without a compiler makes
    mixed = pure[:-1] + ["magnum_lib/engine/_heap.cpython-311-x86_64-linux-gnu.so"]
    assert check.wheel_problems(_fake_wheel(tmp_path / "mixed.whl", mixed), compiled=False) == [
        "unexpected compiled module for magnum_lib/engine/_heap.pyx", f"missing {check.PURE_MARKER}"]
    # and the marker in a compiled wheel is a problem too
    full = _complete_names() + [check.PURE_MARKER]
    assert check.wheel_problems(_fake_wheel(tmp_path / "full.whl", full)) == [f"unexpected {check.PURE_MARKER}"]


def test_clean_env_drops_the_source_tree_and_magnum_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT / "src"))
    monkeypatch.setenv("MAGNUM_PUREPYTHON", "1")
    env = _check_wheel().clean_env(tmp_path / "venv", tmp_path / "home", shared=tmp_path / "data")
    assert "PYTHONPATH" not in env and "MAGNUM_PUREPYTHON" not in env
    assert env["PATH"].startswith(str(tmp_path / "venv" / "bin"))
    assert env["MAGNUM_SHARED_DATA"] == str(tmp_path / "data") and env["HOME"] == str(tmp_path / "home")


def test_judge_refuses_tracebacks_wrong_exits_and_long_errors():
    judge = _check_wheel().judge
    assert judge(0, "ok\n", "", 0) is None
    assert judge(2, "", "faux-magnum hetero: error: trace file x not found\n", 2) is None
    assert judge(0, "Traceback (most recent call last):\n  ...", "", 0) == "printed a traceback"
    assert judge(1, "", "Traceback (most recent call last):\n", 2) == "printed a traceback"
    assert judge(2, "", "one\n", 0) == "exited 2, expected 0"
    assert judge(-1, "", "timed out after 300 s", 0) == "exited -1, expected 0"
    assert judge(2, "", "usage: ...\nerror: ...\n", 2) == "printed 2 lines on stderr, expected one"


def test_run_timed_reports_the_status_and_the_childs_own_cpu(tmp_path):
    spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\nprint('spun')\nraise SystemExit(3)"
    status, wall, cpu = _check_wheel().run_timed([sys.executable, "-c", spin], tmp_path / "log")
    assert status == 3 and (tmp_path / "log").read_text().strip() == "spun"
    assert 0.3 <= cpu <= wall + 0.05


def test_fallback_lines_finds_setup_pys_one_line(tmp_path):
    log = tmp_path / "wheel.log"
    log.write_text("Building wheel\n  magnum-build: cannot compile here (CompileError: x): installed the "
                   "pure-Python backend\n  magnum-build: [1/18] compiling magnum_lib.x\n", encoding="utf-8")
    assert _check_wheel().fallback_lines(log) == [
        "magnum-build: cannot compile here (CompileError: x): installed the pure-Python backend"]


def test_kernel_probe_is_a_notebook_that_refuses_a_source_tree(tmp_path):
    """The probe fails where ``magnum_lib`` comes from a source tree, not the venv's wheel
    (as here, under pytest: the source tree or an editable install)."""
    nbformat = pytest.importorskip("nbformat")
    check = _check_wheel()
    probe = check.write_kernel_probe(tmp_path / "probe.ipynb", "python")
    nbformat.validate(nbformat.read(probe, as_version=4))
    (cell,) = json.loads(probe.read_text(encoding="utf-8"))["cells"]
    env = {**os.environ, "PYTHONPATH": str(PACKAGE.parent)}
    out = subprocess.run([sys.executable, "-c", "".join(cell["source"])], env=env, capture_output=True, text=True)
    assert out.returncode != 0 and "AssertionError" in out.stderr and str(PACKAGE) in out.stderr


def test_notebook_jobs_below_one_is_refused_before_any_build(capsys):
    with pytest.raises(SystemExit) as exc:
        _check_wheel().main(["--notebooks", "--notebook-jobs", "0"])
    assert exc.value.code == 2 and "--notebook-jobs must be >= 1, got 0" in capsys.readouterr().err


def test_wheel_check_is_a_make_target_and_a_ci_step():
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^wheel-check:.*\n\t.*scripts/check_wheel\.py", makefile, re.M)
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    steps = [line.removeprefix("step ") for line in ci if line.startswith("step make ")]
    assert steps == ["make lint", "make test", "make wheel-check-all", "make test-debug"]
    # CI's wheel step is the compiled check, then the no-compiler wheel with the README's
    # commands and every notebook under nbval (issue 20 §1), in one venv
    rule = re.search(r"^wheel-check-all:.*?(?=^\S|\Z)", makefile, re.M | re.S).group(0)
    assert rule.count("scripts/check_wheel.py") == 2
    assert re.search(r"check_wheel\.py --venv \S+ --no-compiler --notebooks", rule), rule


def test_the_debug_build_lives_apart_and_is_not_undone():
    """test-debug builds into build/debug and runs the `kernel` tests there; nothing
    rebuilds the release extensions afterwards (they were never touched)."""
    makefile = (ROOT / "Makefile").read_text()
    rule = re.search(r"^build-debug:.*?(?=^\S)", makefile, re.M | re.S).group(0)
    assert "MAGNUM_CYTHON_DEBUG=1" in rule and "--build-base build/debug" in rule
    test = re.search(r"^test-debug:.*?(?=^\S)", makefile, re.M | re.S).group(0)
    assert test.startswith("test-debug: build-debug") and "PYTHONPATH=$(DEBUG_LIB)" in test
    assert '-m "kernel and not cli_fuzz and not speed"' in test
    assert "$(MAKE)" not in test  # no release rebuild afterwards
    # the pure-Python run leaves out what the markers select (names as tests/_markers.py applies them)
    pure = re.search(r"^unit-python:.*?(?=^\S|\Z)", makefile, re.M | re.S).group(0)
    assert pure.startswith("unit-python: venv") and '-m "not kernel and not cli_fuzz and not once"' in pure
    assert 'C_DIR = str(Path("build", "debug", "c")) if DEBUG else None' in (ROOT / "setup.py").read_text()


# ------------------------------------------------------------------ backend of an installed copy

def _run_python(code: str, path: Path, **env) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith("MAGNUM_")}
    full.update(PYTHONPATH=str(path), **env)
    return subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True, text=True,
                          env=full, cwd=path, timeout=120)


def _installed_copy(tmp_path: Path, drop: str) -> Path:
    """The package copied as a wheel installs it (site-packages/magnum_lib), minus ``drop``."""
    site = tmp_path / "site-packages"
    shutil.copytree(PACKAGE, site / "magnum_lib",
                    ignore=shutil.ignore_patterns("*.c", "*.html", "__pycache__", drop))
    return site


def test_source_checkout_is_recognised():
    assert _backend.is_source_checkout()
    assert _backend.extension_names() == tuple(sorted(
        "magnum_lib." + ".".join(p.relative_to(PACKAGE).with_suffix("").parts) for p in PACKAGE.rglob("_*.pyx")))


@pytest.fixture
def built():
    """Skip unless every extension is built in the source tree (copied below)."""
    if _backend.missing_extensions():
        pytest.skip(f"extensions not built here: {_backend.missing_extensions()}")


def test_installed_copy_missing_an_extension_says_so(tmp_path, built):
    site = _installed_copy(tmp_path, "_ring.cpython-*")
    out = _run_python("import magnum_lib, magnum_lib._backend as b; print(magnum_lib.backend()); "
                      "print(b.describe())", site)
    assert out.returncode == 0, out.stderr
    backend, description = out.stdout.splitlines()
    assert backend == "compiled"  # the others still run compiled
    assert "RuntimeWarning" in out.stderr and "magnum_lib.node._ring" in out.stderr
    assert str(site / "magnum_lib") in out.stderr and "lacks 1 compiled extension" in out.stderr
    assert description.endswith("(missing compiled: _ring)") and str(site / "magnum_lib") in description


def test_complete_installed_copy_is_silent_and_reports_its_path(tmp_path, built):
    site = _installed_copy(tmp_path, "nothing-to-drop")
    out = _run_python("import runpy, sys; sys.argv = ['faux-magnum', '--version']; "
                      "runpy.run_module('magnum_lib', run_name='__main__')", site)
    assert out.returncode == 0 and out.stderr == ""
    assert out.stdout.strip() == f"faux-magnum 0.1.0 (backend: compiled, {site / 'magnum_lib'})"


def test_source_checkout_without_extensions_does_not_warn(tmp_path):
    # a checkout that was never built runs the references quietly (the teaching default)
    repo = tmp_path / "repo"
    shutil.copytree(PACKAGE, repo / "src" / "magnum_lib",
                    ignore=shutil.ignore_patterns("*.so", "*.c", "*.html", "__pycache__"))
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    out = _run_python("import magnum_lib; print(magnum_lib.backend())", repo / "src")
    assert out.returncode == 0 and out.stdout.strip() == "python" and "Warning" not in out.stderr


# ------------------------------------------------------------------ one compile, quiet

def test_editable_install_declares_no_extensions(monkeypatch):
    from distutils.core import run_setup

    from setuptools import distutils  # noqa: F401  (setuptools' own copy)

    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("MAGNUM_NO_EXTENSIONS", "1")
    dist = run_setup(str(ROOT / "setup.py"), stop_after="init")
    assert not dist.ext_modules


def test_makefile_compiles_once_and_quietly():
    makefile = (ROOT / "Makefile").read_text()
    install = re.search(r"^\$\(STAMP\):.*?(?=^\S)", makefile, re.M | re.S).group(0)
    assert "MAGNUM_NO_EXTENSIONS=1 $(PIP) install" in install and "-e " in install
    assert re.search(r"^build: \$\(BUILT\)$", makefile, re.M)
    # setup.py runs only when a .pyx/.pxd or setup.py is newer than the last release build
    assert re.search(r"^BUILT := build/\.built-release$", makefile, re.M)
    rule = re.search(r"^\$\(BUILT\): (.*?)\n(.*?)(?=^\S)", makefile, re.M | re.S)
    assert set(rule.group(1).split()) == {"$(STAMP)", "setup.py", "$(CYTHON_SOURCES)"}
    assert "-name '*.pyx' -o -name '*.pxd' -o -name '*.pxi'" in makefile  # .pxi: generated includes
    build = rule.group(2)
    # the compiler's output goes to the log; only setup.py's own lines (the up-front warning
    # that compiling takes minutes, one progress line per module) reach the terminal
    assert "{ env -u MAGNUM_CYTHON_DEBUG $(PY) setup.py build_ext --inplace 2>&1; echo $$? > build/.build-status; } |" in build
    assert "tee $(BUILD_LOG) |" in build
    assert "grep --line-buffered '^magnum-build:'" in build
    assert 'test "$$(cat build/.build-status)" = 0 ||' in build
    assert "cat $(BUILD_LOG)" in build  # the log is shown only when the build fails
    assert "--force" not in build and "MAGNUM_CYTHON_FORCE" not in build
    assert build.rstrip().endswith("@touch $@")


# ------------------------------------------------------------------ JupyterLab settings

def test_lab_settings_turn_news_and_update_checks_off():
    overrides = json.loads((ROOT / "lab-settings" / "overrides.json").read_text())
    notification = overrides["@jupyterlab/apputils-extension:notification"]
    assert notification["fetchNews"] == "false" and notification["checkForUpdates"] is False


def test_browser_tests_use_the_same_settings():
    # tests/browser/conftest.py's OVERRIDES are the shipped file's content (or read from it)
    from tests.browser import conftest

    shipped = json.loads((ROOT / "lab-settings" / "overrides.json").read_text())
    assert conftest.OVERRIDES == shipped
    assert shipped["@jupyterlab/apputils-extension:notification"] == {"fetchNews": "false", "checkForUpdates": False}


def test_postbuild_installs_the_lab_settings():
    # Binder has no `faux-magnum lab`: postBuild installs the same overrides in the image.
    postbuild = (ROOT / "postBuild").read_text()
    assert "lab-settings/overrides.json" in postbuild and "share/jupyter/lab/settings" in postbuild


def test_jupyterlab_reads_overrides_where_postbuild_puts_them(tmp_path):
    # <prefix>/share/jupyter/lab/settings is JupyterLab's default app settings dir: the
    # overrides file postBuild copies there is the one JupyterLab applies (faux-magnum lab
    # points --LabApp.app_settings_dir at its own copy instead: tests/test_lab.py).
    labapp = pytest.importorskip("jupyterlab.labapp")
    settings_utils = pytest.importorskip("jupyterlab_server.settings_utils")
    assert Path(labapp.LabApp().app_settings_dir) == Path(sys.prefix, "share", "jupyter", "lab", "settings")
    shutil.copy(ROOT / "lab-settings" / "overrides.json", tmp_path / "overrides.json")
    overrides, error = settings_utils._get_overrides(str(tmp_path))
    assert error == "" and overrides == json.loads((ROOT / "lab-settings" / "overrides.json").read_text())
