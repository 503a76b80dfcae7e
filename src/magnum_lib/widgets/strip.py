"""Strip outputs, execution counts and widget state from notebooks before committing.

Usage: ``python -m magnum_lib.widgets.strip notebooks/*.ipynb`` (rewrites in place and
prints the files it changed). Cell tags (``nbval-ignore-output`` ...) are kept.
"""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat

KEEP_CELL_METADATA = ("tags",)


def strip_notebook(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Return ``nb`` without outputs, execution counts, widget state or run metadata."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.metadata = {k: v for k, v in cell.metadata.items() if k in KEEP_CELL_METADATA}
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return nb


def main(argv: list[str] | None = None) -> int:
    paths = [Path(p) for p in (sys.argv[1:] if argv is None else argv)]
    if not paths:
        print("usage: python -m magnum_lib.widgets.strip NOTEBOOK.ipynb ...", file=sys.stderr)
        return 2
    for path in paths:
        before = path.read_text(encoding="utf-8")
        nb = strip_notebook(nbformat.reads(before, as_version=4))
        after = nbformat.writes(nb) + "\n"
        if after != before:
            path.write_text(after, encoding="utf-8")
            print(f"stripped {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
