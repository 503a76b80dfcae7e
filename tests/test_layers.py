"""The import rule of docs/ARCHITECTURE.md: a module imports only what is below it.

Every ``import magnum_lib.x`` / ``from magnum_lib.x import ...`` (lazy ones inside
functions included) and every Cython ``cimport`` of the package is read from the source,
and the unit it names (a top-level module or package of ``magnum_lib``) must have a
lower rank than the importing one: never a sibling of the same rank, never one above.
A new top-level module must be given a rank here (the first test says so).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.once  # run once (make unit): the import rule

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "magnum_lib"

# Lower ranks first. Units of the same rank may not import each other (siblings).
RANK = {
    "_typedefs": -1,                              # the C typedefs (intp_t, time_ns): below even the base
    "_backend": 0, "_resources": 0, "base": 0,
    "__init__": 1, "_kit": 1,                     # the facade: backend(), __version__; where the notebooks are
    "engine": 2,
    "units": 3,
    "hardware": 4,
    "cluster": 5, "workload": 5, "claims": 5, "energy": 5, "storage": 5, "tune": 5, "sweep": 5, "workshop": 5,
    # the scheduler's layers and their siblings: the base only
    "planner": 10, "regional": 10, "node": 10, "gossip": 10, "graph": 10, "serving": 10,
    # the two composers
    "sim": 20, "replay": 20,
    # front ends
    "commands": 30, "cli": 31, "checks": 32, "widgets": 33, "__main__": 34,
}
_CIMPORT = re.compile(r"^\s*(?:from\s+magnum_lib\.([A-Za-z_]\w*)\S*\s+c?import|c?import\s+magnum_lib\.([A-Za-z_]\w*))",
                      re.M)


def _unit(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].split(".")[0]


def _python_imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            parts = node.module.split(".")
            if parts[0] != "magnum_lib":
                continue
            if len(parts) > 1:
                names.add(parts[1])
            else:  # from magnum_lib import x: a submodule, or a name of the facade
                names |= {a.name if a.name in RANK else "__init__" for a in node.names}
        elif isinstance(node, ast.Import):
            names |= {a.name.split(".")[1] for a in node.names if a.name.startswith("magnum_lib.")}
    return names


def _cython_imports(path: Path) -> set[str]:
    return {a or b for a, b in _CIMPORT.findall(path.read_text(encoding="utf-8"))}


def _edges() -> list[tuple[str, str, str]]:
    out = []
    for path in sorted(PACKAGE.rglob("*")):
        if path.suffix == ".py":
            targets = _python_imports(path)
        elif path.suffix in (".pyx", ".pxd", ".pxi"):
            targets = _cython_imports(path)
        else:
            continue
        src = _unit(path)
        out += [(path.relative_to(PACKAGE).as_posix(), src, t) for t in sorted(targets) if t != src]
    return out


def test_every_unit_has_a_rank():
    units = {_unit(p) for p in PACKAGE.iterdir() if p.suffix in (".py", ".pxd") or
             (p.is_dir() and (p / "__init__.py").exists())}
    assert units - set(RANK) == set(), "give the new module a rank in tests/test_layers.py"


def test_nothing_imports_beside_or_above_itself():
    bad = [f"{path}: {src} (rank {RANK[src]}) imports {dst} (rank {RANK.get(dst)})"
           for path, src, dst in _edges() if dst not in RANK or RANK[dst] >= RANK[src]]
    assert bad == []


def test_the_rule_is_checked_on_real_imports():
    edges = {(src, dst) for _, src, dst in _edges()}
    # a few imports that must be seen (else the parser above reads nothing)
    assert {("sim", "node"), ("sim", "engine"), ("units", "base"), ("cli", "commands")} <= edges
