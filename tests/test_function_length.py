"""No function or method in src/magnum_lib is longer than 80 lines (issue 21, section 4).

A function's length is from its ``def`` line to its last line, docstring and comments
included (Python: ``ast`` ``lineno`` to ``end_lineno``; Cython: a ``def``/``cdef``/``cpdef``
block read line by line, up to the last line indented deeper than its header). Long
functions are split along their steps into helpers that each say their step.

``ALLOWED`` names the functions still over the limit, each with its length today; it
may only shrink: a listed function that grew, or that is no longer over the limit (or
is gone), fails the test, so whoever splits it also deletes its line here.
"""
from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "magnum_lib"
LIMIT = 80

# "path relative to magnum_lib:qualified name" -> its length in lines today.
ALLOWED: dict[str, int] = {}

# A Cython function header: def, cpdef or cdef (with any return type and qualifiers)
# followed by a name and "(", but not a cdef class/struct/enum/extern block.
_PYX_HEAD = re.compile(
    r"^(?P<indent>[ \t]*)(?:async\s+)?(?:def|cpdef|cdef)\s+"
    r"(?!(?:class|struct|enum|union|extern|packed|ctypedef|fused)\b)"
    r"[^=()#]*?\b(?P<name>\w+)\s*\(")
_PYX_CLASS = re.compile(r"^(?P<indent>[ \t]*)(?:cdef\s+(?:public\s+)?)?class\s+(?P<name>\w+)\b")


def python_lengths(source: str) -> dict[str, int]:
    """Every function's and method's qualified name -> its length in lines."""
    out: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                out[name] = max(out.get(name, 0), child.end_lineno - child.lineno + 1)
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return out


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _signature_end(lines: list[str], i: int) -> int:
    """The index of the line closing the parenthesis opened on line ``i``."""
    depth = 0
    for j in range(i, len(lines)):
        code = lines[j].split("#")[0]
        depth += code.count("(") - code.count(")")
        if depth <= 0:
            return j
    return len(lines) - 1


def _block_end(lines: list[str], j: int, indent: int) -> int:
    """The last line after ``j`` indented deeper than ``indent`` (blank lines skipped)."""
    last = j
    for k in range(j + 1, len(lines)):
        if lines[k].strip():
            if _indent(lines[k]) <= indent:
                break
            last = k
    return last


def cython_lengths(source: str) -> dict[str, int]:
    """Every def/cdef/cpdef function's qualified name -> its length in lines (declarations skipped)."""
    lines = source.splitlines()
    classes: list[tuple[int, str]] = []  # (indent, name) of the enclosing classes
    out: dict[str, int] = {}
    for i, line in enumerate(lines):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        while classes and _indent(line) <= classes[-1][0]:
            classes.pop()
        cls = _PYX_CLASS.match(line)
        if cls:
            classes.append((len(cls["indent"]), cls["name"]))
            continue
        head = _PYX_HEAD.match(line)
        if not head:
            continue
        j = _signature_end(lines, i)
        if not lines[j].split("#")[0].rstrip().endswith(":"):
            continue  # a declaration (a .pxd-style prototype or a cdef function pointer)
        name = ".".join([c for _, c in classes] + [head["name"]])
        out[name] = max(out.get(name, 0), _block_end(lines, j, len(head["indent"])) - i + 1)
    return out


@functools.cache
def all_lengths() -> dict[str, int]:
    """"path:qualified name" -> length for every function of the package."""
    out: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")) + sorted(PACKAGE.rglob("*.pyx")):
        text = path.read_text(encoding="utf-8")
        found = python_lengths(text) if path.suffix == ".py" else cython_lengths(text)
        rel = path.relative_to(PACKAGE).as_posix()
        out.update({f"{rel}:{name}": n for name, n in found.items()})
    return out


def test_no_function_is_longer_than_the_limit_unless_allowed():
    long = {k: n for k, n in all_lengths().items() if n > LIMIT and k not in ALLOWED}
    assert long == {}, f"split these along their steps (<= {LIMIT} lines each): {long}"


def test_the_allow_list_only_shrinks():
    lengths = all_lengths()
    for key, allowed in ALLOWED.items():
        assert key in lengths, f"{key} is gone: delete its line from ALLOWED"
        assert lengths[key] > LIMIT, f"{key} is {lengths[key]} lines now: delete its line from ALLOWED"
        assert lengths[key] <= allowed, f"{key} grew from {allowed} to {lengths[key]} lines: split it"


def test_python_lengths_count_from_def_to_last_line_with_nesting():
    source = "class A:\n    def f(self):\n        def g():\n            pass\n\n        return g\n\n\ndef h(): pass\n"
    assert python_lengths(source) == {"A.f": 5, "A.f.g": 2, "h": 1}


def test_cython_lengths_read_functions_and_skip_declarations():
    source = """
cdef extern from *:
    int f(int x)
cdef struct S:
    int a
cdef int proto(int a, int b) noexcept nogil
cdef inline int helper(const int[::1] a,
                       int b) noexcept nogil:
    # a comment inside

    cdef int c = helper2(b)
    return c
# a comment after the block

cdef class Ring:
    cdef int x
    def __cinit__(self, n):
        self.x = n

    cpdef int size(self):
        return self.x
def run(n=(1, 2)):
    return n
"""
    assert cython_lengths(source) == {"helper": 6, "Ring.__cinit__": 2, "Ring.size": 2, "run": 2}


def test_the_parsers_see_the_known_long_functions():
    # The counts above are this repository's: the parsers must find real functions.
    lengths = all_lengths()
    assert len(lengths) > 500
    assert any(k.endswith(".pyx:dispatch_loop") for k in lengths)
    assert any(k.endswith(".pyx:pack_core") for k in lengths)
