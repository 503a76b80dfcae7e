"""Shared fixtures: where the real traces live, and which backend is active.

The real public traces are not in the repository (../shared/data, or $MAGNUM_SHARED_DATA).
A test that reads them, directly or through a loader, carries ``@pytest.mark.needs_traces``
(a whole module: ``pytestmark = pytest.mark.needs_traces``) or takes the ``shared_data``
fixture. Without the traces such a test is skipped with one reason; with
``MAGNUM_REQUIRE_TRACES=1`` (a machine that should have them) it fails instead.
"""
from __future__ import annotations

import importlib
import os
import re
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from magnum_lib.workload.traces import ENV_VAR, shared_data_dir, traces_missing
from tests._markers import classify

ROOT = Path(__file__).resolve().parents[1]
# A run started in the background by a non-interactive shell (or nohup) inherits SIGINT
# ignored, and so would every child process: the Ctrl-C tests (an interrupt of the main
# thread, SIGINT to a child CLI) need what a terminal gives, Python's KeyboardInterrupt.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
# The folder the loaders themselves read (same search order), so a test is skipped exactly
# when the library would not find the traces.
SHARED_DATA = shared_data_dir()
NO_TRACES = traces_missing()      # None, or one line: where they were looked for
TRACES_FOUND = NO_TRACES is None
if TRACES_FOUND:
    # Pin the folder for the session: a test that changes directory, a CLI subprocess and the
    # browser tests' kernels then read the traces this session decided on.
    os.environ.setdefault(ENV_VAR, str(SHARED_DATA))
REQUIRE_TRACES = os.environ.get("MAGNUM_REQUIRE_TRACES", "") not in ("", "0")
# The loaders' message for a missing file (magnum_lib.workload.traces.trace_path).
TRACE_NOT_FOUND = re.compile(r"trace file \S+ not found")

# Hypothesis profiles, chosen by $HYPOTHESIS_PROFILE (default: Hypothesis's own settings).
# "ci": the same examples on every run (derandomize; a red CI run is reproducible and never
# flaky), no per-example deadline (2 shared cores make timings noise), and no slow-data health
# check. A test's own @settings(max_examples=...) still wins over the profile's.
settings.register_profile("ci", derandomize=True, max_examples=100, deadline=None, print_blob=True,
                          database=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=20, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "needs_traces: reads the real public traces; skipped without them "
                   "(failed under MAGNUM_REQUIRE_TRACES=1)")
    config.addinivalue_line(
        "markers", "kernel: drives a compiled kernel (applied automatically: tests/_markers.py)")
    config.addinivalue_line(
        "markers", "cli_fuzz: the CLI fuzz, run once (applied automatically: tests/_markers.py)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        for name in classify(item):
            item.add_marker(name)


def pytest_runtest_setup(item):
    if item.get_closest_marker("needs_traces") is not None:
        require_traces()


def require_traces(what: str = "") -> None:
    """Skip the running test when the real traces are absent (fail under MAGNUM_REQUIRE_TRACES=1);
    ``what`` names the part that needs them when the rest of the test has already run."""
    if TRACES_FOUND:
        return
    reason = f"{what}: {NO_TRACES}" if what else NO_TRACES
    if REQUIRE_TRACES:
        pytest.fail(f"{reason}; MAGNUM_REQUIRE_TRACES=1 demands them", pytrace=False)
    pytest.skip(reason)


def stopped_at_missing_trace(message: str) -> bool:
    """True when the traces are absent and ``message`` is a loader's "trace file ... not found"
    (a CLI run that stopped there says nothing about what it was meant to test)."""
    return not TRACES_FOUND and TRACE_NOT_FOUND.search(message) is not None


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The read-only public traces (../shared/data); skip when absent (see require_traces)."""
    require_traces()
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
