"""The examples in the package's docstrings run, so they cannot drift from the code.

Every module of ``magnum_lib`` that has a ``>>>`` example is collected here (one test per
module) and run with :mod:`doctest`, as part of the normal unit run (``make unit``). Compiled
modules have no examples; ``__main__`` is skipped (importing it runs the CLI).
"""
from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil

import pytest

import magnum_lib

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _modules_with_examples() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(magnum_lib.__path__, "magnum_lib."):
        if info.name.endswith("__main__"):
            continue
        spec = importlib.util.find_spec(info.name)
        origin = getattr(spec, "origin", None) or ""
        if origin.endswith(".py") and ">>>" in open(origin, encoding="utf-8").read():
            names.append(info.name)
    return sorted(names)


MODULES = _modules_with_examples()


def test_examples_are_found():
    assert "magnum_lib.claims" in MODULES and len(MODULES) >= 5, MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    tests = [t for t in finder.find(module, name) if t.examples]
    assert tests, f"{name} mentions >>> but doctest finds no example"
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name} (output above)"
