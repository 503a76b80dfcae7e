"""Claim checks of notebook 00 (welcome): the article's arithmetic and hardware figures."""
from __future__ import annotations

from magnum_lib.checks.check import ClaimCheck
from magnum_lib.claims import REFUTED, REPRODUCED, Verdict

ARTICLE_C24_TOTAL = 3_600_000   # C24: "~3.6 million" GPU cores
TOLERANCE = 0.05                # "~": within 5% counts as the article's figure


def _measure_c24(cores_per_gpu: int, gpus: int) -> dict:
    return {"cores_per_gpu": cores_per_gpu, "gpus": gpus, "product": cores_per_gpu * gpus}


def _judge_c24(m: dict) -> Verdict:
    ratio = m["product"] / ARTICLE_C24_TOTAL
    if abs(ratio - 1) <= TOLERANCE:
        return Verdict("C24", REPRODUCED, f"{m['cores_per_gpu']:,} x {m['gpus']:,} = {m['product']:,}, "
                       "the article's ~3.6 million", {"ratio": ratio})
    return Verdict("C24", REFUTED, f"{m['cores_per_gpu']:,} x {m['gpus']:,} = {m['product']:,}: "
                   f"{ratio:,.0f}x the article's ~3.6 million", {"ratio": ratio})


CHECKS = (
    ClaimCheck("C24", _measure_c24, _judge_c24, defaults={"cores_per_gpu": 18_432, "gpus": 200_000},
               perturbations=({"cores_per_gpu": 18},),
               about="the product the article computes, against the figure it prints"),
)
