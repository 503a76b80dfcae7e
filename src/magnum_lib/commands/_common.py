"""Helpers shared by every ``faux-magnum`` subcommand: one-line errors and typed flags.

Every flag that takes a value declares a :class:`FlagType` as its argparse ``type``
(:class:`Int`, :class:`Float`, :class:`Duration`, :class:`Size`, :class:`Text`,
:class:`InputFile`, :class:`StateFile`). The type parses the text, checks it against the
flag's documented range (appended to the flag's ``--help`` line, so the documentation and
the check are one declaration) and refuses anything else in one line, before the handler
runs and so before anything is allocated. The :class:`Parser` also refuses, for every
command, a flag given twice (argparse would silently keep the last copy) and an empty
value (which would otherwise read as "the default").
"""
from __future__ import annotations

import argparse
import math
import os
import re
import stat
import sys

from magnum_lib.base.validate import ParameterError, excerpt

PROG = "faux-magnum"
EXIT_USAGE = 2
#: The longest error line the CLI prints (a last line of defence; messages are short anyway).
MAX_LINE = 400


class UsageError(Exception):
    """Bad command-line input; the message is the one line to print."""


#: Exit status after Ctrl-C (128 + SIGINT), as shells report it.
EXIT_INTERRUPTED = 130


class Interrupted(Exception):
    """Ctrl-C during a run; the message says how far it got ("after 3.2 simulated s of 10")."""


def one_line(text, limit: int = MAX_LINE) -> str:
    """``text`` on one line (whitespace runs become one space), cut to ``limit`` characters."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[:limit - 3] + "..."


# --------------------------------------------------------------------------- the parser
class _Once(argparse.Action):
    """A store action (public ``argparse.Action`` API) that refuses a second copy of the
    flag and an empty value."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        if isinstance(self.type, FlagType) and self.help not in (None, argparse.SUPPRESS):
            self.help = f"{self.help} [{self.type.describe()}]"

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string is not None:
            seen = parser.__dict__.setdefault("_flags_seen", set())
            if id(self) in seen:
                raise argparse.ArgumentError(self, "given more than once (give each flag at most once)")
            seen.add(id(self))
            if isinstance(values, str) and not values.strip():
                raise argparse.ArgumentError(self, "is empty (omit the flag to use its default)")
        setattr(namespace, self.dest, self.stored(values))

    def stored(self, values):
        """What the flag stores: its value(s) (``store``)."""
        return values


class _StoreOnce(_Once):
    def __init__(self, option_strings, dest, nargs=None, **kwargs):
        if nargs == 0:
            raise ValueError("nargs for store actions must be != 0; use store_true or store_const")
        super().__init__(option_strings, dest, nargs=nargs, **kwargs)


class _StoreConstOnce(_Once):
    def __init__(self, option_strings, dest, const=None, default=None, required=False, help=None, **kwargs):
        super().__init__(option_strings, dest, nargs=0, const=const, default=default, required=required,
                         help=help, **kwargs)

    def stored(self, values):
        return self.const


class _StoreTrueOnce(_StoreConstOnce):
    def __init__(self, option_strings, dest, default=False, required=False, help=None, **kwargs):
        super().__init__(option_strings, dest, const=True, default=default, required=required, help=help, **kwargs)


class _Choice:
    """An argparse ``type`` that converts with ``convert`` (if any), then refuses a value
    outside ``choices`` with an excerpt of it and the accepted values."""

    def __init__(self, choices, convert=None):
        self.choices, self.convert = choices, convert
        self.__name__ = getattr(convert, "__name__", "value")  # argparse names the type in messages

    def __call__(self, text):
        value = self.convert(text) if self.convert is not None else text
        if value not in self.choices:
            accepted = ", ".join(repr(c) for c in self.choices)
            raise argparse.ArgumentTypeError(f"invalid choice: {excerpt(value)} (choose from {accepted})")
        return value


_ARGUMENT = re.compile(r"^argument ([^\s/:]+)(?:/[^\s:]+)*: ", re.S)


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors, no repeated flags and no empty values."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in (None, "store"):
            self.register("action", name, _StoreOnce)
        self.register("action", "store_true", _StoreTrueOnce)
        self.register("action", "store_const", _StoreConstOnce)

    def parse_known_args(self, args=None, namespace=None):
        self._flags_seen = set()  # per parse: a flag may appear once
        return super().parse_known_args(args, namespace)

    def parse_args(self, args=None, namespace=None):
        args, extra = self.parse_known_args(args, namespace)
        if extra:  # argparse would join them all, however long, into the message
            shown = " ".join(excerpt(a, 40) for a in extra[:4]) + (f" (+{len(extra) - 4} more)" if len(extra) > 4 else "")
            self.error(f"unrecognized arguments: {shown}")
        return args

    def add_argument(self, *args, **kwargs):
        # argparse's own "invalid choice" message reprs the whole value (a 100 kB value
        # becomes a 100 kB line): the flag's type refuses it first, with an excerpt.
        if kwargs.get("choices") is not None:
            kwargs["type"] = _Choice(kwargs["choices"], kwargs.get("type"))
        return super().add_argument(*args, **kwargs)

    def error(self, message):
        # argparse prints the usage block and then the error; we want one line, naming the flag
        # as the handlers do: "--nodes must be >= 1, got 0".
        raise UsageError(one_line(f"{self.prog}: error: " + _ARGUMENT.sub(r"\1 ", message)))


def flag_name(name: str) -> str:
    """The command-line flag for a Python parameter name: ``arrival_rate -> --arrival-rate``."""
    return "--" + name.replace("_", "-")


# --------------------------------------------------------------------------- flag types
class FlagType:
    """An argparse ``type``: parse one flag's text and check it against the documented range.

    ``describe()`` is the range, appended to the flag's help; ``bad_values()`` are texts
    just outside it (the fuzz tests feed them); ``example`` is a valid text.
    """

    kind = "text"
    example = "1"
    __name__ = "value"  # argparse names the type in some messages

    def __call__(self, text):
        if not isinstance(text, str):  # a non-string default declared in code
            return text
        if not text.strip():
            raise argparse.ArgumentTypeError("is empty (omit the flag to use its default)")
        return self.parse(text)

    def parse(self, text: str):
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def bad_values(self) -> list[str]:
        return []


def _refuse(detail: str) -> argparse.ArgumentTypeError:
    return argparse.ArgumentTypeError(detail)


_INT_TEXT = re.compile(r"^\s*[+-]?(?:\d[\d_]*\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*$")


class Int(FlagType):
    """An integer in ``lo..hi``; ``1000000``, ``1_000_000`` and an integral ``1e6`` are accepted."""

    kind = "int"

    def __init__(self, lo: int, hi: int):
        self.lo, self.hi = lo, hi
        self.example = str(lo)

    def parse(self, text):
        value = None
        if len(text) <= 40 and _INT_TEXT.match(text):
            try:
                value = int(text)
            except ValueError:
                try:
                    number = float(text)  # "1e6"; int() and float() take the same underscores
                except ValueError:
                    number = math.nan
                if math.isfinite(number) and number.is_integer():
                    value = int(number)
        if value is None:
            raise _refuse(f"must be an integer, got {excerpt(text)}")
        if value < self.lo:
            raise _refuse(f"must be >= {self.lo}, got {_num(value)}")
        if value > self.hi:
            raise _refuse(f"must be <= {self.hi}, got {_num(value)}")
        return value

    def describe(self):
        return f"integer, {self.lo:,} to {self.hi:,}"

    def bad_values(self):
        return [str(self.lo - 1), str(self.hi + 1), f"{self.lo}.5"]


def _num(value) -> str:
    """A number for a message: exact when short, else in e-notation."""
    text = repr(value)
    return text if len(text) <= 24 else f"{float(value):.3e}"


class Float(FlagType):
    """A finite number in an interval; ``-0`` is 0, subnormals (below 2.2e-308) are refused."""

    kind = "float"

    def __init__(self, lo: float, hi: float, *, lo_open=False, hi_open=False, unit: str = ""):
        self.lo, self.hi, self.lo_open, self.hi_open, self.unit = lo, hi, lo_open, hi_open, unit
        self.example = repr(lo if not lo_open else (lo + hi) / 2)  # a valid value, for the tests

    def interval(self) -> str:
        return f"{'(' if self.lo_open else '['}{self.lo:g}, {self.hi:g}{')' if self.hi_open else ']'}"

    def parse(self, text):
        try:
            value = float(text) + 0.0  # + 0.0 turns -0.0 into 0.0
        except ValueError:
            value = math.nan
        shown = excerpt(text) if not math.isfinite(value) else _num(value)
        if not math.isfinite(value):
            raise _refuse(f"must be a number in {self.interval()}, got {shown}")
        if value != 0 and abs(value) < sys.float_info.min:
            raise _refuse(f"must be a number in {self.interval()}, got {shown} (subnormal: too small to "
                          f"compute with)")
        below = value < self.lo or (self.lo_open and value == self.lo)
        above = value > self.hi or (self.hi_open and value == self.hi)
        if below or above:
            raise _refuse(f"must be a number in {self.interval()}, got {shown}")
        return value

    def describe(self):
        return f"number in {self.interval()}{' ' + self.unit if self.unit else ''}"

    def bad_values(self):
        out = [repr(self.lo) if self.lo_open else repr(self.lo - max(1.0, abs(self.lo)) * 1e-3),
               repr(self.hi) if self.hi_open else repr(self.hi + max(1.0, abs(self.hi)) * 1e-3)]
        return out


_LEADING_NUMBER = re.compile(r"^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def _nonzero_number(text: str) -> bool:
    m = _LEADING_NUMBER.match(text)
    try:
        return m is not None and float(m.group(0)) != 0
    except ValueError:
        return False


class Duration(FlagType):
    """A duration in ``lo_ns..hi_ns``: ``100ms``, ``2s``; a bare number is seconds if ``bare_seconds``.

    Returns what the library takes: the text, or float seconds for a bare number.
    """

    kind = "duration"

    def __init__(self, lo_ns: int, hi_ns: int, *, bare_seconds: bool = True):
        self.lo, self.hi, self.bare_seconds = lo_ns, hi_ns, bare_seconds
        from magnum_lib.units import format_duration

        self.example = format_duration(max(lo_ns, 1), digits=None)

    def parse(self, text):
        from magnum_lib.units import parse_duration

        value = text
        if self.bare_seconds:
            try:
                value = float(text)
            except ValueError:
                pass
        if isinstance(value, float) and value != 0 and abs(value) < sys.float_info.min:
            raise _refuse(f"must be a duration in {self.describe()[9:]}, got {excerpt(text)} (subnormal)")
        try:
            ns = parse_duration(value)
        except (TypeError, ValueError) as exc:
            raise _refuse(one_line(exc, 200)) from None
        if ns == 0 and _nonzero_number(text):
            raise _refuse(f"must be a duration in {self.describe()[9:]}, got {excerpt(text)} "
                          f"(below the 1 ns resolution)")
        if not self.lo <= ns <= self.hi:
            raise _refuse(f"must be a duration in {self.describe()[9:]}, got {excerpt(text)}")
        return value

    def describe(self):
        from magnum_lib.units import format_duration

        return f"duration {format_duration(self.lo)} to {format_duration(self.hi)}"

    def bad_values(self):
        out = [f"{self.hi + 1}ns"]
        if self.lo > 0:
            out.append(f"{self.lo - 1}ns")
        return out


class Size(FlagType):
    """A memory size in ``lo..hi`` bytes: ``80GB`` (10^9), ``64GiB`` (2^30); returns the text."""

    kind = "size"

    def __init__(self, lo: int, hi: int):
        self.lo, self.hi = lo, hi
        from magnum_lib.units import format_size

        self.example = format_size(lo, sep="")

    def parse(self, text):
        from magnum_lib.units import parse_size

        try:
            nbytes = parse_size(text)
        except (TypeError, ValueError) as exc:
            raise _refuse(one_line(exc, 200)) from None
        if not self.lo <= nbytes <= self.hi:
            raise _refuse(f"must be a size in {self.describe()[5:]}, got {excerpt(text)}")
        return text

    def describe(self):
        from magnum_lib.units import format_size

        return f"size {format_size(self.lo, sep='')} to {format_size(self.hi, sep='')}"

    def bad_values(self):
        return [f"{self.lo - 1}B" if self.lo > 0 else "-1B", f"{self.hi + 1}B"]


class Text(FlagType):
    """A word matching ``pattern`` (a regular expression, whole text), at most ``max_chars`` long."""

    kind = "text"

    def __init__(self, pattern: str, what: str, *, max_chars: int = 64, example: str = "x"):
        self.pattern, self.what, self.max_chars, self.example = re.compile(pattern), what, max_chars, example

    def parse(self, text):
        if len(text) > self.max_chars or not self.pattern.fullmatch(text):
            raise _refuse(f"must be {self.what} (at most {self.max_chars} characters), got {excerpt(text)}")
        return text

    def describe(self):
        return f"at most {self.max_chars} characters"

    def bad_values(self):
        return [self.example[:1] * (self.max_chars + 1)]


NAME = r"[A-Za-z0-9][A-Za-z0-9_.+-]*"  # catalog keys, aliases, link classes


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


_MAX_PATH = 4096
_PATH_EXCERPT = 200  # a real path may be long; a message still stays one short line


def _path(text) -> str:
    return excerpt(text, _PATH_EXCERPT)


def _check_printable_path(text: str) -> None:
    # Control characters or undecodable bytes (surrogates): not a name to create or to print.
    if len(text) > _MAX_PATH or not text.isprintable():
        raise _refuse(f"must be a printable path of at most {_MAX_PATH} characters, got {_path(text)}")


class InputFile(FlagType):
    """An existing regular file of at most ``max_bytes`` (a symlink to one is fine); returns the text.

    Checked with ``os.stat`` only, so a FIFO or a device is refused without being opened
    (opening a FIFO would block). ``pass_missing``: a name that is no file is handed on as
    it is (for a loader that also takes short names, e.g. a shipped manifest's).
    """

    kind = "path"

    def __init__(self, what: str, max_bytes: int, *, pass_missing: bool = False):
        self.what, self.max_bytes, self.pass_missing = what, max_bytes, pass_missing

    def parse(self, text):
        _check_printable_path(text)
        try:
            st = os.stat(text)
        except FileNotFoundError:
            return self.missing(text)
        except OSError as exc:
            raise _refuse(f"cannot be read: {_path(text)} ({exc.strerror})") from None
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(f"must be a regular file ({self.what}), got {_path(text)}: {_file_kind(st.st_mode)}")
        if st.st_size > self.max_bytes:
            from magnum_lib.units import format_size

            raise _refuse(f"{_path(text)} is {format_size(st.st_size)}, more than the {format_size(self.max_bytes)} "
                          f"a {self.what} may be")
        return text

    def missing(self, text):
        if self.pass_missing:
            return text
        raise _refuse(f"no such file: {_path(text)}")

    def describe(self):
        from magnum_lib.units import format_size

        return f"a regular file of at most {format_size(self.max_bytes, sep='')}"


class StateFile(InputFile):
    """A state file: a regular file if it exists, else a new file in an existing directory."""

    kind = "state-path"

    def missing(self, text):
        parent = os.path.dirname(text) or "."
        if not os.path.isdir(parent):
            raise _refuse(f"{_path(text)}: directory {_path(parent)} does not exist")
        return text

    def describe(self):
        return super().describe() + ", created if missing"


class OutputDir(FlagType):
    """A folder to write into: an existing directory, or a new one whose parent exists."""

    kind = "dir"
    example = "faux-magnum-notebooks"

    def parse(self, text):
        _check_printable_path(text)
        try:
            st = os.stat(text)
        except FileNotFoundError:
            parent = os.path.dirname(os.path.normpath(text)) or "."
            if not os.path.isdir(parent):
                raise _refuse(f"{_path(text)}: directory {_path(parent)} does not exist") from None
            return text
        except OSError as exc:
            raise _refuse(f"cannot be read: {_path(text)} ({exc.strerror})") from None
        if not stat.S_ISDIR(st.st_mode):
            kind = "a regular file" if stat.S_ISREG(st.st_mode) else _file_kind(st.st_mode)
            raise _refuse(f"must be a folder, got {_path(text)}: {kind}")
        return text

    def describe(self):
        return "a folder, created if missing (its parent must exist)"


#: Every command's --seed (numpy takes any non-negative int; int64 keeps it portable).
SEED = Int(0, 2**63 - 1)


def int_value(name: str, text) -> int:
    """Parse an integer (a flag's int, or text: ``1000000``, ``1_000_000``, integral ``1e6``)."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    try:
        return Int(-2**63, 2**63 - 1).parse(str(text))
    except argparse.ArgumentTypeError as exc:
        raise ParameterError(name, str(exc)) from None


def float_value(name: str, text) -> float:
    """Parse a number (a flag's float, or text)."""
    if isinstance(text, float):
        return text
    try:
        return Float(-math.inf, math.inf).parse(str(text))
    except argparse.ArgumentTypeError:
        raise ParameterError(name, f"must be a number, got {excerpt(text)}") from None


def finite_json(obj):
    """``obj`` with every NaN or infinite float replaced by None (JSON has no NaN: a document
    holding one is invalid for every strict parser)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_json(v) for v in obj]
    if hasattr(obj, "dtype") and hasattr(obj, "tolist"):  # numpy scalars and arrays
        return finite_json(obj.tolist())
    return obj


def json_text(obj) -> str:
    """``obj`` as strict JSON: NaN and infinities become null (see :func:`finite_json`)."""
    import json

    return json.dumps(finite_json(obj), allow_nan=False)


def print_table(rows) -> None:
    """Print ``(label, value)`` pairs as an aligned two-column table (the readable output)."""
    rows = list(rows)
    width = max((len(label) for label, _ in rows), default=0)
    for label, value in rows:
        print(f"{label:<{width}}  {value}")
