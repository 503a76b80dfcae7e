"""Are the real public traces where the library's loaders look? (used by `make notebooks`)

Exit 0, silent, when they are (``MANIFEST.tsv`` in the folder
:func:`magnum_lib.workload.traces.shared_data_dir` names: ``$MAGNUM_SHARED_DATA``, else
``shared/data`` in the current folder or a parent, else beside the checkout); else exit 3
and print one line saying where they were looked for. Run it from the folder the
notebooks' kernel starts in: that search depends on the current folder.
"""
from __future__ import annotations

import sys

from magnum_lib.workload.traces import ENV_VAR, shared_data_dir

MISSING = 3


def main() -> int:
    where = shared_data_dir()
    if (where / "MANIFEST.tsv").is_file():
        return 0
    print(f"real traces not found at {where} (set {ENV_VAR})")
    return MISSING


if __name__ == "__main__":
    sys.exit(main())
