"""Column-wise CSV reading with fast numpy conversion and exact error locations.

A file is read once with the ``csv`` module into columns of strings; each column
is converted with one vectorized numpy call. Only when that fails (or a value is
out of range) do we walk the column to find the first bad row, so a malformed
file gets ``ValueError("<file>: line <n>, column <k> (<name>): ...")`` while a
good one pays nothing for the check.
"""
from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

import numpy as np

from magnum_lib.base.validate import excerpt


class Columns:
    """The string columns of a CSV file, with the file line of each row."""

    def __init__(self, path: Path, header: list[str], cols: list[list[str]], lines: list[int]):
        self.path = path
        self.header = header
        self._cols = cols
        self.lines = lines

    def __len__(self) -> int:
        return len(self.lines)

    def raw(self, name: str) -> list[str]:
        return self._cols[self.header.index(name)]

    def fail(self, name: str, row: int, reason: str):
        col = self.header.index(name) + 1
        value = self.raw(name)[row]
        raise ValueError(
            f"{self.path}: line {self.lines[row]}, column {col} ({name!r}): {reason}, got {excerpt(value)}"
        )

    def _convert(self, name, dtype, one: Callable[[str], object], what: str):
        values = self.raw(name)
        try:
            return np.array(values, dtype=dtype)
        except (ValueError, OverflowError):  # OverflowError: an integer past int64
            for i, v in enumerate(values):
                try:
                    np.array([one(v)], dtype=dtype)
                except (ValueError, OverflowError):
                    self.fail(name, i, f"expected {what}")
            raise  # unreachable: numpy and the scalar parser agree

    def check(self, name: str, ok: np.ndarray, reason: str):
        if not ok.all():
            self.fail(name, int(np.argmin(ok)), reason)

    def floats(self, name: str, *, nonneg: bool = True, allow_empty: bool = False,
               maximum: float | None = None) -> np.ndarray:
        """A float64 column, each value <= ``maximum``; empty cells become NaN when ``allow_empty``."""
        values = self.raw(name)
        if allow_empty:
            values = ["nan" if v == "" else v for v in values]
            self._cols[self.header.index(name)] = values
        arr = self._convert(name, np.float64, float, "a number")
        finite = np.isfinite(arr) | (allow_empty & np.isnan(arr))
        self.check(name, finite, "expected a finite number")
        if nonneg:
            self.check(name, ~(arr < 0), "expected a number >= 0")
        if maximum is not None:
            self.check(name, ~(arr > maximum), f"expected a number <= {maximum:g}")
        return arr

    def ints(self, name: str, *, minimum: int | None = 0, maximum: int | None = None) -> np.ndarray:
        """An int64 column of plain integers (no decimals), each in ``[minimum, maximum]``."""
        arr = self._convert(name, np.int64, int, "an integer")
        if minimum is not None:
            self.check(name, arr >= minimum, f"expected an integer >= {minimum}")
        if maximum is not None:
            self.check(name, arr <= maximum, f"expected an integer <= {maximum:,}")
        return arr

    def timestamps(self, name: str, fmt_len: int = 19) -> np.ndarray:
        """A ``YYYY-MM-DD HH:MM:SS`` column as datetime64[s]."""
        values = self.raw(name)
        arr = self._convert(name, "datetime64[s]", lambda v: np.datetime64(v, "s"),
                            "a timestamp 'YYYY-MM-DD HH:MM:SS'")
        lens = np.char.str_len(np.array(values)) if values else np.zeros(0, int)
        self.check(name, (lens == fmt_len) & ~np.isnat(arr), "expected a timestamp 'YYYY-MM-DD HH:MM:SS'")
        return arr

    def codes(self, name: str) -> tuple[np.ndarray, tuple[str, ...]]:
        """Categorical column: (int32 codes, sorted names)."""
        names, codes = np.unique(np.array(self.raw(name), dtype=str), return_inverse=True)
        return codes.astype(np.int32), tuple(str(n) for n in names)


def read_columns(path: Path, header: list[str], keep: Callable[[list], bool] | None = None,
                 max_rows: int | None = None) -> Columns:
    """Read a CSV whose first line must be exactly ``header``; skip blank lines.

    ``keep(row)`` (the row's strings) selects rows as they are read (None: all), and
    reading stops once ``max_rows`` rows are kept (None: at the end of the file), so a
    file at its size limit costs only the rows needed.

    Text that is not UTF-8, or not CSV at all (a field past the csv module's limit), is a
    ValueError naming the file and line, like every other problem in the file.
    """
    try:
        return _read_columns(path, header, keep, max_rows)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset "
                         f"{exc.start}); save it as UTF-8") from None
    except csv.Error as exc:
        raise ValueError(f"{path}: is not a CSV file ({excerpt(str(exc))})") from None


def _read_columns(path: Path, header: list[str], keep, max_rows) -> Columns:
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        first = next(reader, None)
        if first is None:
            raise ValueError(f"{path}: line 1: file is empty, expected header {','.join(header)}")
        if [h.strip() for h in first] != header:
            raise ValueError(
                f"{path}: line 1: expected header {','.join(header)!r}, got {excerpt(','.join(first))}"
            )
        ncol = len(header)
        rows, lines = [], []
        for row in reader:
            if not row:
                continue
            if len(row) != ncol:
                raise ValueError(
                    f"{path}: line {reader.line_num}: expected {ncol} fields ({','.join(header)}), "
                    f"got {len(row)}: {excerpt(row)}"
                )
            if keep is not None and not keep(row):
                continue
            rows.append(row)
            lines.append(reader.line_num)
            if max_rows is not None and len(rows) >= max_rows:
                break
    cols = [list(c) for c in zip(*rows, strict=True)] if rows else [[] for _ in header]
    return Columns(path, header, cols, lines)
