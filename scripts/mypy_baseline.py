"""mypy over the package, compared with the checked-in baseline ``mypy-baseline.txt``.

    python scripts/mypy_baseline.py            # exit 1 if an error is new (or the list is stale)
    python scripts/mypy_baseline.py --update   # rewrite the baseline (only ever to shrink it)

The baseline lists today's errors as ``path: message  [code]``, one a line, sorted, without
line numbers, so moving code does not churn it. It may only shrink: a new (file, error)
pair, or one more of an existing pair, fails; so does an entry that no longer occurs (rewrite
the file with ``--update`` and commit the smaller list). The settings are pyproject.toml's
``[tool.mypy]`` (strict for engine/, units.py and hardware.py, which have no entry).
The cache lives in the system temp folder, outside the checkout.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "mypy-baseline.txt"
CACHE = Path(tempfile.gettempdir()) / f"magnum_lib-mypy-cache-py{sys.version_info[0]}{sys.version_info[1]}"
_ERROR = re.compile(r"^(?P<path>[^:\s]+\.pyi?):\d+(?::\d+)?: error: (?P<message>.*)$")
HEADER = "# mypy errors of today, without line numbers (scripts/mypy_baseline.py). It may only shrink.\n"


def normalize(report: str) -> list[str]:
    """mypy's output as sorted ``path: message`` lines (errors only, notes dropped)."""
    out = []
    for line in report.splitlines():
        m = _ERROR.match(line.strip())
        if m:
            path = m.group("path").replace("\\", "/")
            out.append(f"{path}: {m.group('message').strip()}")
    return sorted(out)


def run_mypy() -> list[str]:
    """Run mypy (in process) with the repository's settings; return its normalized errors."""
    from mypy import api

    stdout, stderr, status = api.run(["--config-file", str(ROOT / "pyproject.toml"),
                                      "--cache-dir", str(CACHE), "--no-error-summary",
                                      "--hide-error-context", "--no-pretty", "--no-color-output"])
    if status not in (0, 1):  # 2: mypy itself failed (bad configuration, crash)
        raise RuntimeError(f"mypy exited {status}: {stderr.strip() or stdout.strip()}")
    return normalize(stdout)


def read_baseline(path: Path = BASELINE) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]


def compare(current: list[str], baseline: list[str]) -> tuple[list[str], list[str]]:
    """``(new, gone)``: errors beyond the baseline, and baseline entries no longer seen."""
    now, then = Counter(current), Counter(baseline)
    return sorted((now - then).elements()), sorted((then - now).elements())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--update", action="store_true", help="rewrite mypy-baseline.txt from this run")
    args = parser.parse_args(argv)
    os.chdir(ROOT)  # mypy reports paths relative to the working directory
    current = run_mypy()
    if args.update:
        BASELINE.write_text(HEADER + "".join(line + "\n" for line in current), encoding="utf-8")
        print(f"mypy-baseline.txt: {len(current)} errors")
        return 0
    new, gone = compare(current, read_baseline())
    for line in new:
        print(f"new: {line}")
    for line in gone:
        print(f"fixed (remove it: --update): {line}")
    print(f"mypy: {len(current)} errors, baseline {len(read_baseline())}; {len(new)} new, {len(gone)} fixed")
    return 1 if new or gone else 0


if __name__ == "__main__":
    raise SystemExit(main())
