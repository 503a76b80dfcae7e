"""A student's working copy of the notebooks, and the JupyterLab that serves it.

:func:`copy_notebooks` copies the kit's notebooks, solutions and READMEs
(:mod:`magnum_lib._kit`) into a folder and never overwrites a file the student changed.
It keeps a small manifest in that folder (:data:`MANIFEST`: the SHA-256 of every file as
it was copied). On a later run each file is

* ``added`` when absent (a deleted file comes back: deleting is how to get a fresh copy),
* ``unchanged`` when it already equals the kit's version,
* ``updated`` when it still equals what was copied last time (the student did not touch
  it) but the kit now ships another version,
* ``kept`` otherwise: the student changed it (or it was there before the kit), so it stays.

:func:`lab_argv` is the JupyterLab command ``make lab`` and ``faux-magnum lab`` run: on
127.0.0.1 only, with a token, the kit's settings (no news, no update check) and
``--allow-root`` when run as root.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from magnum_lib import __version__, _kit

#: The manifest of shipped hashes, inside the working copy.
MANIFEST = ".faux-magnum-shipped.json"
SCHEMA = "faux-magnum/lab-copy"
#: Where the working copy's JupyterLab settings go (``--LabApp.app_settings_dir``).
SETTINGS_DIR = Path(".faux-magnum", "lab-settings")
DEFAULT_DIR = "faux-magnum-notebooks"


@dataclass
class CopyReport:
    """What :func:`copy_notebooks` did, file names relative to ``dest``."""

    dest: Path
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line, e.g. ``"faux-magnum-notebooks: 52 added, 0 updated, 0 unchanged, 0 kept"``."""
        return (f"{self.dest}: {len(self.added)} added, {len(self.updated)} updated, "
                f"{len(self.unchanged)} unchanged, {len(self.kept)} kept")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _read_manifest(dest: Path) -> dict[str, str]:
    """The hashes recorded by the last copy; an unreadable manifest records nothing (so
    nothing the student may have changed is overwritten)."""
    try:
        data = json.loads((dest / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) and data.get("schema") == SCHEMA else None
    if not isinstance(files, dict):
        return {}
    return {k: v for k, v in files.items() if isinstance(k, str) and isinstance(v, str)}


def _atomic_copy(source: Path, target: Path) -> None:
    # Through a temporary file beside the target: an interrupted copy leaves no half file.
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(source.read_bytes())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _atomic_write_text(target: Path, text: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            out.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def copy_notebooks(dest: Path, source: Path | None = None) -> CopyReport:
    """Copy the kit's files into ``dest`` (created), keeping every file the student changed.

    Parameters
    ----------
    dest : Path
        The working copy. Refused (``NotADirectoryError``) if it is a file.
    source : Path, optional
        The kit folder (default :func:`magnum_lib._kit.notebooks_dir`).
    """
    source = _kit.notebooks_dir() if source is None else Path(source)
    dest = Path(dest)
    if dest.exists() and not dest.is_dir():
        raise NotADirectoryError(f"{dest} exists and is not a folder")
    report = CopyReport(dest)
    if dest.exists() and dest.resolve() == source.resolve():
        report.unchanged = [p.as_posix() for p in _kit.kit_files(source)]
        return report  # serving the kit's own folder (a checkout's notebooks/): nothing to copy
    dest.mkdir(parents=True, exist_ok=True)
    recorded = _read_manifest(dest)
    files = _kit.kit_files(source)
    shipped = dict(recorded)
    for rel in files:
        name, target = rel.as_posix(), dest / rel
        new = _sha256(source / rel)
        if not target.exists():
            _atomic_copy(source / rel, target)
            report.added.append(name)
        elif (current := _sha256(target)) == new:
            report.unchanged.append(name)
        elif current == recorded.get(name):
            _atomic_copy(source / rel, target)
            report.updated.append(name)
        else:
            report.kept.append(name)
            continue  # the record keeps the version the student started from
        shipped[name] = new
    _atomic_write_text(dest / MANIFEST, json.dumps(
        {"schema": SCHEMA, "version": 1, "kit_version": __version__, "files": shipped}, indent=1) + "\n")
    return report


def _merge(base: dict, top: dict) -> dict:
    out = dict(base)
    for key, value in top.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def install_lab_settings(dest: Path, default_settings: Path | None = None) -> Path:
    """Write the settings folder JupyterLab reads for ``dest``; return it.

    The kit's ``overrides.json`` goes over the environment's own (``<prefix>/share/jupyter/
    lab/settings``, left untouched), whose ``page_config.json`` is carried along.
    """
    default_settings = Path(sys.prefix, "share", "jupyter", "lab", "settings") if default_settings is None \
        else Path(default_settings)
    kit = json.loads(_kit.lab_settings_file().read_text(encoding="utf-8"))
    try:
        base = json.loads((default_settings / "overrides.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        base = {}
    settings = Path(dest) / SETTINGS_DIR
    _atomic_write_text(settings / "overrides.json", json.dumps(_merge(base if isinstance(base, dict) else {}, kit),
                                                               indent=2) + "\n")
    if (default_settings / "page_config.json").is_file():
        shutil.copyfile(default_settings / "page_config.json", settings / "page_config.json")
    return settings


def is_root() -> bool:
    """True when running as root (POSIX; never on Windows)."""
    return getattr(os, "geteuid", lambda: -1)() == 0


def lab_argv(root_dir: Path, settings_dir: Path, port: int = 8888, browser: bool = True) -> list[str]:
    """The JupyterLab command line serving ``root_dir`` on 127.0.0.1:``port``."""
    argv = [sys.executable, "-m", "jupyterlab", "--ip=127.0.0.1", f"--port={port}",
            f"--ServerApp.root_dir={root_dir}", f"--LabApp.app_settings_dir={settings_dir}",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if not browser:
        argv.append("--no-browser")
    if is_root():
        argv.append("--allow-root")
    return argv
