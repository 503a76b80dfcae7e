"""The ``faux-magnum`` command (also ``python -m magnum_lib``).

Each subcommand is one ``_add_<name>(subparsers)`` function that declares its flags and
sets ``handler``; add a new command by writing another pair and listing it in
``_COMMANDS``. Handlers raise :class:`~magnum_lib.engine.errors.ParameterError` for bad
values; :func:`main` turns that, and any argparse complaint, into one line on stderr
naming the flag, and exit status 2 (no traceback).
"""
from __future__ import annotations

import argparse
import json
import math
import sys

from magnum_lib import __version__, backend
from magnum_lib.engine.errors import ParameterError

PROG = "faux-magnum"
EXIT_USAGE = 2


class UsageError(Exception):
    """Bad command-line input; the message is the one line to print."""


class _Parser(argparse.ArgumentParser):
    # argparse prints the usage block and then the error; we want one line.
    def error(self, message):
        raise UsageError(f"{self.prog}: error: {message}")


def _flag(name: str) -> str:
    """The command-line flag for a Python parameter name: ``arrival_rate -> --arrival-rate``."""
    return "--" + name.replace("_", "-")


def _int_value(name: str, text: str) -> int:
    """Parse an integer flag; accept ``1000000``, ``1_000_000`` and integral ``1e6``."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value.is_integer():
        raise ParameterError(name, f"must be an integer, got {text!r}")
    return int(value)


def _float_value(name: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ParameterError(name, f"must be a number, got {text!r}") from None


# --- queue ---------------------------------------------------------------------------

_KENDALL = {"exp": "M", "det": "D", "lognormal": "G"}


def _add_queue(subparsers) -> None:
    p = subparsers.add_parser(
        "queue", help="simulate a FIFO multi-server queue (M/M/c, M/D/c, M/G/c)",
        description="Simulate a first-come-first-served queue with Poisson arrivals and "
                    "C identical servers; print waiting and response-time statistics.")
    p.add_argument("--servers", required=True, metavar="C", help="number of servers (>= 1)")
    p.add_argument("--arrival-rate", required=True, metavar="L", help="arrivals per second")
    p.add_argument("--service-rate", required=True, metavar="MU",
                   help="services per second per server (load L/(C*MU) must be < 1)")
    p.add_argument("--service", default="exp", choices=["exp", "det", "lognormal"],
                   help="service-time distribution (default: exp)")
    p.add_argument("--cv", default="1.0", metavar="X",
                   help="coefficient of variation of lognormal service times (default: 1)")
    p.add_argument("--jobs", default="100000", metavar="N", help="jobs to simulate (default: 100000)")
    p.add_argument("--seed", default="0", metavar="S", help="random seed (default: 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=_run_queue)


def _run_queue(args) -> int:
    from magnum_lib.engine import simulate_queue

    result = simulate_queue(
        servers=_int_value("servers", args.servers),
        arrival_rate=_float_value("arrival_rate", args.arrival_rate),
        service_rate=_float_value("service_rate", args.service_rate),
        service=args.service,
        cv=_float_value("cv", args.cv),
        jobs=_int_value("jobs", args.jobs),
        seed=_int_value("seed", args.seed),
    )
    if args.json:
        print(json.dumps(result.to_dict()))
        return 0
    model = f"M/{_KENDALL[result.service]}/{result.servers}"
    if result.service == "lognormal":
        model += f" (lognormal cv={result.cv:g})"
    rows = [
        ("model", model),
        ("arrival rate", f"{result.arrival_rate:g} /s"),
        ("service rate", f"{result.service_rate:g} /s per server"),
        ("load", f"{result.load:.4f}"),
        ("jobs", f"{result.jobs:,}"),
        ("events", f"{result.events:,}"),
        ("mean wait", f"{result.wait_mean:.6g} s"),
        ("mean time in system", f"{result.time_in_system_mean:.6g} s"),
        ("P(wait > 0)", f"{result.p_wait:.4f}"),
        ("utilization", f"{result.utilization:.4f}"),
        ("p50 time in system", f"{result.p50:.6g} s"),
        ("p95 time in system", f"{result.p95:.6g} s"),
        ("p99 time in system", f"{result.p99:.6g} s"),
        ("Little's law error", f"{result.littles_law_error:.2e}"),
        ("wall time", f"{result.wall_s:.3f} s ({result.backend} backend, seed {result.seed})"),
    ]
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"{label:<{width}}  {value}")
    return 0


_COMMANDS = (_add_queue,)


def build_parser() -> argparse.ArgumentParser:
    """The ``faux-magnum`` argument parser with every subcommand."""
    parser = _Parser(prog=PROG, description="Faux-MAGNUM teaching kit command line.")
    parser.add_argument("--version", action="version",
                        version=f"{PROG} {__version__} (backend: {backend()})")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in _COMMANDS:
        add(subparsers)
    return parser


def main(argv=None) -> int:
    """Run ``faux-magnum`` with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            names = ", ".join(add.__name__.removeprefix("_add_") for add in _COMMANDS)
            raise UsageError(f"{PROG}: error: choose a command: {names} (see {PROG} --help)")
        try:
            return args.handler(args)
        except ParameterError as exc:
            raise UsageError(f"{PROG} {args.command}: error: {_flag(exc.name)} {exc.detail}") from None
    except UsageError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exc:  # --help and --version exit through argparse
        return exc.code if isinstance(exc.code, int) else 0
