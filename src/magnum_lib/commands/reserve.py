"""``faux-magnum reserve``: validate a graph manifest and pre-reserve it on one device."""
from __future__ import annotations

import argparse
import sys

from magnum_lib.commands._common import EXIT_USAGE, NAME, PROG, InputFile, Text, json_text, one_line


def add(subparsers) -> None:
    p = subparsers.add_parser(
        "reserve", help="validate a graph manifest and reserve the whole graph on one device",
        description="Read a static dataflow manifest (YAML: job.id, gpu_type, graph of "
                    "layer/runtime/memory/interconnect, pre_reserve), validate it, and print the "
                    "pre-reservation timeline, with a note wherever the device's hardware differs from "
                    "what the manifest asks (a link it lacks, a bandwidth above its link). An invalid "
                    "manifest exits 2 with one line per problem.",
        epilog=f"examples:\n  {PROG} reserve article --device mtia_v2   (the article's own manifest, C37)\n"
               f"  {PROG} reserve --list                     (the shipped manifests and their paths)\n"
               f"  {PROG} reserve ./my_graph.yaml --json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    # A path is checked with os.stat before it is opened: a FIFO or a directory is refused,
    # never read. A name that is no file goes to the loader (a shipped manifest's short name).
    p.add_argument("manifest", metavar="MANIFEST", nargs="?",
                   type=InputFile("YAML manifest", 2**20, pass_missing=True),
                   help="a manifest file, or the short name of a shipped one (article, ...; see --list)")
    p.add_argument("--list", action="store_true", help="list the shipped manifests (short name and path)")
    p.add_argument("--device", default=None, metavar="TYPE",
                   type=Text(NAME, "a device type such as mtia_v2 or h100", example="h100"),
                   help="reserve on this device type instead of the manifest's gpu_type (e.g. mtia_v2)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=_run_reserve)


def _list(args) -> int:
    from magnum_lib.graph.manifest import shipped_manifests

    shipped = {name: str(path) for name, path in shipped_manifests().items()}
    if args.json:
        print(json_text(shipped))
    else:
        width = max(map(len, shipped))
        for name, path in shipped.items():
            print(f"{name:<{width}}  {path}")
    return 0


def _run_reserve(args) -> int:
    from magnum_lib.graph.manifest import ManifestError, load_manifest
    from magnum_lib.graph.reserve import reserve
    from magnum_lib.units import format_duration, format_size

    if args.list:
        if args.manifest is not None or args.device is not None:
            print(f"{PROG} reserve: error: --list takes no manifest or --device", file=sys.stderr)
            return EXIT_USAGE
        return _list(args)
    if args.manifest is None:
        print(f"{PROG} reserve: error: give a manifest (a path, or a shipped name such as 'article'; "
              f"--list shows them)", file=sys.stderr)
        return EXIT_USAGE
    try:
        manifest = load_manifest(args.manifest, device=args.device)
    except ManifestError as exc:
        for problem in exc.problems:
            # The override is a flag here, so name it as one.
            line = problem.replace("device: ", "--device: ", 1) if problem.startswith("device: ") else problem
            print(one_line(line), file=sys.stderr)
        return EXIT_USAGE
    try:
        result = reserve(manifest, device=args.device)
    except ValueError as exc:  # a valid manifest the device cannot run (e.g. too slow a link)
        print(str(exc).replace("device: ", "--device: " if args.device else "job.gpu_type: ", 1), file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json_text(result.to_dict()))
        return 0
    print(f"{PROG} reserve: job {result.job_id} on {result.device}: peak memory "
          f"{format_size(result.peak_memory_bytes)} of {format_size(result.device_memory_bytes)}"
          f"{' (pre_reserve: whole graph held)' if result.pre_reserve else ''}, "
          f"makespan {format_duration(result.makespan_ns)}")
    width = max(len(n) for n in result.layer_names)
    for name, s, e in zip(result.layer_names, result.start_ns, result.end_ns, strict=True):
        print(f"  {name:<{width}}  {format_duration(int(s)):>10} -> {format_duration(int(e)):>10}")
    for note in result.notes:
        print(f"note: {note}")
    return 0
