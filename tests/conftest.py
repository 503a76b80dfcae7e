"""Shared fixtures: where the real traces live, and which backend is active."""
from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("MAGNUM_SHARED_DATA", ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The read-only public traces (../shared/data); skip when absent."""
    if not (SHARED_DATA / "MANIFEST.tsv").is_file():
        pytest.skip(f"real traces not found at {SHARED_DATA} (set MAGNUM_SHARED_DATA)")
    return SHARED_DATA


def import_compiled(name: str):
    """Import a compiled extension for a parity test.

    Skips when it is not built, unless MAGNUM_REQUIRE_COMPILED=1 (set by `make test`),
    in which case a missing extension is a failure.
    """
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        if os.environ.get("MAGNUM_REQUIRE_COMPILED", "") not in ("", "0"):
            raise
        pytest.skip(f"compiled extension {name} not built ({exc})")


def cli_json(capsys, argv) -> dict:
    """Run ``faux-magnum ARGV --json`` in-process; demand exit 0, silent stderr and exactly
    one JSON object on stdout, and return it."""
    import json

    from magnum_lib.cli import main

    assert main(list(argv) + ["--json"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    lines = captured.out.strip().splitlines()
    assert len(lines) == 1  # one JSON object
    return json.loads(lines[0])


def replaced(base, args):
    """``base`` with each ``--flag value`` of ``args`` replacing the same flag (a flag may appear once)."""
    out, args = list(base), list(args)
    while args:
        name = args.pop(0)
        if "=" in name:  # --flag=value: drop the base's copy, keep this one
            flag = name.split("=", 1)[0]
            if flag in out:
                del out[out.index(flag):out.index(flag) + 2]
            out.append(name)
        elif name in out:
            out[out.index(name) + 1] = args.pop(0)
        else:
            out += [name, args.pop(0)]
    return out
