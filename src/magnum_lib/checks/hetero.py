"""Claim checks of notebook 06 (heterogeneous hell): static graphs, reservation, packing.

* C35: how much lead time the scheduling decision needs, against the article's 10 ms;
* C36: a Llama 3 70B graph (Meta's published architecture) reserved whole on one device;
* C37: the article's manifest reserved on its own device (MTIA v2's PCIe 5.0 x8 link);
* C38: time-division packing's utilization, against the article's 95%.
"""
from __future__ import annotations

import dataclasses
import time

from magnum_lib._resources import data_path
from magnum_lib.base.validate import ParameterError, check_positive
from magnum_lib.checks.check import ClaimCheck
from magnum_lib.claims import NOT_REPRODUCED, REFUTED, REPRODUCED, SET_BY_INPUT, Verdict
from magnum_lib.graph import packing
from magnum_lib.graph.manifest import load_manifest, parse_manifest
from magnum_lib.graph.reserve import reserve
from magnum_lib.hardware import Catalog, default_catalog

ARTICLE_C35_LEAD_S = 10e-3   # C35: the graph must be known "10 ms" before execution
ARTICLE_C38_UTIL = 0.95      # C38: "achieving 95% utilization"

# Llama 3 70B as Meta published it (model card / params.json): 80 layers, width 8,192,
# feed-forward 28,672, 64 query heads sharing 8 key-value heads, 128,256-token vocabulary.
LLAMA3_70B = {"layers": 80, "width": 8192, "ffn": 28672, "heads": 64, "kv_heads": 8, "vocab": 128256}


def llama3_70b_params() -> dict:
    """Parameter counts of Llama 3 70B from its architecture: per block, and in total."""
    a = LLAMA3_70B
    d, head = a["width"], a["width"] // a["heads"]
    attention = 2 * d * d + 2 * d * a["kv_heads"] * head   # q and output projections; k, v on 8 heads
    mlp = 3 * d * a["ffn"]                                  # gate, up and down projections
    embed = a["vocab"] * d                                  # input embedding; the output head is as big
    return {"block": attention + mlp, "embed": embed, "total": a["layers"] * (attention + mlp) + 2 * embed}


def llama3_70b_manifest(bytes_per_param: float = 1.0) -> dict:
    """A manifest document of the whole Llama 3 70B graph: its weights' memory per layer.

    Runtimes are placeholders (100 µs per block): C36 is about whether the graph fits.
    """
    check_positive("bytes_per_param", bytes_per_param, maximum=8.0)
    p = llama3_70b_params()
    mem = {k: f"{int(round(v * bytes_per_param))}B" for k, v in p.items()}
    graph = [{"layer": "embed", "runtime": "10us", "memory": mem["embed"]}]
    graph += [{"layer": f"block_{i}", "runtime": "100us", "memory": mem["block"]}
              for i in range(LLAMA3_70B["layers"])]
    graph += [{"layer": "output_head", "runtime": "10us", "memory": mem["embed"]}]
    return {"job": {"id": "llama3-70b-whole", "gpu_type": "mtia_v2", "graph": graph, "pre_reserve": True}}


# -- C35 ----------------------------------------------------------------------------------
def _measure_c35(extra_setup_s: float, repeats: int) -> dict:
    """Time to validate and reserve the article's manifest (the best of 5 means of ``repeats``)."""
    if not isinstance(repeats, int) or not 1 <= repeats <= 10_000:
        raise ParameterError("repeats", f"must be an int in [1, 10000], got {repeats!r}")
    if not (isinstance(extra_setup_s, (int, float)) and 0 <= extra_setup_s <= 10):
        raise ParameterError("extra_setup_s", f"must be seconds in [0, 10], got {extra_setup_s!r}")
    text = data_path("manifests").joinpath("article.yaml").read_text(encoding="utf-8")
    reserve(parse_manifest(text))   # warm up
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(repeats):
            reserve(parse_manifest(text))
        samples.append((time.perf_counter() - t0) / repeats)
    decision_s = min(samples)   # the least disturbed by other work on the machine
    return {"decision_s": decision_s, "extra_setup_s": float(extra_setup_s),
            "needed_lead_s": decision_s + float(extra_setup_s)}


def _judge_c35(m: dict) -> Verdict:
    need, ratio = m["needed_lead_s"], m["needed_lead_s"] / ARTICLE_C35_LEAD_S
    figures = {"needed_lead_ms": need * 1e3, "decision_us": m["decision_s"] * 1e6}
    if ratio < 0.5:
        return Verdict("C35", NOT_REPRODUCED, f"validating and reserving the article's manifest takes "
                       f"{m['decision_s'] * 1e6:,.0f} µs, {1 / ratio:,.0f}x inside 10 ms, and lead time beyond "
                       "the decision changes no job's latency; a 10 ms need would have to come from what the "
                       "kit does not model (shipping, compiling or staging the graph)", figures)
    if ratio > 2:
        return Verdict("C35", REFUTED, f"the decision needs {need * 1e3:.1f} ms of lead, more than the "
                       "article's 10 ms", figures)
    if m["extra_setup_s"] >= 0.5 * need:
        return Verdict("C35", SET_BY_INPUT, f"{need * 1e3:.1f} ms of lead is mostly the "
                       f"{m['extra_setup_s'] * 1e3:.1f} ms of set-up we put in (extra_setup_s)", figures)
    return Verdict("C35", REPRODUCED, f"validate and reserve take {need * 1e3:.1f} ms, the article's "
                   "10 ms order", figures)


# -- C36 ----------------------------------------------------------------------------------
def _measure_c36(device_memory_gb: float, bytes_per_param: float) -> dict:
    check_positive("device_memory_gb", device_memory_gb, maximum=1e6)
    base = default_catalog()
    mtia = dataclasses.replace(base["mtia_v2"], memory_bytes=int(device_memory_gb * 1e9))
    catalog = Catalog({**{k: base[k] for k in base}, "mtia_v2": mtia})
    doc = llama3_70b_manifest(bytes_per_param)
    need = sum(int(layer["memory"][:-1]) for layer in doc["job"]["graph"])   # pre_reserve: the sum
    try:   # the validator refuses a graph larger than the device; reserve() would too
        fits = reserve(parse_manifest(doc, catalog=catalog), catalog=catalog).peak_memory_bytes == need
    except ValueError:   # ManifestError is a ValueError
        fits = False
    return {"graph_bytes": need, "device_bytes": mtia.memory_bytes, "fits": fits,
            "devices_needed": -(-need // mtia.memory_bytes), "bytes_per_param": bytes_per_param}


def _judge_c36(m: dict) -> Verdict:
    gb, dev = m["graph_bytes"] / 1e9, m["device_bytes"] / 1e9
    figures = {"graph_gb": gb, "device_gb": dev, "devices_needed": m["devices_needed"]}
    at = f"{m['bytes_per_param']:g} byte{'s' if m['bytes_per_param'] != 1 else ''} per parameter"
    if m["fits"]:
        return Verdict("C36", REPRODUCED, f"the kit reserves the whole Llama 3 70B graph (80 blocks from Meta's "
                       f"architecture, {gb:.1f} GB of weights at {at}) on one {dev:.0f} GB MTIA v2, "
                       f"{gb / dev:.0%} of its memory; on the article's own 32 GB (C34) it would need "
                       f"{-(-m['graph_bytes'] // 32_000_000_000)} devices", figures)
    return Verdict("C36", REFUTED, f"Llama 3 70B's {gb:.1f} GB of weights (at {at}) do not fit a {dev:.0f} GB "
                   f"device: the whole graph cannot be reserved at one, it needs {m['devices_needed']}", figures)


# -- C37 ----------------------------------------------------------------------------------
def _measure_c37(device: str) -> dict:
    r = reserve(load_manifest("article"), device=device)
    return {"device": r.device, "makespan_ns": int(r.makespan_ns),
            "declared_ns": int(r.declared_runtime_ns.sum()),
            "layer_ns": [int(e - s) for s, e in zip(r.start_ns, r.end_ns, strict=True)], "notes": list(r.notes)}


def _judge_c37(m: dict) -> Verdict:
    ratio = m["makespan_ns"] / m["declared_ns"]
    figures = {"makespan_ms": m["makespan_ns"] / 1e6, "ratio": ratio}
    if not m["notes"] and m["makespan_ns"] == m["declared_ns"]:
        return Verdict("C37", REPRODUCED, f"on {m['device']} the manifest runs as written: "
                       f"{m['declared_ns'] / 1e6:.2f} ms", figures)
    layers = " and ".join(f"{ns / 1e3:,.0f}" for ns in m["layer_ns"])
    return Verdict("C37", REFUTED, f"the manifest asks 40 and 60 GB/s of {m['device']}, whose link carries less: "
                   f"reserved there its layers take {layers} µs, not 420 and 800 "
                   f"(makespan {m['makespan_ns'] / 1e6:.2f} ms, {ratio:.2f}x the 1.22 ms written)", figures)


# -- C38 ----------------------------------------------------------------------------------
def _packed(jobs: int, seed: int, spread: float, pressure: float, load, policy: str) -> float:
    js = packing.make_inference_graphs(jobs, seed, spread, pressure, "mtia_v2", load=load)
    return float(packing.pack(js, policy).utilization)


def _measure_c38(policy: str, memory_pressure: float, large_pressure: float, load, jobs: int, seed: int,
                 runtime_spread: float) -> dict:
    if policy not in packing.POLICIES:
        raise ParameterError("policy", f"must be one of {packing.POLICIES}, got {policy!r}")
    args = (jobs, seed, runtime_spread)
    return {"policy": policy, "pressure": memory_pressure, "large_pressure": large_pressure, "load": load,
            "utilization": _packed(*args, memory_pressure, load, policy),
            "utilization_large": _packed(*args, large_pressure, load, policy),
            "utilization_exclusive": _packed(*args, memory_pressure, load, "exclusive"),
            "utilization_at_0.9": _packed(*args, memory_pressure, 0.9, policy)}


def _judge_c38(m: dict) -> Verdict:
    u, big, ex, u09 = m["utilization"], m["utilization_large"], m["utilization_exclusive"], m["utilization_at_0.9"]
    figures = {"utilization": u, "utilization_large": big, "utilization_exclusive": ex, "utilization_at_0.9": u09}
    offered = "a batch (a queue of work)" if m["load"] is None else f"offered load {m['load']:g}"
    if u < ARTICLE_C38_UTIL:
        return Verdict("C38", NOT_REPRODUCED, f"{m['policy']} gives {u:.1%} with graphs of {m['pressure']:.0%} of "
                       f"memory and {offered}: 95% takes packing, small graphs and a queue of work", figures)
    if big >= ARTICLE_C38_UTIL:
        return Verdict("C38", REPRODUCED, f"{m['policy']} gives {u:.1%}, and {big:.1%} even with graphs of "
                       f"{m['large_pressure']:.0%} of memory ({offered})", figures)
    return Verdict("C38", SET_BY_INPUT, f"packing gives {u:.1%} (one graph at a time: {ex:.1%}) with graphs of "
                   f"{m['pressure']:.0%} of memory and {offered}, but {big:.1%} with graphs of "
                   f"{m['large_pressure']:.0%} and {u09:.1%} at offered load 0.9: which side of 95% "
                   "it lands on is set by the memory pressure and load we choose", figures)


CHECKS = (
    ClaimCheck("C35", _measure_c35, _judge_c35, defaults={"extra_setup_s": 0.0, "repeats": 20},
               perturbations=({"extra_setup_s": 0.010},),
               about="validate + reserve time of the article's manifest against the 10 ms lead"),
    ClaimCheck("C36", _measure_c36, _judge_c36,
               defaults={"device_memory_gb": default_catalog()["mtia_v2"].memory_bytes / 1e9,
                         "bytes_per_param": 1.0},
               perturbations=({"device_memory_gb": 32.0}, {"bytes_per_param": 2.0}),
               about="the whole Llama 3 70B graph reserved on one MTIA v2"),
    ClaimCheck("C37", _measure_c37, _judge_c37, defaults={"device": "mtia_v2"},
               perturbations=({"device": "h100_sxm"},),
               about="the article's manifest on its own device's link"),
    ClaimCheck("C38", _measure_c38, _judge_c38,
               defaults={"policy": "packed", "memory_pressure": 0.1, "large_pressure": 0.5, "load": None,
                         "jobs": 100, "seed": 0, "runtime_spread": 0.5},
               perturbations=({"policy": "exclusive"}, {"load": 0.9}),
               about="time-division packing's utilization on MTIA v2 against the article's 95%"),
)
