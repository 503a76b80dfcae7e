"""Files that ship inside the package (``magnum_lib/data``), found with importlib.resources.

Every file the library reads by default lives in ``magnum_lib/data`` so that a plain
``pip install .`` (a wheel) works exactly like the source checkout.
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path


def data_path(*parts: str) -> Path:
    """The path of a shipped data file, e.g. ``data_path("manifests", "article.yaml")``.

    Wheels install as plain directories, so the resource is a real file on disk.
    """
    return Path(str(resources.files("magnum_lib").joinpath("data", *parts)))
