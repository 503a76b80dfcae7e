"""Rewrite the claims table in notebook 00 from magnum_lib/data/claims.yaml (verdicts included).

Usage: python scripts/update_claims_table.py   (then commit notebooks/00_welcome.ipynb)
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from magnum_lib import claims

NB = Path(__file__).resolve().parents[1] / "notebooks" / "00_welcome.ipynb"
TABLE = re.compile(r"^\| id \| the article's claim \|.*?(?=\n\n|\Z)", re.M | re.S)


def main() -> None:
    nb = json.loads(NB.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and TABLE.search(src):
            new = TABLE.sub(lambda _: claims.markdown_table(), src, count=1)
            cell["source"] = new.splitlines(keepends=True)
            NB.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            print(f"updated the claims table in {NB.name}")
            return
    raise SystemExit(f"no claims table found in {NB}")


if __name__ == "__main__":
    main()
