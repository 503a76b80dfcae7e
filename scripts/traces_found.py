"""Are the real public traces where the library's loaders look? (used by `make notebooks`)

Exit 0, silent, when they are (see :func:`magnum_lib.workload.traces.traces_missing`);
else exit 3 and print one line saying where they were looked for. Run it from the folder
the notebooks' kernels start in: the loaders' search depends on the current folder.
"""
from __future__ import annotations

import sys

from magnum_lib.workload.traces import traces_missing

MISSING = 3


def main() -> int:
    reason = traces_missing()
    if reason is None:
        return 0
    print(reason)
    return MISSING


if __name__ == "__main__":
    sys.exit(main())
