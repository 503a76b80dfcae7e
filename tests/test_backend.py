"""The backend switch: compiled by default when built, the reference when forced."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import magnum_lib
from magnum_lib import _backend
from tests.conftest import import_compiled


def _backend_in_subprocess(**env) -> str:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("MAGNUM_")}
    full_env.update(env)
    out = subprocess.run(
        [sys.executable, "-c", "import magnum_lib; print(magnum_lib.backend())"],
        capture_output=True, text=True, env=full_env, check=True,
    )
    return out.stdout.strip()


def test_backend_reports_a_known_value():
    assert magnum_lib.backend() in ("compiled", "python")


def test_purepython_env_forces_reference():
    assert _backend_in_subprocess(MAGNUM_PUREPYTHON="1") == "python"


def test_default_is_compiled_when_built():
    import_compiled(_backend._PROBE)  # skips when not built (fails under `make test`)
    assert _backend_in_subprocess() == "compiled"


@pytest.mark.parametrize("value", ["0", "", "false", "no"])
def test_falsy_env_values_do_not_force_reference(monkeypatch, value):
    monkeypatch.setenv("MAGNUM_PUREPYTHON", value)
    assert not _backend.pure_python_forced()


def test_pick_returns_reference_when_forced(monkeypatch):
    monkeypatch.setenv("MAGNUM_PUREPYTHON", "1")
    mod = _backend.pick("magnum_lib.engine._heap", "magnum_lib.engine.heap_ref")
    assert mod.__name__ == "magnum_lib.engine.heap_ref"


def test_compiled_extension_is_built_in_place(repo_root):
    """Editable install: extensions live in the source tree, so `make build` followed
    by a kernel restart picks up an edited .pyx."""
    if not _backend.is_source_checkout():
        pytest.skip(f"magnum_lib runs from {_backend.PACKAGE_DIR}, not the source tree (an installed or debug build)")
    mod = import_compiled(_backend._PROBE)
    assert Path(mod.__file__).resolve().is_relative_to(repo_root / "src" / "magnum_lib")
