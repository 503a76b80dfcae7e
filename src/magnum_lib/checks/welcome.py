"""Claim checks of notebook 00 (welcome): the article's arithmetic and hardware figures.

C24 (CUDA cores), C21 (the cost model's device figures) and C34 (MTIA v2's memory) are
compared with the public datasheets the catalog cites (``magnum_lib/data/hardware.yaml``).
C4 (the mixed fleet) has no check: it is "not testable here" (claims.yaml says why).
"""
from __future__ import annotations

from magnum_lib.checks.check import ClaimCheck
from magnum_lib.claims import REFUTED, REPRODUCED, Verdict
from magnum_lib.hardware import default_catalog

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


# -- C21: the cost model's device figures -------------------------------------------------
# The article's figures (C21), as printed. It names a precision only for the H100 ("FP8
# Tensor Core"); MTIA v2 and MI300X are compared at dense BF16, their lowest tensor figure
# in the catalog (the comparison most favourable to the article).
ARTICLE_C21 = {"h100_fp8_tflops": 50.0, "mtia_tflops": 40.0, "mtia_power_x": 0.3,
               "mi300x_tflops": 45.0, "mi300x_bandwidth_x": 2.0}
C21_TOLERANCE = 0.10   # a datasheet figure within 10% counts as the article's


def _public_c21(catalog) -> dict:
    """The public figures C21's five correspond to (TFLOPS dense, ratios to the H100)."""
    h100, mtia, mi300x = catalog["h100_sxm"], catalog["mtia_v2"], catalog["mi300x"]
    return {"h100_fp8_tflops": h100.peak("fp8") / 1e12, "mtia_tflops": mtia.peak("bf16") / 1e12,
            "mtia_power_x": mtia.tdp_w / h100.tdp_w, "mi300x_tflops": mi300x.peak("bf16") / 1e12,
            "mi300x_bandwidth_x": mi300x.mem_bandwidth_Bps / h100.mem_bandwidth_Bps}


def _measure_c21(**article) -> dict:
    public = _public_c21(default_catalog())
    return {"article": dict(article), "public": public,
            "ratio": {k: public[k] / article[k] for k in article}}


def _judge_c21(m: dict) -> Verdict:
    ratio = m["ratio"]
    wrong = {k: r for k, r in ratio.items() if abs(r - 1) > C21_TOLERANCE}
    if not wrong:
        return Verdict("C21", REPRODUCED, "every C21 figure is within 10% of the public datasheets", ratio)
    text = {"h100_fp8_tflops": "H100 dense FP8 {p:,.0f} TFLOPS is {r:.1f}x the article's 50",
            "mtia_tflops": "MTIA v2 dense BF16 {p:,.0f} is {r:.1f}x its 40",
            "mtia_power_x": "MTIA v2's TDP is {p:.2f}x the H100's, not 0.3x",
            "mi300x_tflops": "MI300X dense BF16 {p:,.0f} is {r:.0f}x its 45",
            "mi300x_bandwidth_x": "MI300X bandwidth is {p:.2f}x the H100's, not 2x"}
    parts = [text[k].format(p=m["public"][k], r=r) for k, r in wrong.items()]
    return Verdict("C21", REFUTED, "; ".join(parts) + " (public datasheets in the catalog)", ratio)


# -- C34: MTIA v2's memory --------------------------------------------------------------
def _measure_c34(mtia_memory_gb: float, mtia_memory_type: str, h100_memory_gb: float,
                 h100_memory_type: str) -> dict:
    cat = default_catalog()
    mtia, h100 = cat["mtia_v2"], cat["h100_sxm"]
    return {"mtia_gb": mtia.memory_bytes / 1e9, "mtia_type": mtia.memory_type,
            "h100_gb": h100.memory_bytes / 1e9, "h100_type": h100.memory_type,
            "article": {"mtia_gb": mtia_memory_gb, "mtia_type": mtia_memory_type,
                        "h100_gb": h100_memory_gb, "h100_type": h100_memory_type}}


def _judge_c34(m: dict) -> Verdict:
    a = m["article"]
    h100_right = a["h100_gb"] == m["h100_gb"] and a["h100_type"] == m["h100_type"]
    mtia_right = a["mtia_gb"] == m["mtia_gb"] and a["mtia_type"] == m["mtia_type"]
    figures = {"mtia_ratio": m["mtia_gb"] / a["mtia_gb"]}
    if h100_right and mtia_right:
        return Verdict("C34", REPRODUCED, f"MTIA v2 {m['mtia_gb']:.0f} GB {m['mtia_type']} and H100 "
                       f"{m['h100_gb']:.0f} GB {m['h100_type']}, as the article says", figures)
    return Verdict("C34", REFUTED, f"Meta's MTIA v2 has {m['mtia_gb']:.0f} GB of {m['mtia_type']}, "
                   f"{figures['mtia_ratio']:.0f}x the article's {a['mtia_gb']:g} GB and not {a['mtia_type']}; "
                   f"the H100's {a['h100_gb']:g} GB {a['h100_type']} is "
                   f"{'right' if h100_right else 'wrong too'}", figures)


CHECKS += (
    ClaimCheck("C21", _measure_c21, _judge_c21, defaults=ARTICLE_C21,
               perturbations=({"h100_fp8_tflops": 1978.9, "mtia_tflops": 177.0, "mtia_power_x": 90 / 700,
                               "mi300x_tflops": 1307.4, "mi300x_bandwidth_x": 5.3 / 3.35},),
               about="the cost model's five device figures against the catalog's datasheets"),
    ClaimCheck("C34", _measure_c34, _judge_c34,
               defaults={"mtia_memory_gb": 32.0, "mtia_memory_type": "HBM2e", "h100_memory_gb": 80.0,
                         "h100_memory_type": "HBM3"},
               perturbations=({"mtia_memory_gb": 128.0, "mtia_memory_type": "LPDDR5"},),
               about="MTIA v2's and the H100's memory against Meta's and NVIDIA's specifications"),
)
