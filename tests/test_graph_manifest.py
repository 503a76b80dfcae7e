"""Graph manifests: the article's format, every malformed case with its exact path, reservation."""
from __future__ import annotations

import copy
import re

import numpy as np
import pytest
import yaml

from magnum_lib._resources import data_path
from magnum_lib.graph.manifest import (
    Layer,
    Manifest,
    ManifestError,
    load_manifest,
    parse_manifest,
    shipped_manifests,
    validate_manifest,
)
from magnum_lib.graph.reserve import reserve, transfer_ns
from magnum_lib.hardware import default_catalog
from tests.conftest import SHARED_DATA

GOOD = {"job": {
    "id": "recsys-7", "gpu_type": "mtia_v2",
    "graph": [
        {"layer": "embed", "runtime": "800us", "memory": "2.1GB", "interconnect": "nvlink_3"},
        {"layer": "attn", "runtime": "1.2ms", "memory": "4.8GB", "interconnect": "nvlink_3"},
        {"layer": "mlp", "runtime": "600us", "memory": "1.6GB", "interconnect": "nvlink_3"},
    ],
    "pre_reserve": True}}


def doc_with(path: str, value, delete: bool = False) -> dict:
    """GOOD with the value at a dotted path (``job.graph.1.runtime``) replaced or deleted."""
    doc = copy.deepcopy(GOOD)
    *parents, last = path.split(".")
    node = doc
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if isinstance(node, list):
        last = int(last)
    if delete:
        del node[last]
    else:
        node[last] = value
    return doc


def problems(doc, **kw) -> list[str]:
    with pytest.raises(ManifestError) as info:
        parse_manifest(doc, **kw)
    assert str(info.value) == "\n".join(info.value.problems)
    return info.value.problems


def _claims_block(claim: str) -> str | None:
    """The YAML block printed under ``claim`` in ARTICLE_CLAIMS.md, list indentation removed."""
    path = SHARED_DATA.parent / "ARTICLE_CLAIMS.md"
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    m = re.search(r"\n( *)```yaml\n(.*?)\n\1```", text[text.index(f"- {claim}."):], re.S)
    indent = m.group(1)
    return "\n".join(line[len(indent):] if line.startswith(indent) else line
                     for line in m.group(2).split("\n")) + "\n"


def test_article_manifest_is_the_article_byte_for_byte():
    shipped = data_path("manifests", "article.yaml").read_bytes()
    block = _claims_block("C37")
    if block is None:
        pytest.skip("ARTICLE_CLAIMS.md not found beside the shared data")
    assert shipped == block.encode("utf-8")
    assert b"    id: llama3-70b-infer\n" in shipped and b"pre_reserve: true # Critical for MTIA\n" in shipped


def test_article_manifest_file():
    m = load_manifest("article")  # short name of the shipped file
    assert m == load_manifest(data_path("manifests", "article.yaml")) == load_manifest("article.yaml")
    assert m.job_id == "llama3-70b-infer" and m.gpu_type == "mtia_v2" and m.pre_reserve
    assert [layer.name for layer in m.layers] == ["attention_qkv", "ffn_1"]
    assert [layer.runtime_ns for layer in m.layers] == [420_000, 800_000]
    assert [layer.memory_bytes for layer in m.layers] == [2_100_000_000, 1_800_000_000]
    assert [layer.bandwidth_Bps for layer in m.layers] == [40e9, 60e9]  # a bandwidth demand, not a link class
    assert {layer.interconnect for layer in m.layers} == {None}
    assert m.peak_memory_bytes == 3_900_000_000  # static allocation: the sum


def test_our_example_is_labelled_ours():
    ours = load_manifest("recsys_ours")
    assert ours.job_id == "recsys-inference-7" and {layer.interconnect for layer in ours.layers} == {"pcie_5_x8"}
    for name, path in shipped_manifests().items():
        if name != "article":
            assert path.read_text(encoding="utf-8").startswith("# OURS, not the article's"), name


def test_shipped_examples():
    dyn = load_manifest(data_path("manifests", "dynamic_h100.yaml"))
    assert dyn.gpu_type == "h100_sxm" and not dyn.pre_reserve
    assert dyn.peak_memory_bytes == 18 * 10**9  # dynamic: the largest layer
    assert dyn.layers[0].transfer_bytes == 256 * 10**6 and dyn.layers[2].interconnect is None
    with pytest.raises(ManifestError) as info:
        load_manifest("invalid")
    paths = [p.split(":")[0] for p in info.value.problems]
    assert paths == ["job.gpu_type", "job.pre_reserve", "job.graph[0].memory", "job.graph[1].interconect",
                     "job.graph[1].runtime", "job.graph[2].layer", "job.graph[2].runtime"]


def test_good_document_and_text_agree():
    m = parse_manifest(GOOD)
    assert isinstance(m, Manifest) and m == parse_manifest(yaml.safe_dump(GOOD))
    assert validate_manifest(GOOD) == []
    assert m.compute_ns == 2_600_000
    assert m.to_dict()["layers"][0] == Layer("embed", 800_000, 2_100_000_000, "nvlink_3").to_dict()
    assert parse_manifest(doc_with("job.graph.0.interconnect", "400Gbps")).layers[0].bandwidth_Bps == 50e9


@pytest.mark.parametrize("name", ["mtia-v2", "MTIA", "mtia2", " mtia_v2 "])
def test_device_aliases(name):
    assert parse_manifest(doc_with("job.gpu_type", name)).gpu_type == "mtia_v2"


@pytest.mark.parametrize("path, value, expected", [
    ("job.graph.1.runtime", "-800us", "job.graph[1].runtime: -800us is negative"),
    ("job.graph.0.runtime", -3, "job.graph[0].runtime: -3 is negative"),
    ("job.graph.2.memory", "-1GB", "job.graph[2].memory: -1GB is negative"),
    ("job.graph.0.runtime", "0ms", "job.graph[0].runtime: 0ms is zero"),
    ("job.graph.1.memory", "0GB", "job.graph[1].memory: 0GB is zero"),
    ("job.graph.0.runtime", "800 parsecs", "job.graph[0].runtime: cannot parse duration '800 parsecs'"),
    ("job.graph.0.runtime", "800", "job.graph[0].runtime: cannot parse duration '800' (a unit is required)"),
    ("job.graph.0.runtime", 800, "job.graph[0].runtime: 800 has no unit"),
    ("job.graph.0.runtime", [1], "job.graph[0].runtime: expected a string such as '800us', got list"),
    ("job.graph.1.memory", "2.1 GiGa", "job.graph[1].memory: cannot parse size '2.1 GiGa'"),
    ("job.graph.1.memory", True, "job.graph[1].memory: expected a string such as '2.1GB', got bool"),
    ("job.graph.2.interconnect", "warp_drive", "job.graph[2].interconnect: cannot parse interconnect 'warp_drive'"),
    ("job.graph.2.interconnect", "40 parsecs/s", "job.graph[2].interconnect: cannot parse bandwidth '40 parsecs/s'"),
    ("job.graph.2.interconnect", "-40GB/s", "job.graph[2].interconnect: -40GB/s is negative"),
    ("job.graph.2.interconnect", "0GB/s", "job.graph[2].interconnect: 0GB/s is zero"),
    ("job.graph.2.interconnect", "1e9TB/s", "job.graph[2].interconnect: 1e9TB/s is above 100 TB/s"),
    ("job.graph.2.interconnect", 40, "job.graph[2].interconnect: expected a link class such as 'nvlink_4'"),
    ("job.graph.0.transfer", "-5MB", "job.graph[0].transfer: -5MB is negative"),
    ("job.graph.0.transfer", "5 furlongs", "job.graph[0].transfer: cannot parse size '5 furlongs'"),
    ("job.graph.1.layer", "embed", "job.graph[1].layer: duplicate name 'embed' (also job.graph[0])"),
    ("job.graph.1.layer", "", "job.graph[1].layer: expected a non-empty name"),
    ("job.graph.1.layer", 7, "job.graph[1].layer: expected a non-empty name, got int 7"),
    ("job.graph.1", "attn", "job.graph[1]: expected a mapping with keys layer, runtime, memory, interconnect"),
    ("job.graph.0.runtme", "1ms", "job.graph[0].runtme: unknown key; accepted: layer, runtime, memory"),
    ("job.gpu_type", "tpu_v9", "job.gpu_type: unknown device type 'tpu_v9'; known: h100_sxm"),
    ("job.gpu_type", 100, "job.gpu_type: expected a device name such as 'mtia_v2', got int 100"),
    ("job.graph", [], "job.graph: expected a non-empty list of layers, got list []"),
    ("job.graph", "layers", "job.graph: expected a non-empty list of layers, got str"),
    ("job.pre_reserve", "maybe", "job.pre_reserve: expected true or false, got str 'maybe'"),
    ("job.id", "  ", "job.id: expected a non-empty name"),
    ("job.id", [1], "job.id: expected a non-empty name, got list"),
    ("job.priority", 3, "job.priority: unknown key; accepted: id, gpu_type, graph, pre_reserve"),
    ("extra", 1, "extra: unknown top-level key; accepted: job"),
    ("job", [1, 2], "job: expected a mapping with keys id, gpu_type, graph, pre_reserve, got list"),
])
def test_malformed_field(path, value, expected):
    found = problems(doc_with(path, value))
    assert len(found) == 1, found
    assert found[0].startswith(expected), found


@pytest.mark.parametrize("path, expected", [
    ("job.id", "job.id: missing (required)"),
    ("job.gpu_type", "job.gpu_type: missing (required)"),
    ("job.graph", "job.graph: missing (required)"),
    ("job.graph.1.layer", "job.graph[1].layer: missing (required)"),
    ("job.graph.1.runtime", "job.graph[1].runtime: missing (required)"),
    ("job.graph.2.memory", "job.graph[2].memory: missing (required)"),
    ("job", "job: missing; a manifest is a mapping with one key `job`"),
])
def test_missing_field(path, expected):
    found = problems(doc_with(path, None, delete=True))
    assert found == [expected] or (len(found) == 1 and found[0].startswith(expected)), found


def test_optional_fields_have_documented_defaults():
    doc = doc_with("job.pre_reserve", None, delete=True)
    del doc["job"]["graph"][0]["interconnect"]
    doc["job"]["graph"][1]["interconnect"] = "none"
    m = parse_manifest(doc)
    assert m.pre_reserve is True
    assert m.layers[0].interconnect is None and m.layers[1].interconnect is None
    assert m.layers[0].transfer_bytes == 0


def test_transfer_needs_an_interconnect():
    doc = doc_with("job.graph.0.transfer", "64MB")
    del doc["job"]["graph"][0]["interconnect"]
    assert problems(doc) == ["job.graph[0].transfer: a transfer needs an interconnect to cross; add one"]


def test_every_problem_is_collected():
    doc = doc_with("job.graph.1.runtime", "-800us")
    doc["job"]["gpu_type"] = "tpu"
    doc["job"]["graph"][2]["memory"] = "lots"
    del doc["job"]["graph"][0]["layer"]
    found = problems(doc)
    assert [p.split(":")[0] for p in found] == ["job.gpu_type", "job.graph[0].layer", "job.graph[1].runtime",
                                                "job.graph[2].memory"]


@pytest.mark.parametrize("doc, kind", [([1, 2], "list"), ("just text", "str"), (None, "null"), ({"jobs": {}}, "dict")])
def test_not_a_manifest(doc, kind):
    found = problems(doc if not isinstance(doc, str) else yaml.safe_dump(doc))
    assert len(found) == 1 and found[0].startswith("job: missing;") and kind in found[0]


def test_peak_memory_against_device():
    capacity = default_catalog()["mtia_v2"].memory_bytes  # 128 GB
    doc = copy.deepcopy(GOOD)
    doc["job"]["graph"][0]["memory"] = f"{capacity * 0.6:.0f}"
    doc["job"]["graph"][1]["memory"] = f"{capacity * 0.6:.0f}"
    # Static: the sum (1.2x + 1.6 GB) does not fit; dynamic: the largest layer (0.6x) does.
    found = problems(doc)
    assert len(found) == 1 and found[0].startswith("job.graph: peak memory 155.2 GB (sum of 3 layers, "
                                                   "pre_reserve) exceeds mtia_v2 memory 128 GB")
    doc["job"]["pre_reserve"] = False
    assert parse_manifest(doc).peak_memory_bytes == int(capacity * 0.6)


def test_device_override_checks_its_memory():
    doc = doc_with("job.graph.1.memory", "14GB")  # 17.7 GB in all: fits mtia_v2, not a 16 GB V100
    assert parse_manifest(doc).gpu_type == "mtia_v2"
    assert parse_manifest(doc, device="h100").gpu_type == "h100_sxm"
    found = problems(doc, device="v100")
    assert len(found) == 1 and found[0].startswith("job.graph: peak memory 17.7 GB") and "v100 memory 16 GB" in found[0]
    assert problems(doc, device="tpu")[0].startswith("device: unknown device type 'tpu'")


@pytest.mark.parametrize("text, where", [
    ("job:\n\tid: x\n", "line 2, column 1"),
    ("job: {id: 1\n", "line 2, column 1"),
    ("job:\n  id: x\n  graph: [a, b\n", "line 4, column 1"),
])
def test_yaml_that_does_not_parse(text, where):
    found = problems(text, source="m.yaml")
    assert len(found) == 1 and found[0].startswith(f"m.yaml: {where}: YAML does not parse: ")


def test_unreadable_file(tmp_path):
    with pytest.raises(ManifestError, match="cannot read"):
        load_manifest(tmp_path / "absent.yaml")


# --------------------------------------------------------------------------- reservation

def test_reservation_timeline_static():
    m = parse_manifest(GOOD)
    r = reserve(m)
    runtimes = [800_000, 1_200_000, 600_000]
    assert r.start_ns.tolist() == [0, 800_000, 2_000_000]
    assert (r.end_ns - r.start_ns).tolist() == runtimes
    assert r.makespan_ns == sum(runtimes) and r.makespan_s == pytest.approx(0.0026)
    assert r.peak_memory_bytes == 8_500_000_000 and r.memory_bytes.tolist() == [8_500_000_000]
    d = r.to_dict()
    assert d["layers"][1] == {"layer": "attn", "start_s": 0.0008, "end_s": 0.002, "declared_runtime_s": 0.0012,
                              "link_bound": False}


def test_reservation_timeline_dynamic_with_transfer():
    doc = doc_with("job.pre_reserve", False)
    doc["job"]["gpu_type"] = "a100"  # a device that has the nvlink_3 the layers ask for
    doc["job"]["graph"][0]["transfer"] = "30MB"  # nvlink_3 is 300 GB/s one way: 100 us
    r = reserve(parse_manifest(doc))
    assert r.start_ns.tolist() == [0, 900_000, 2_100_000] and r.notes == ()
    assert r.makespan_ns == 2_700_000
    assert r.memory_t_ns.tolist() == r.start_ns.tolist()
    assert r.memory_bytes.tolist() == [2_100_000_000, 4_800_000_000, 1_600_000_000]
    assert r.peak_memory_bytes == 4_800_000_000


def test_nvlink_3_is_taught_not_silently_accepted():
    """The article's nvlink_3: an H100 has NVLink 4, an MTIA no NVLink (PCIe 5 x8)."""
    doc = doc_with("job.graph.0.transfer", "30MB")
    catalog = default_catalog()
    for device, link in (("h100", "nvlink_4"), ("mtia_v2", "pcie_5_x8")):
        r = reserve(parse_manifest(doc), device=device)
        have = catalog[device].interconnect
        assert have.name == link and r.link == link
        assert len(r.notes) == 1 and r.notes[0].startswith("job.graph[0, 1, 2]: ") and "nvlink_3" in r.notes[0]
        assert ("has no NVLink" in r.notes[0]) == (device == "mtia_v2")
        # the transfer is timed on the link the device has, not on the one asked for
        assert r.start_ns[1] - r.end_ns[0] == int(np.ceil(30e6 / have.per_direction_Bps * 1e9))
        assert r.to_dict()["notes"] == list(r.notes)


def test_bandwidth_demand_checked_against_the_device_link():
    """The article's own manifest on its own device: 40 and 60 GB/s over MTIA v2's
    PCIe 5 x8 (31.5 GB/s one way) make both layers link-bound; on an H100 (NVLink 4,
    450 GB/s) they run as written."""
    m = load_manifest("article")
    link = default_catalog()["mtia_v2"].interconnect.per_direction_Bps
    r = reserve(m)
    expect = [int(np.ceil(t * bw / link)) for t, bw in ((420_000, 40e9), (800_000, 60e9))]
    assert (r.end_ns - r.start_ns).tolist() == expect and r.declared_runtime_ns.tolist() == [420_000, 800_000]
    assert r.makespan_ns == sum(expect) and len(r.notes) == 2
    assert "attention_qkv streams 40 GB/s" in r.notes[0] and "link-bound" in r.notes[0]
    assert [x["link_bound"] for x in r.to_dict()["layers"]] == [True, True]
    h = reserve(m, device="h100")
    assert h.notes == () and h.makespan_ns == 1_220_000
    # exactly at the link's rate: not link-bound
    at = parse_manifest(doc_with("job.graph.0.interconnect", f"{link:.0f}B/s"))
    assert reserve(at).end_ns[0] == 800_000


def test_transfer_with_a_bandwidth_interconnect_is_refused():
    doc = doc_with("job.graph.0.interconnect", "40GB/s")
    doc["job"]["graph"][0]["transfer"] = "1MB"
    assert problems(doc)[0].startswith("job.graph[0].transfer: a transfer crosses a link class")


def test_reservation_device_too_small_and_bad_input():
    m = parse_manifest(doc_with("job.graph.1.memory", "14GB"))
    with pytest.raises(ValueError, match="device: v100"):
        reserve(m, device="v100")
    with pytest.raises(TypeError, match="Manifest"):
        reserve(GOOD)


def test_transfer_ns_closed_form():
    assert transfer_ns(450 * 10**9, "nvlink_4").tolist() == 10**9
    assert transfer_ns([0, 1], [None, "pcie_5_x8"]).tolist() == [0, int(np.ceil(1 / (63.015e9 / 2) * 1e9))]
