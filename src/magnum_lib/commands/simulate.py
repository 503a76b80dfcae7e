"""``faux-magnum simulate``: send requests through every layer (the whole-system simulator).

Every knob of :class:`magnum_lib.sim.SimConfig` is a flag (times take units: ``--round
1ms``), declared with the type and range :mod:`magnum_lib.sim.config` documents, so a bad
value is refused while the flags are parsed (one line on stderr, exit status 2);
:func:`magnum_lib.sim.check_config` then checks the combination.
"""
from __future__ import annotations

import re
from dataclasses import fields

from magnum_lib.base.validate import ParameterError
from magnum_lib.commands._common import Duration, Float, Int, Interrupted, Size, json_text, print_table

_SKIP = {"classes", "mix"}
_BOOLS = {"hetero_aware", "pre_reserve", "piggyback", "partition_leases"}
_CHOICE_FIELDS = {"scope", "policy", "view", "preempt", "service", "clock"}


def _knobs():
    from magnum_lib.sim.config import SimConfig
    return [f for f in fields(SimConfig) if f.name not in _SKIP]


def _flag(name: str) -> str:
    # Times take units: --duration 10s, --round 1ms (the field is duration_s, round_s).
    base = name[:-2] if name.endswith("_s") else name
    return "--" + base.replace("_", "-")


def _flag_type(f):
    """The declared type of a knob's flag: its choices, or its documented range."""
    from magnum_lib.sim.config import _CHOICES, _INTS, _RANGES
    if f.name in _BOOLS:
        return {"choices": ["true", "false"]}
    if f.name in _CHOICE_FIELDS:
        return {"choices": list(_CHOICES[f.name])}
    lo, hi = _RANGES[f.name]
    if f.name in _INTS:
        return {"type": Int(lo, hi)}
    if f.name.endswith("_s") and lo >= 0:
        return {"type": Duration(round(lo * 1e9), round(hi * 1e9))}
    return {"type": Float(lo, hi, unit="s" if f.name.endswith("_s") else "")}


def add(subparsers) -> None:
    from magnum_lib.sim.config import CLUSTERS, PRESETS
    p = subparsers.add_parser(
        "simulate", help="simulate the whole system: requests through every layer",
        description="Simulate a region or the fleet: arrivals, regional rounds, gossip views, "
                    "speculative leases, node validation, dispatch, hedging. Presets give the "
                    "evolution from borg_like to magnum_v2 (C39-C43).")
    p.add_argument("--preset", default="magnum_v2", choices=list(PRESETS), help="system preset")
    p.add_argument("--cluster", default="classroom", choices=list(CLUSTERS), help="cluster preset")
    for f in _knobs():
        flag = _flag(f.name)
        unit = " (a duration such as 10s, 1ms)" if f.name.endswith("_s") else ""
        p.add_argument(flag, dest=f.name, default=None, metavar="X", **_flag_type(f),
                       help=f"{f.name}{unit}; default from the presets ({f.default!r} if unset)")
    p.add_argument("--max-memory", default="4GiB", metavar="SIZE", type=Size(2**28, 2**50),
                   help="refuse a run estimated to need more memory (default 4GiB)")
    # A command answers within a minute unless asked (the library's default is 10 minutes).
    p.add_argument("--max-wall", default="60s", metavar="D", type=Duration(10**9, 30 * 86_400 * 10**9),
                   help="refuse a run estimated to take longer (default 60s; the estimate is printed "
                        "with the progress bar)")
    p.add_argument("--json", action="store_true", help="print one JSON object (no progress bar)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(handler=_run)


def _value(f, value):
    """A parsed flag as the config takes it (the ranges were checked by the flag's type)."""
    from magnum_lib.units import parse_duration
    if f.name in _BOOLS:
        return value == "true"
    if isinstance(value, str) and f.name.endswith("_s") and f.name not in _CHOICE_FIELDS:
        return parse_duration(value) / 1e9  # a duration with units, e.g. "1ms"
    return value


def _run(args) -> int:
    try:
        return _simulate(args)
    except ParameterError as exc:  # name the flag as typed: duration_s -> --duration
        detail = exc.detail
        for name in sorted([f.name for f in _knobs()] + ["max_memory", "max_wall_s"], key=len, reverse=True):
            detail = re.sub(rf"\b{name}\b", _flag(name), detail)
        raise ParameterError(_flag(exc.name)[2:].replace("-", "_"), detail) from None


def _simulate(args) -> int:
    from magnum_lib.sim import make_config
    from magnum_lib.sim.run import run_config
    from magnum_lib.units import parse_duration, parse_size

    knobs = {f.name: _value(f, getattr(args, f.name)) for f in _knobs() if getattr(args, f.name) is not None}
    cfg = make_config(args.preset, args.cluster, **knobs)
    long_run = cfg.regions * cfg.cells_per_region * cfg.nodes_per_cell * cfg.duration_s > 2000
    clock = [0.0]
    try:
        out = run_config(cfg, progress=long_run and not args.json and not args.no_progress, clock=clock,
                         max_memory=parse_size(args.max_memory), max_wall_s=parse_duration(args.max_wall) / 1e9)
    except KeyboardInterrupt:
        raise Interrupted(f"after {clock[0]:.4g} simulated s of {cfg.duration_s:g}") from None
    out["preset"], out["cluster"] = args.preset, args.cluster
    if args.json:
        print(json_text(out))
        return 0
    d = out["decision_latency_ms"]
    rows = [("preset", f"{args.preset} on {args.cluster} ({out['nodes']:,} nodes, {out['devices']:,} devices)"),
            ("requests", f"{out['requests']['total']:,} ({out['rate_per_region']:,.0f}/s per region), "
                         f"{out['requests']['done']:,} done, {out['requests']['dropped']:,} dropped"),
            ("decision latency", f"p50 {d['p50']:.3f} ms  p95 {d['p95']:.3f} ms  p99 {d['p99']:.3f} ms  "
                                 f"p99.9 {d['p999']:.3f} ms"),
            ("  breakdown (mean)", ", ".join(f"{k} {v['mean']:.3f}" for k, v in d["breakdown"].items())),
            ("SLA attainment", ", ".join(f"{k} {v:.3f}" for k, v in out["sla_attainment"].items())),
            ("utilization", ", ".join(f"{k} {v:.3f}" for k, v in out["utilization_with_training"].items())),
            ("lease failure rate", f"{out['lease_failure_rate']:.6f} of {out['leases']['issued']:,} leases"),
            ("preemptions", f"micro {out['preemptions']['micro']:,}, checkpoint {out['preemptions']['checkpoint']:,}"),
            ("hedges", f"{out['hedges']['issued']:,} ({out['hedges']['extra_device_s']:.1f} extra device-s)"),
            ("energy", f"{out['energy_j']:.4g} J ({out['energy_per_request_j']:.3g} J per request)"),
            ("events", f"{out['events']:,}"),
            ("wall / simulated", f"{out['wall_s']:.2f} s / {out['sim_s']:g} s ({out['backend']})")]
    print_table(rows)
    return 0
