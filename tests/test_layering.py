"""A layer imports only what is below it (DESIGN.md): checked on the source, import by import."""
import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "magnum_lib"
BASE = {"units", "hardware", "engine", "workload", "_resources", "_backend"}
#: layer -> the magnum_lib modules/packages it may import besides itself
ALLOWED = {"serving": BASE}


def imported_magnum_modules(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "magnum_lib" and len(parts) > 1:
                yield node.lineno, parts[1]


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layer_imports_only_below_itself(layer):
    files = sorted((PACKAGE / layer).rglob("*.py")) + sorted((PACKAGE / layer).rglob("*.pyx"))
    assert files
    bad = [f"{f.relative_to(PACKAGE)}:{line} imports magnum_lib.{mod}"
           for f in files if f.suffix == ".py"
           for line, mod in imported_magnum_modules(f) if mod not in ALLOWED[layer] | {layer}]
    assert bad == []


def test_nothing_below_sim_imports_serving():
    users = [f.relative_to(PACKAGE) for f in PACKAGE.rglob("*.py")
             if f.parts[len(PACKAGE.parts)] not in ("serving", "sim", "commands", "widgets", "checks")
             and f.name not in ("cli.py",)
             and any(mod == "serving" for _, mod in imported_magnum_modules(f))]
    assert users == []
