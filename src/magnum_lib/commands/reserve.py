"""``faux-magnum reserve``: validate a graph manifest and pre-reserve it on one device."""
from __future__ import annotations

import json
import sys

from magnum_lib.commands._common import EXIT_USAGE, NAME, PROG, InputFile, Text, one_line


def add(subparsers) -> None:
    p = subparsers.add_parser(
        "reserve", help="validate a graph manifest and reserve the whole graph on one device",
        description="Read a static dataflow manifest (YAML: job.id, gpu_type, graph of "
                    "layer/runtime/memory/interconnect, pre_reserve), validate it, and print the "
                    "pre-reservation timeline. An invalid manifest exits 2 with one line per problem.")
    # Checked with os.stat before it is opened: a FIFO or a directory is refused, never read.
    # A name that is no file goes to the loader as it is (it reports it, or knows it by name).
    p.add_argument("manifest", metavar="MANIFEST.yaml", type=InputFile("YAML manifest", 2**20, pass_missing=True),
                   help="the manifest file")
    p.add_argument("--device", default=None, metavar="TYPE",
                   type=Text(NAME, "a device type such as mtia_v2 or h100", example="h100"),
                   help="reserve on this device type instead of the manifest's gpu_type (e.g. mtia_v2)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=_run_reserve)


def _run_reserve(args) -> int:
    from magnum_lib.graph.manifest import ManifestError, load_manifest
    from magnum_lib.graph.reserve import reserve
    from magnum_lib.units import format_duration, format_size

    try:
        manifest = load_manifest(args.manifest, device=args.device)
    except ManifestError as exc:
        for problem in exc.problems:
            # The override is a flag here, so name it as one.
            line = problem.replace("device: ", "--device: ", 1) if problem.startswith("device: ") else problem
            print(one_line(line), file=sys.stderr)
        return EXIT_USAGE
    result = reserve(manifest, device=args.device)
    if args.json:
        print(json.dumps(result.to_dict()))
        return 0
    print(f"{PROG} reserve: job {result.job_id} on {result.device}: peak memory "
          f"{format_size(result.peak_memory_bytes)} of {format_size(result.device_memory_bytes)}"
          f"{' (pre_reserve: whole graph held)' if result.pre_reserve else ''}, "
          f"makespan {format_duration(result.makespan_ns)}")
    width = max(len(n) for n in result.layer_names)
    for name, s, e in zip(result.layer_names, result.start_ns, result.end_ns):
        print(f"  {name:<{width}}  {format_duration(int(s)):>10} -> {format_duration(int(e)):>10}")
    return 0
