"""``faux-magnum data``: the public traces: list the shipped manifest, fetch and verify them.

``data fetch [--dest DIR]`` downloads every file of the manifest (source repository at a
pinned commit) and checks its SHA-256; a file already there and intact is kept, so running
it again after an interruption or a failure fetches only what is missing. One line per
file that failed; exit status 2 if any did.
"""
from __future__ import annotations

import sys

from magnum_lib.commands._common import EXIT_USAGE, PROG, Text, json_text, one_line, print_table


def add(subparsers) -> None:
    p = subparsers.add_parser(
        "data", help="the public traces: list them, fetch and verify them",
        description="The real public traces the notebooks and `replay`/`hetero` read: `data list` "
                    "prints the shipped manifest (source, size, SHA-256, licence, citation), "
                    "`data fetch` downloads and verifies them, `data verify` checks a folder.")
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    dest_help = "the shared data folder (default: $MAGNUM_SHARED_DATA, else ./shared/data)"
    f = sub.add_parser("fetch", help="download and verify every trace file (resumable)")
    f.add_argument("--dest", metavar="DIR", type=Text(r"[^\x00-\x1f]+", "a folder path", max_chars=4096,
                                                      example="shared/data"), help=dest_help)
    f.add_argument("--base-url", metavar="URL", type=Text(r"https?://[^\s\x00-\x1f]+", "an http(s) URL",
                                                          max_chars=2048, example="http://127.0.0.1:8000"),
                   help="a mirror with the same layout (URL/<file>) instead of each file's source")
    f.add_argument("--no-progress", action="store_true", help="no progress bars")
    f.set_defaults(handler=_run_fetch)
    v = sub.add_parser("verify", help="check a folder against the manifest (size and SHA-256)")
    v.add_argument("--dest", metavar="DIR", type=Text(r"[^\x00-\x1f]+", "a folder path", max_chars=4096,
                                                      example="shared/data"), help=dest_help)
    v.add_argument("--json", action="store_true", help="print one JSON object")
    v.set_defaults(handler=_run_verify)
    ls = sub.add_parser("list", help="print the manifest")
    ls.add_argument("--json", action="store_true", help="print one JSON object")
    ls.set_defaults(handler=_run_list)


def _dest(args):
    import os
    from pathlib import Path

    from magnum_lib.workload.traces import ENV_VAR, SHARED_SUBDIR

    if args.dest:
        return Path(args.dest)
    env = os.environ.get(ENV_VAR, "").strip()
    return Path(env) if env else Path.cwd() / SHARED_SUBDIR


def _run_fetch(args) -> int:
    from magnum_lib.workload.fetch import fetch

    dest = _dest(args)
    results = fetch(dest, base_url=args.base_url, progress=not args.no_progress)
    failed = [err for _, err in results if err]
    for err in failed:
        print(one_line(f"{PROG} data fetch: error: {err}"), file=sys.stderr)
    print(f"{len(results) - len(failed)} of {len(results)} trace files in {dest} (SHA-256 checked)")
    if not failed:
        from magnum_lib.workload.traces import ENV_VAR
        print(f"use them with: export {ENV_VAR}={dest.resolve()}")
    return EXIT_USAGE if failed else 0


def _run_verify(args) -> int:
    from magnum_lib.workload.fetch import verify

    dest = _dest(args)
    results = verify(dest)
    bad = [(r, p) for r, p in results if p]
    if args.json:
        print(json_text({"folder": str(dest), "ok": not bad,
                         "files": [{"file": r.file, "problem": p} for r, p in results]}))
    else:
        for r, p in results:
            print(f"[{'ok' if p is None else 'bad':>3}] {r.file}" + ("" if p is None else f": {p}"))
    return EXIT_USAGE if bad else 0


def _run_list(args) -> int:
    from dataclasses import asdict

    from magnum_lib.workload.fetch import load_manifest

    rows = load_manifest()
    if args.json:
        print(json_text([asdict(r) for r in rows]))
        return 0
    print_table((r.file, f"{r.bytes:>9,} B  {r.origin}  ({r.licence})") for r in rows)
    return 0
