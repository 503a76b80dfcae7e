"""Accelerator catalog and roofline cost model.

Expected figures come from the vendors' public datasheets (quoted in the brief and in
data/hardware.yaml's references), not from the code; roofline cases are worked by hand.
"""
from __future__ import annotations

import numpy as np
import pytest
import yaml

from magnum_lib.hardware import (
    PRECISIONS,
    Catalog,
    UnknownAcceleratorError,
    cost_matrix,
    default_catalog,
    load_catalog,
    request_cost,
)

EXPECTED_KEYS = {"h100_sxm", "a100_sxm", "mi300x", "mtia_v2", "v100", "p100", "k80"}
FIGURES = ("memory", "mem_bandwidth", "peak_tflops", "tdp", "interconnect")


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


# ---------------------------------------------------------------- catalog

def test_catalog_loads_all_devices(cat, repo_root):
    assert set(cat) == EXPECTED_KEYS
    assert len(cat) == 7
    assert cat.source_path == repo_root / "src" / "magnum_lib" / "data" / "hardware.yaml"
    assert default_catalog() is default_catalog()  # cached


def test_every_figure_has_a_public_source(cat, repo_root):
    raw = yaml.safe_load((repo_root / "src" / "magnum_lib" / "data" / "hardware.yaml").read_text())
    refs = raw["references"]
    assert all("https://" in text for text in refs.values())
    for key, spec in raw["accelerators"].items():
        figures = [f for f in spec if f in FIGURES or f.startswith("cuda_cores")]
        assert set(FIGURES) <= set(figures)
        for f in figures:
            assert spec["sources"][f] in refs, f"{key}.{f} has no reference"
        acc = cat[key]
        assert set(figures) <= set(acc.sources) and all("https://" in s for s in acc.sources.values())


@pytest.mark.parametrize("key, mem_gb, bw_gbps, peaks_tflops, tdp", [
    # H100 SXM: 80GB HBM3, 3.35 TB/s, ~989 dense BF16, 1979 dense FP8, 700 W
    ("h100_sxm", 80, 3350, {"bf16": 989, "fp8": 1979, "int8": 1979, "fp32": 67}, 700),
    # A100 SXM 80GB: 2,039 GB/s, 312 BF16, 624 INT8, 19.5 FP32, 400 W
    ("a100_sxm", 80, 2039, {"bf16": 312, "int8": 624, "fp32": 19.5}, 400),
    # MI300X: 192GB, 5.3 TB/s, 1307 dense BF16, 2615 FP8, 750 W
    ("mi300x", 192, 5300, {"bf16": 1307, "fp8": 2615, "fp32": 163.4}, 750),
    # MTIA v2 (Meta blog): 128GB LPDDR5, 204.8 GB/s, 354 INT8 dense, 177 BF16 dense, 90 W
    ("mtia_v2", 128, 204.8, {"int8": 354, "bf16": 177}, 90),
    # V100 SXM2: 900 GB/s, 125 tensor FP16, 15.7 FP32, 300 W
    ("v100", 16, 900, {"fp16": 125, "fp32": 15.7}, 300),
    # P100 PCIe 16GB: 732 GB/s, 18.7 FP16, 9.3 FP32, 250 W
    ("p100", 16, 732, {"fp16": 18.7, "fp32": 9.3}, 250),
    # K80 board: 24GB, 480 GB/s, 8.73 FP32 at boost, 300 W
    ("k80", 24, 480, {"fp32": 8.73}, 300),
])
def test_public_figures(cat, key, mem_gb, bw_gbps, peaks_tflops, tdp):
    acc = cat[key]
    assert acc.memory_bytes == mem_gb * 10**9
    assert acc.mem_bandwidth_Bps == pytest.approx(bw_gbps * 1e9)
    for p, v in peaks_tflops.items():
        assert acc.peak_flops[p] == pytest.approx(v * 1e12, rel=0.01)
    assert acc.tdp_w == tdp


@pytest.mark.parametrize("key, absent", [
    ("k80", ["bf16", "fp16", "fp8", "int8", "tf32"]),
    ("p100", ["bf16", "fp8", "int8", "tf32"]),
    ("v100", ["bf16", "fp8", "tf32"]),
    ("a100_sxm", ["fp8"]),
    ("mtia_v2", ["fp8"]),
])
def test_missing_precisions_are_absent(cat, key, absent):
    acc = cat[key]
    for p in absent:
        assert p not in acc.peak_flops
        with pytest.raises(ValueError, match=rf"{p}.*{key}"):
            acc.peak(p)
    assert "fp32" in acc.peak_flops  # every device has an FP32 figure to fall back on


def test_aliases_case_insensitive(cat):
    for alias, key in [("h100", "h100_sxm"), ("H100", "h100_sxm"), (" MI300X ", "mi300x"), ("mtia", "mtia_v2"),
                       ("a100", "a100_sxm"), ("V100", "v100"), ("p100", "p100"), ("K80", "k80")]:
        assert cat[alias].key == key
        assert cat.resolve(alias) == key
        assert alias in cat
    assert "h200" not in cat


def test_unknown_accelerator_lists_known(cat):
    for exc_type in (KeyError, ValueError):
        with pytest.raises(exc_type) as info:
            cat["h200"]
        msg = str(info.value)
        assert "'h200'" in msg and all(k in msg for k in EXPECTED_KEYS)
    with pytest.raises(UnknownAcceleratorError):
        cat[42]


def test_table_rows(cat):
    rows = cat.table()
    assert [r["key"] for r in rows] == list(cat)
    h100 = rows[0]
    assert h100["memory_GB"] == 80 and h100["bf16_TFLOPS"] == pytest.approx(989.4)
    assert h100["ridge_bf16_flop_per_byte"] == pytest.approx(989.4e12 / 3.35e12)
    k80 = next(r for r in rows if r["key"] == "k80")
    assert k80["bf16_TFLOPS"] is None and k80["ridge_bf16_flop_per_byte"] is None
    # integer peaks are operations, not floating-point ones: TOPS, and no *_TFLOPS key for them
    assert h100["int8_TOPS"] == pytest.approx(1978.9) and "int8_TFLOPS" not in h100
    assert k80["int8_TOPS"] is None


# ---------------------------------------------------------------- article claims

def test_article_claims_present(cat):
    h100 = dict(cat["h100"].article_claim)
    assert h100 == {"peak_tflops": 50, "cuda_cores": 18432, "fleet_gpus": 200_000, "fleet_cuda_cores": 3_600_000}
    assert dict(cat["mtia"].article_claim) == {"peak_tflops": 40, "power_vs_h100": 0.3,
                                               "memory": "32GB", "memory_type": "HBM2e"}
    assert dict(cat["mi300x"].article_claim) == {"peak_tflops": 45, "bandwidth_vs_h100": 2.0}
    assert cat["a100"].article_claim is None


def test_cuda_core_arithmetic(cat):
    """The article: 18,432 CUDA cores x 200k GPUs = 3.6 million. It is 3,686,400,000."""
    claim = cat["h100"].article_claim
    product = 18_432 * 200_000
    assert product == 3_686_400_000
    assert claim["cuda_cores"] * claim["fleet_gpus"] == product
    rows = {(r["device"], r["claim"]): r for r in cat.claims()}
    fleet = rows[("h100_sxm", "fleet_cuda_cores")]
    assert fleet["article"] == 3_600_000 and fleet["public"] == product
    assert fleet["ratio"] == pytest.approx(1024)  # off by a factor of about a thousand
    cores = rows[("h100_sxm", "cuda_cores")]
    assert cores["public"] == 132 * 128 == 16_896  # H100 SXM5: 132 SMs x 128 FP32 cores
    assert cat["h100"].facts["cuda_cores_full_die"] == 144 * 128 == 18_432


def test_claim_rows_compare_to_public(cat):
    rows = {(r["device"], r["claim"]): r for r in cat.claims()}
    assert rows[("h100_sxm", "peak_tflops")]["ratio"] == pytest.approx(989.4 / 50)
    assert rows[("mi300x", "peak_tflops")]["ratio"] == pytest.approx(1307.4 / 45)
    assert rows[("mtia_v2", "peak_tflops")]["public"] == pytest.approx(177)
    assert rows[("mi300x", "bandwidth_vs_h100")]["public"] == pytest.approx(5.3 / 3.35)
    assert rows[("mtia_v2", "power_vs_h100")]["public"] == pytest.approx(90 / 700)
    assert rows[("mtia_v2", "memory")]["article"] == 32 and rows[("mtia_v2", "memory")]["public"] == 128
    assert rows[("mtia_v2", "memory_type")]["public"] == "LPDDR5"
    assert ("h100_sxm", "fleet_gpus") not in rows  # an input, not a claim
    # every TFLOPS comparison names its precision (dense BF16); the other rows have none
    assert {r["precision"] for r in rows.values() if r["claim"] == "peak_tflops"} == {"bf16"}
    assert all(r["precision"] is None for r in rows.values() if r["claim"] != "peak_tflops")


# ---------------------------------------------------------------- roofline

def test_compute_bound_by_hand(cat):
    # One second of H100 dense BF16 work, moving only 3.35 GB (1 ms at 3.35 TB/s).
    c = request_cost("h100", 989.4e12, 3.35e9)
    assert c.bound == "compute"
    assert c.time_s == pytest.approx(1.0)
    assert c.energy_j == pytest.approx(700.0)  # TDP x time
    half = request_cost(cat["h100"], 989.4e12, 3.35e9, efficiency=0.5)
    assert half.time_s == pytest.approx(2.0) and half.energy_j == pytest.approx(1400.0)


def test_memory_bound_by_hand():
    # 3.35 TB through H100 memory is one second; 1 GFLOP is a microsecond.
    c = request_cost("h100", 1e9, 3.35e12)
    assert c.bound == "memory" and c.time_s == pytest.approx(1.0)
    # efficiency scales compute only: still one second
    assert request_cost("h100", 1e9, 3.35e12, efficiency=0.1).time_s == pytest.approx(1.0)
    # MTIA v2 streams 204.8 GB in one second at 90 W
    m = request_cost("mtia", 1e9, 204.8e9)
    assert m.bound == "memory" and m.time_s == pytest.approx(1.0) and m.energy_j == pytest.approx(90.0)
    assert request_cost("mtia", 1e9, 204.8e9, power_w=45).energy_j == pytest.approx(45.0)


def test_ridge_point_and_tie(cat):
    h = cat["h100"]
    assert h.ridge_point() == pytest.approx(295.3, rel=1e-3)  # 989.4 TFLOPS / 3.35 TB/s
    tie = request_cost(h, 8 * 3.35e9 * 2, 8 * 3.35e9 * 2 * 3.35e12 / 989.4e12)
    assert tie.bound == "compute"
    assert request_cost(h, 0, 0).time_s == 0.0


def test_vectorized_matches_scalar():
    rng = np.random.default_rng(1)
    flops = rng.uniform(0, 1e15, 50)
    nbytes = rng.uniform(0, 1e12, 50)
    vec = request_cost("mi300x", flops, nbytes, precision="fp8", efficiency=0.7)
    for i in range(50):
        one = request_cost("mi300x", flops[i], nbytes[i], precision="fp8", efficiency=0.7)
        assert vec.time_s[i] == one.time_s and vec.bound[i] == one.bound and vec.energy_j[i] == one.energy_j
        expected = max(flops[i] / (2614.9e12 * 0.7), nbytes[i] / 5.3e12)
        assert one.time_s == pytest.approx(expected, rel=1e-12)


def test_cost_matrix_matches_request_cost(cat):
    flops = np.array([989.4e12, 1e9, 0.0])
    nbytes = np.array([3.35e9, 3.35e12, 1e6])
    keys = ["h100", "mi300x", "mtia"]
    m = cost_matrix(keys, flops, nbytes, efficiency={"mtia": 0.5})
    assert m.device_keys == ("h100_sxm", "mi300x", "mtia_v2")
    assert m.time_s.shape == m.energy_j.shape == m.compute_bound.shape == (3, 3)
    for j, key in enumerate(keys):
        eff = 0.5 if key == "mtia" else 1.0
        col = request_cost(key, flops, nbytes, efficiency=eff)
        np.testing.assert_allclose(m.time_s[:, j], col.time_s, rtol=1e-12)
        np.testing.assert_allclose(m.energy_j[:, j], col.energy_j, rtol=1e-12)
        assert list(m.compute_bound[:, j]) == [b == "compute" for b in col.bound]
    assert m.time_s[0, 0] == pytest.approx(1.0) and m.time_s[1, 0] == pytest.approx(1.0)


def test_cost_matrix_missing_precision(cat):
    with pytest.raises(ValueError, match=r"'bf16'.*v100"):
        cost_matrix(cat, [1e12], [1e9])
    m = cost_matrix(cat, [1e12, 0], [1e9, 0], missing="inf")
    cols = {k: j for j, k in enumerate(m.device_keys)}
    for key in ("v100", "p100", "k80"):
        assert np.isinf(m.time_s[:, cols[key]]).all() and not m.compute_bound[:, cols[key]].any()
    assert np.isfinite(m.time_s[:, cols["h100_sxm"]]).all()
    fp32 = cost_matrix(cat, [8.73e12], [0], precision="fp32")
    assert fp32.time_s[0, cols["k80"]] == pytest.approx(1.0)  # every device has FP32: nothing missing
    assert np.isfinite(fp32.time_s).all()


# ---------------------------------------------------------------- bad inputs

@pytest.mark.parametrize("kwargs, match", [
    ({"flops": -1.0}, "flops must be finite and >= 0"),
    ({"flops": float("nan")}, "flops"),
    ({"bytes_moved": float("inf")}, "bytes_moved"),
    ({"bytes_moved": [1.0, -2.0]}, r"bytes_moved.*index \(1,\)"),
    ({"precision": "bf17"}, "unknown precision 'bf17'.*fp32, tf32, fp16, bf16, fp8, int8"),
    ({"efficiency": 0.0}, r"efficiency must be a number in \(0, 1\]"),
    ({"efficiency": 1.5}, "efficiency"),
    ({"efficiency": True}, "efficiency"),
    ({"power_w": -5.0}, "power_w"),
    ({"device": "h200"}, "unknown accelerator 'h200'"),
    ({"device": "k80"}, r"precision 'bf16' is not available on k80.*it has: fp32"),
])
def test_request_cost_rejects(kwargs, match):
    args = {"device": "h100", "flops": 1e12, "bytes_moved": 1e9, **kwargs}
    with pytest.raises(ValueError, match=match):
        request_cost(**args)


def test_request_cost_rejects_non_numbers():
    with pytest.raises(TypeError, match="flops"):
        request_cost("h100", "lots", 1)


def test_cost_matrix_rejects(cat):
    with pytest.raises(ValueError, match="missing must be"):
        cost_matrix(cat, [1], [1], missing="zero")
    with pytest.raises(ValueError, match="empty"):
        cost_matrix([], [1], [1])
    with pytest.raises(TypeError, match="devices"):
        cost_matrix("h100", [1], [1])
    with pytest.raises(ValueError, match="1-D"):
        cost_matrix(cat, [[1]], [[1]], precision="fp32")
    with pytest.raises(ValueError, match=r"efficiency\['mtia'\]"):
        cost_matrix(["mtia"], [1], [1], efficiency={"mtia": 2})
    with pytest.raises(ValueError, match="unknown accelerator"):
        cost_matrix(["mtia"], [1], [1], efficiency={"tpu": 0.5})
    with pytest.raises(ValueError, match="broadcast|shape"):
        cost_matrix(["h100"], [1, 2, 3], [1, 2])


GOOD_DEVICE = """
  dev:
    name: Test device
    vendor: Test
    memory: 8GB
    memory_type: HBM
    mem_bandwidth: 1TB/s
    peak_tflops: {fp32: 1, tf32: null, fp16: 2, bf16: 2, fp8: null, int8: null}
    tdp: 100
    interconnect: pcie_4
    sources: {memory: r, mem_bandwidth: r, peak_tflops: r, tdp: r, interconnect: r}
"""


def _write(tmp_path, body: str):
    p = tmp_path / "hw.yaml"
    p.write_text("references:\n  r: Test, https://example.org\naccelerators:" + body)
    return p


def test_load_custom_catalog(tmp_path, monkeypatch):
    cat = load_catalog(_write(tmp_path, GOOD_DEVICE))
    assert list(cat) == ["dev"] and cat["DEV"].memory_bytes == 8 * 10**9
    monkeypatch.setenv("MAGNUM_HARDWARE_YAML", str(_write(tmp_path, GOOD_DEVICE)))
    assert list(default_catalog()) == ["dev"]
    assert list(load_catalog()) == ["dev"]


@pytest.mark.parametrize("old, new, match", [
    ("memory: 8GB", "memory: 8XB", r"accelerators\.dev\.memory: cannot parse size '8XB'"),
    ("mem_bandwidth: 1TB/s", "mem_bandwidth: fast", r"accelerators\.dev\.mem_bandwidth"),
    ("interconnect: pcie_4", "interconnect: pcie_9", r"accelerators\.dev\.interconnect"),
    ("tdp: 100", "tdp: -1", r"dev\.tdp"),
    ("fp16: 2,", "fp16: -2,", r"peak_tflops\.fp16"),
    ("fp8: null, ", "", r"peak_tflops: give every precision"),
    ("    vendor: Test\n", "", r"missing fields \['vendor'\]"),
    ("    tdp: 100\n", "    tdp: 100\n    colour: red\n", r"unknown fields \['colour'\]"),
    ("tdp: r,", "tdp: nowhere,", r"sources\.tdp: every figure needs a source"),
])
def test_load_catalog_rejects(tmp_path, old, new, match):
    assert old in GOOD_DEVICE
    with pytest.raises(ValueError, match=match):
        load_catalog(_write(tmp_path, GOOD_DEVICE.replace(old, new)))


def test_load_catalog_rejects_alias_clash_and_missing_file(tmp_path):
    two = GOOD_DEVICE.replace("    vendor: Test\n", "    vendor: Test\n    aliases: [x]\n")
    two += two.replace("  dev:", "  dev2:")
    with pytest.raises(ValueError, match="'x' is used by both dev and dev2"):
        load_catalog(_write(tmp_path, two))
    with pytest.raises(FileNotFoundError, match="MAGNUM_HARDWARE_YAML"):
        load_catalog(tmp_path / "absent.yaml")
    (tmp_path / "list.yaml").write_text("- 1\n")
    with pytest.raises(ValueError, match="references"):
        load_catalog(tmp_path / "list.yaml")


def test_precisions_constant():
    assert PRECISIONS == ("fp32", "tf32", "fp16", "bf16", "fp8", "int8")
