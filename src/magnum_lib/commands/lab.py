"""``faux-magnum lab [DIR]``: the student's working copy of the notebooks, served by JupyterLab.

Copies the notebooks, their solutions and READMEs shipped in the package into ``DIR``
(default ``./faux-magnum-notebooks``) without overwriting a file the student changed
(:func:`magnum_lib.workshop.copy_notebooks` says which it kept), writes the kit's
JupyterLab settings (no news, no update check) and starts JupyterLab there on 127.0.0.1
with a token. ``make lab`` runs this command.
"""
from __future__ import annotations

import importlib.util
import os
import secrets
import subprocess
import sys

from magnum_lib.commands._common import PROG, Int, OutputDir, UsageError

_LISTED = 8  # kept files named in the message (the rest are counted)


def add(subparsers) -> None:
    from magnum_lib.workshop import DEFAULT_DIR

    p = subparsers.add_parser(
        "lab", help="copy the notebooks into a folder of your own and start JupyterLab there",
        description="Copy the workshop's notebooks (with solutions/ and the READMEs) into DIR, keeping "
                    "every file you changed, and start JupyterLab on it at 127.0.0.1 with a token and "
                    "the kit's settings. Run it again at any time: your edits stay; delete a file to get "
                    "the kit's version back.")
    p.add_argument("dir", metavar="DIR", nargs="?", default=DEFAULT_DIR, type=OutputDir(),
                   help=f"the working copy (default ./{DEFAULT_DIR})")
    p.add_argument("--port", type=Int(1, 65535), default=8888,
                   help="JupyterLab's port on 127.0.0.1 (taken: JupyterLab picks the next free one)")
    p.add_argument("--no-browser", action="store_true", help="print the URL instead of opening a browser")
    p.add_argument("--copy-only", action="store_true", help="copy the notebooks and exit (no JupyterLab)")
    p.set_defaults(handler=_run_lab)


def _copy(dest):
    from magnum_lib._kit import KitNotFound
    from magnum_lib.workshop import copy_notebooks, install_lab_settings

    try:
        report = copy_notebooks(dest)
        settings = install_lab_settings(dest)
    except (KitNotFound, OSError) as exc:
        raise UsageError(f"{PROG} lab: error: cannot copy the notebooks into {dest}: "
                         f"{getattr(exc, 'strerror', None) or exc}") from None
    print(report.summary())
    if report.kept:
        shown = ", ".join(report.kept[:_LISTED]) + (f" and {len(report.kept) - _LISTED} more"
                                                   if len(report.kept) > _LISTED else "")
        print(f"kept {len(report.kept)} file(s) you changed: {shown} "
              "(the kit has another version; delete or rename a file to get it)")
    return settings


def _run_lab(args) -> int:
    from magnum_lib.workshop import lab_argv

    settings = _copy(args.dir)
    if args.copy_only:
        return 0
    if importlib.util.find_spec("jupyterlab") is None:
        raise UsageError(f"{PROG} lab: error: JupyterLab is not installed here; "
                         f"install it with: {sys.executable} -m pip install 'magnum_lib[lab]'")
    env = dict(os.environ)
    env.setdefault("JUPYTER_TOKEN", secrets.token_hex(24))  # never a server without one
    print(f"starting JupyterLab on 127.0.0.1:{args.port} in {args.dir} (Ctrl-C twice to stop)", flush=True)
    process = subprocess.Popen(lab_argv(args.dir, settings, args.port, browser=not args.no_browser), env=env)
    while True:
        try:
            return process.wait()
        except KeyboardInterrupt:  # JupyterLab got the same Ctrl-C (it stops on the second): wait for it
            continue
