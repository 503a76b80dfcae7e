"""Nothing POSIX-only at import time, and text files read and written as UTF-8 (issue 20 §1).

Windows has no ``fcntl`` (nor ``termios``, ``pwd``, ``resource``...), and its default text
encoding is a code page, not UTF-8. These tests run here, on Linux, with those modules made
unimportable and every text-mode ``open`` checked for an explicit encoding.
"""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.once  # run once (make unit): imports without POSIX-only modules, the same on both backends

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"

#: Standard modules that exist on POSIX only.
POSIX_ONLY = ("fcntl", "termios", "tty", "pty", "resource", "pwd", "grp", "syslog")

# A meta-path finder, installed before anything else, that refuses the POSIX-only modules
# as Windows would (ModuleNotFoundError).
BLOCKER = textwrap.dedent(f"""
    import importlib.abc, sys
    BLOCKED = {set(POSIX_ONLY)!r}
    class _Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {{name!r}} (blocked as on Windows)", name=name)
    for _m in [m for m in sys.modules if m.split(".")[0] in BLOCKED]:
        del sys.modules[_m]
    sys.meta_path.insert(0, _Blocker())
""")


def _blocked_python(code: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAGNUM_")}
    env["PYTHONPATH"] = str(SRC)
    return subprocess.run([sys.executable, "-c", BLOCKER + textwrap.dedent(code)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_the_blocker_blocks(tmp_path):
    out = _blocked_python("import fcntl", tmp_path)
    assert out.returncode == 1 and "blocked as on Windows" in out.stderr


def test_every_module_imports_without_posix_only_modules(tmp_path):
    out = _blocked_python("""
        import importlib, json, pkgutil, sys
        import magnum_lib
        failed = {}
        for info in pkgutil.walk_packages(magnum_lib.__path__, "magnum_lib."):
            if info.name.endswith("__main__"):  # runs the CLI when imported
                continue
            try:
                importlib.import_module(info.name)
            except Exception as exc:
                failed[info.name] = repr(exc)
        names = [i.name for i in pkgutil.walk_packages(magnum_lib.__path__, "magnum_lib.")]
        print(json.dumps({"failed": failed, "modules": len(names),
                          "posix_loaded": [m for m in sys.modules if m.split(".")[0] in BLOCKED]}))
    """, tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout.splitlines()[-1])
    assert report["failed"] == {} and report["posix_loaded"] == []
    assert report["modules"] > 50  # every subpackage was walked, not just the top


def test_cli_help_without_posix_only_modules(tmp_path):
    out = _blocked_python("""
        import contextlib, io, sys
        from magnum_lib.cli import main
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            code = main(["--help"])
        print(code, "lease" in buf.getvalue(), "lab" in buf.getvalue())
    """, tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-3:] == ["0", "True", "True"] and "Traceback" not in out.stderr


# A SIGKILL'd holder leaves filelock's fallback here (a "soft" lock: a file that exists)
# stale; on Windows filelock takes msvcrt's kernel lock, which dies with its holder, so
# this Linux-without-fcntl stand-in cannot judge that one test.
SOFT_LOCK_ONLY = "test_cli_killed_mid_write_leaves_the_file_intact"


def test_the_lease_command_tests_pass_without_fcntl(tmp_path):
    out = _blocked_python(f"""
        import sys
        import pytest
        sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "-W", "ignore::UserWarning",
                              {str(ROOT / "tests" / "test_regional_lease_cli.py")!r}, "-k", "not {SOFT_LOCK_ONLY}"]))
    """, ROOT, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert " passed, 1 deselected" in out.stdout and "failed" not in out.stdout


# --------------------------------------------------------------------------- encodings

def _mode(call: ast.Call, position: int):
    """The call's mode text (positional ``position`` or ``mode=``), or None if not a literal."""
    for kw in call.keywords:
        if kw.arg == "mode":
            return kw.value.value if isinstance(kw.value, ast.Constant) else "?"
    if len(call.args) > position:
        arg = call.args[position]
        return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else "?"
    return None


def _has_encoding(call: ast.Call, position: int | None = None) -> bool:
    return any(kw.arg == "encoding" for kw in call.keywords) or (
        position is not None and len(call.args) > position)


def text_opens_without_encoding(source: str) -> list[int]:
    """Line numbers of text-mode opens that pass no ``encoding`` (the locale's, on Windows
    a code page, would be used): ``open``/``io.open``/``os.fdopen``, ``Path.open``,
    ``read_text``/``write_text``."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        receiver = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
        if name == "open" and (isinstance(func, ast.Name) or receiver == "io"):
            mode = _mode(node, 1) or "r"
            if "b" not in mode and not _has_encoding(node, 3):
                lines.append(node.lineno)
        elif name == "fdopen" and receiver == "os":
            mode = _mode(node, 1) or "r"
            if "b" not in mode and not _has_encoding(node, 3):
                lines.append(node.lineno)
        elif name == "open" and isinstance(func, ast.Attribute):
            # Path.open(mode): no argument or a literal mode first. Image.open(path),
            # tarfile.open(path), webbrowser.open(url) take a path first: not a text file.
            first_is_mode = not node.args or (isinstance(node.args[0], ast.Constant)
                                              and isinstance(node.args[0].value, str))
            mode = _mode(node, 0) or "r"
            if first_is_mode and "b" not in mode and not _has_encoding(node, 2):
                lines.append(node.lineno)
        elif name == "read_text" and isinstance(func, ast.Attribute) and not _has_encoding(node, 0):
            lines.append(node.lineno)
        elif name == "write_text" and isinstance(func, ast.Attribute) and not _has_encoding(node, 1):
            lines.append(node.lineno)
    return lines


def test_the_encoding_check_finds_what_it_should():
    bad = textwrap.dedent("""
        open(p)
        open(p, "w")
        io.open(p, mode="a")
        os.fdopen(fd, "w")
        path.open()
        path.open("r")
        path.read_text()
        path.write_text(text)
    """)
    good = textwrap.dedent("""
        open(p, "rb")
        open(p, encoding="utf-8")
        open(p, "w", -1, "utf-8")
        os.fdopen(fd, "wb")
        path.open("rb")
        path.open(encoding="utf-8")
        path.read_text(encoding="utf-8")
        path.read_bytes()
        path.write_text(text, encoding="utf-8")
        Image.open(buffer)
        tarfile.open(name)
        webbrowser.open(url)
    """)
    assert text_opens_without_encoding(bad) == list(range(2, 10))
    assert text_opens_without_encoding(good) == []


def test_every_text_open_in_src_names_its_encoding():
    found = []
    for path in sorted((SRC / "magnum_lib").rglob("*.py")):
        for line in text_opens_without_encoding(path.read_text(encoding="utf-8")):
            found.append(f"{path.relative_to(ROOT)}:{line}")
    assert found == [], "text-mode opens without encoding=: " + ", ".join(found)
