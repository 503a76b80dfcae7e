"""Where the workshop's notebooks, solutions and JupyterLab settings are.

A built copy (a wheel) carries them in ``magnum_lib/_notebooks`` (setup.py copies the
repository's ``notebooks/`` and ``lab-settings/`` there at build time); a source checkout
or an editable install reads the checkout's own ``notebooks/`` and ``lab-settings/``.
"""
from __future__ import annotations

from pathlib import Path

from magnum_lib._backend import PACKAGE_DIR, is_source_checkout

#: The built copy's folder (absent in a checkout).
SHIPPED = PACKAGE_DIR / "_notebooks"


class KitNotFound(FileNotFoundError):
    """Neither a built copy's notebooks nor a checkout's."""


def notebooks_dir() -> Path:
    """The folder holding ``00_welcome.ipynb`` ..., ``solutions/`` and the READMEs."""
    if (SHIPPED / "00_welcome.ipynb").is_file():
        return SHIPPED
    checkout = PACKAGE_DIR.parents[1] / "notebooks"
    if is_source_checkout() and (checkout / "00_welcome.ipynb").is_file():
        return checkout
    raise KitNotFound(f"no notebooks shipped in {SHIPPED} (and not a source checkout); "
                      "reinstall the kit: pip install --force-reinstall magnum_lib")


def lab_settings_file() -> Path:
    """The kit's JupyterLab ``overrides.json`` (no news, no update check)."""
    shipped = SHIPPED / "lab-settings" / "overrides.json"
    if shipped.is_file():
        return shipped
    return PACKAGE_DIR.parents[1] / "lab-settings" / "overrides.json"


def kit_files(root: Path | None = None) -> list[Path]:
    """Every file a student's working copy gets, relative to ``root`` (default
    :func:`notebooks_dir`)."""
    root = notebooks_dir() if root is None else Path(root)
    patterns = ("*.ipynb", "*.md", "solutions/*.py")
    return sorted(p.relative_to(root) for pattern in patterns for p in root.glob(pattern) if p.is_file())
