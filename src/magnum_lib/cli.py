"""The ``faux-magnum`` command (also ``python -m magnum_lib``).

Subcommands live in :mod:`magnum_lib.commands`, one module each, found at start-up.
Every flag declares a typed, range-checked value (see :mod:`magnum_lib.commands._common`),
so most bad input is refused while parsing, before a handler runs. Handlers raise
:class:`~magnum_lib.base.validate.ParameterError` for what depends on several flags;
:func:`main` turns that, and any argparse complaint, into one line on stderr naming the
flag (at most ``MAX_LINE`` characters), and exit status 2 (no traceback).
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from magnum_lib import __version__, _backend, commands
from magnum_lib.base.validate import ParameterError
from magnum_lib.commands._common import (
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    MAX_LINE,
    PROG,
    Interrupted,
    Parser,
    UsageError,
    flag_name,
    one_line,
)


def command_names() -> list[str]:
    """The subcommand module names in :mod:`magnum_lib.commands`, sorted."""
    return sorted(m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_"))


def command_modules():
    """The subcommand modules in :mod:`magnum_lib.commands`, sorted by name."""
    return [importlib.import_module(f"magnum_lib.commands.{name}") for name in command_names()]


def _module_of(word: str):
    """The module of command ``word`` (module ``gossip_live`` is command ``gossip-live``), or None."""
    name = word.replace("-", "_")
    if word.startswith("-") or name.startswith("_") or name not in command_names():
        return None
    return importlib.import_module(f"magnum_lib.commands.{name}")


class _Version(argparse.Action):
    # Like argparse's "version" action, but the backend is looked up only when asked.
    def __call__(self, parser, namespace, values, option_string=None):
        print(f"{PROG} {__version__} ({_backend.describe()})")
        parser.exit()


def build_parser(modules=None) -> argparse.ArgumentParser:
    """The ``faux-magnum`` argument parser with every subcommand (or only ``modules``'s)."""
    parser = Parser(prog=PROG, description="Faux-MAGNUM teaching kit command line.")
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="print the version, the backend and where the package is, and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in command_modules() if modules is None else modules:
        module.add(subparsers)
    return parser


def main(argv=None) -> int:
    """Run ``faux-magnum`` with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    try:
        code = _main(argv)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # The reader went away (``faux-magnum replay | head``): stop quietly, as cat does.
        # stdout is pointed at devnull so the interpreter's final flush does not fail again.
        import os

        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):  # a replaced stdout (tests) has no descriptor
            pass
        return 1


def _main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # A command named first needs only its own parser: importing and building all of
    # them costs more than a small run itself (--help and errors still list every one).
    module = _module_of(argv[0]) if argv else None
    parser = build_parser(None if module is None else [module])
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            names = ", ".join(m.__name__.rsplit(".", 1)[1] for m in command_modules())
            raise UsageError(f"{PROG}: error: choose a command: {names} (see {PROG} --help)")
        try:
            return args.handler(args)
        except ParameterError as exc:
            raise UsageError(f"{PROG} {args.command}: error: {flag_name(exc.name)} {exc.detail}") from None
        except (Interrupted, KeyboardInterrupt) as exc:  # Ctrl-C: one line, nothing half-printed
            where = f" {exc}" if isinstance(exc, Interrupted) else ""
            print(one_line(f"{PROG} {args.command}: interrupted{where}", MAX_LINE), file=sys.stderr)
            return EXIT_INTERRUPTED
    except UsageError as exc:
        # One line, however long or many-lined the message: the last line of defence.
        print(one_line(exc, MAX_LINE), file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exc:  # --help and --version exit through argparse
        return exc.code if isinstance(exc.code, int) else 0
