"""Input checks at the Python boundary, and the error they raise (below every layer).

``ParameterError`` is a ``ValueError`` whose message reads ``"<name> <detail>"``; it also
keeps ``name`` and ``detail`` apart so the CLI can print ``--arrival-rate <detail>``
instead of ``arrival_rate <detail>``.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Collection
from typing import TypeVar, cast

T = TypeVar("T")
R = TypeVar("R")

#: The longest excerpt of a bad value an error message shows (a 100 kB value must not
#: become a 100 kB line).
EXCERPT_CHARS = 60


def excerpt(value: object, limit: int = EXCERPT_CHARS) -> str:
    """``repr(value)`` cut to at most ``limit`` characters (with ``...`` and the full length).

    Use it wherever an error message shows a value that came from the user.
    """
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} chars)"


class ParameterError(ValueError):
    """A parameter is out of range or of the wrong kind.

    Attributes
    ----------
    name : str
        The parameter's name (as in the Python signature).
    detail : str
        What is wrong and what is accepted, e.g. ``"must be >= 1, got 0"``.
    """

    def __init__(self, name: str, detail: str):
        super().__init__(f"{name} {detail}")
        self.name = name
        self.detail = detail


def check_int(name: str, value: object, minimum: int, maximum: int | None = None) -> int:
    """Return ``value`` as an int in ``[minimum, maximum]`` or raise ParameterError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterError(name, f"must be an integer, got {excerpt(value)}")
    number = int(value)
    if number < minimum:
        raise ParameterError(name, f"must be >= {minimum}, got {number}")
    if maximum is not None and number > maximum:
        raise ParameterError(name, f"must be <= {maximum}, got {number}")
    return number


def check_positive(name: str, value: object, maximum: float | None = None) -> float:
    """Return ``value`` as a finite float in ``(0, maximum]`` or raise ParameterError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(name, f"must be a number > 0, got {excerpt(value)}")
    number = float(value)
    if not math.isfinite(number) or number <= 0:
        raise ParameterError(name, f"must be a finite number > 0, got {excerpt(number)}")
    if maximum is not None and number > maximum:
        raise ParameterError(name, f"must be <= {maximum:g}, got {excerpt(number)}")
    return number


def parse_param(name: str, parse: Callable[[T], R], value: T) -> R:
    """``parse(value)`` (a :mod:`magnum_lib.units` parser such as ``parse_duration``), with
    its ValueError or TypeError re-raised as a ParameterError naming ``name`` (so the CLI
    can name the flag)."""
    try:
        return parse(value)
    except (TypeError, ValueError) as exc:
        raise ParameterError(name, str(exc)) from None


def check_choice(name: str, value: object, choices: Collection[T]) -> T:
    """Return ``value`` if it is one of ``choices`` or raise ParameterError."""
    if value not in choices:
        accepted = ", ".join(repr(c) for c in choices)
        raise ParameterError(name, f"must be one of {accepted}, got {excerpt(value)}")
    return cast(T, value)  # one of the choices (the test above)
