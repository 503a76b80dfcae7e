"""Helpers shared by every ``faux-magnum`` subcommand: one-line errors and flag parsing."""
from __future__ import annotations

import argparse
import math

from magnum_lib.engine.errors import ParameterError

PROG = "faux-magnum"
EXIT_USAGE = 2


class UsageError(Exception):
    """Bad command-line input; the message is the one line to print."""


class Parser(argparse.ArgumentParser):
    # argparse prints the usage block and then the error; we want one line.
    def error(self, message):
        raise UsageError(f"{self.prog}: error: {message}")


def flag_name(name: str) -> str:
    """The command-line flag for a Python parameter name: ``arrival_rate -> --arrival-rate``."""
    return "--" + name.replace("_", "-")


def int_value(name: str, text: str) -> int:
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


def float_value(name: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ParameterError(name, f"must be a number, got {text!r}") from None


def print_table(rows) -> None:
    """Print ``(label, value)`` pairs as an aligned two-column table (the readable output)."""
    rows = list(rows)
    width = max((len(label) for label, _ in rows), default=0)
    for label, value in rows:
        print(f"{label:<{width}}  {value}")
