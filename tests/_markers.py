"""Which tests drive a compiled kernel: the ``kernel`` and ``cli_fuzz`` markers.

``tests/conftest.py`` applies them at collection, so no list of files is kept by hand:

- ``kernel``: the test imports a compiled module (``import_compiled(...)``, an import of a
  ``magnum_lib...._name`` extension), passes or is parametrized with ``"compiled"``, or
  uses a module-level name whose value mentions ``compiled`` (``BACKENDS``,
  ``HAVE_COMPILED``...). The test itself, the fixtures it requests and the module's
  top-level imports are read. ``make test-debug`` runs these against the bounds-checked
  build; ``make unit-python`` leaves them out (they compare a compiled kernel with its
  reference, which ``make unit`` already did).
- ``cli_fuzz``: the CLI fuzz (``test_cli_fuzz*.py``). Its subject is the argument parser,
  the same on both backends and in both builds, so it runs once, in ``make unit``.

The rules are text rules on purpose: cheap, predictable, and tested
(``tests/test_markers.py``) against the files that must be selected.
"""
from __future__ import annotations

import ast
import functools
import inspect
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "magnum_lib"


@functools.cache
def compiled_names() -> frozenset[str]:
    """Short names of every compiled module (``_core``, ``_heap``...): one per ``_*.pyx``."""
    return frozenset(p.stem for p in PACKAGE.rglob("_*.pyx"))


@functools.cache
def _compiled_import() -> re.Pattern:
    names = "|".join(sorted(compiled_names()))
    # `magnum_lib.sim._core`, `from magnum_lib.sim import _core`, `import ... as m` of either
    return re.compile(rf"(\.({names})\b)|(\bimport\s+(\w+\s*,\s*)*({names})\b)")


_COMPILED_WORD = re.compile(r"""import_compiled\(|["']compiled["']|\bneeds_compiled\b""")


def mentions_compiled(source: str) -> bool:
    """True when ``source`` imports a compiled module or names the compiled backend."""
    return bool(_COMPILED_WORD.search(source) or _compiled_import().search(source))


@functools.cache
def module_facts(module_text: str) -> tuple[bool, frozenset[str]]:
    """(whether the module's top-level imports load a compiled module, the module-level
    names (constants, helper functions) that lead to the compiled backend: their text
    mentions it, or names another such name)."""
    tree = ast.parse(module_text)
    imports = [ast.get_source_segment(module_text, n) or "" for n in tree.body
               if isinstance(n, (ast.Import, ast.ImportFrom))]
    defined: dict[str, str] = {}
    for node in tree.body:
        text = ast.get_source_segment(module_text, node) or ""
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined[node.name] = text
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    defined[t.id] = text
    names = {n for n, text in defined.items() if mentions_compiled(text)}
    while True:  # a helper that calls a compiled helper leads there too
        pattern = _word_pattern(names)
        more = {n for n, text in defined.items() if n not in names and pattern and pattern.search(text)}
        if not more:
            break
        names |= more
    return any(_compiled_import().search(i) for i in imports), frozenset(names)


def _word_pattern(names) -> re.Pattern | None:
    return re.compile(r"\b(" + "|".join(map(re.escape, sorted(names))) + r")\b") if names else None


def drives_kernel(sources: list[str], module_text: str, param_ids: str = "") -> bool:
    """The ``kernel`` rule for one test: ``sources`` are the test function's and its
    fixtures' source texts, ``param_ids`` its parametrization id (``test[compiled-3]``)."""
    if re.search(r"\bcompiled\b", param_ids):
        return True
    top_import, names = module_facts(module_text)
    if top_import:
        return True
    words = _word_pattern(names)
    return any(mentions_compiled(s) or (words is not None and words.search(s)) for s in sources)


def _source(obj) -> str:
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        return ""


def classify(item) -> list[str]:
    """The markers ``item`` (a collected pytest item) should carry."""
    path = Path(str(item.fspath))
    if path.name.startswith("test_cli_fuzz"):
        return ["cli_fuzz"]
    function = getattr(item, "function", None)
    if function is None:
        return []
    sources = [_source(function)]
    fixtures = getattr(item, "_fixtureinfo", None)
    for defs in fixtures.name2fixturedefs.values() if fixtures is not None else ():
        # the project's own fixtures (this folder and its conftest), not pytest's
        sources += [_source(d.func) for d in defs if _defined_in(d.func, path.parent)]
    callspec = getattr(item, "callspec", None)
    ids = (callspec.id + " " + " ".join(map(str, callspec.params.values()))) if callspec else ""
    return ["kernel"] if drives_kernel(sources, _module_text(path), ids) else []


def _defined_in(func, folder: Path) -> bool:
    try:
        return Path(inspect.getsourcefile(func) or "").parent == folder
    except TypeError:
        return False


@functools.cache
def _module_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")
