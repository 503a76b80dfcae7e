"""``faux-magnum reserve``, ``pack`` and ``hetero``: JSON output, exit codes, one line per problem."""
from __future__ import annotations

import json

import pytest
import yaml

from magnum_lib.cli import main
from tests.test_graph_manifest import GOOD


def run(capsys, argv):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_reserve_json(capsys, repo_root):
    code, out, err = run(capsys, ["reserve", str(repo_root / "src/magnum_lib/data/manifests/recsys_ours.yaml"),
                                  "--json"])
    assert code == 0 and err == ""
    d = json.loads(out)
    assert {"job_id", "device", "peak_memory_bytes", "makespan_s", "layers", "notes", "link"} <= set(d)
    assert d["job_id"] == "recsys-inference-7" and d["device"] == "mtia_v2" and d["notes"] == []
    assert d["peak_memory_bytes"] == 8_500_000_000 and d["makespan_s"] == pytest.approx(0.0026)
    assert [(x["start_s"], x["end_s"]) for x in d["layers"]] == [(0.0, 0.0008), (0.0008, 0.002), (0.002, 0.0026)]


def test_reserve_article_by_short_name_with_its_notes(capsys):
    """The README's `faux-magnum reserve article --device mtia_v2`: the article's manifest
    (C37), whose 40 and 60 GB/s exceed MTIA v2's PCIe 5 x8 link; the notes say so."""
    code, out, err = run(capsys, ["reserve", "article", "--device", "mtia_v2"])
    assert code == 0 and err == ""
    assert "job llama3-70b-infer on mtia_v2" in out and "attention_qkv" in out and "ffn_1" in out
    notes = [line for line in out.splitlines() if line.startswith("note: ")]
    assert len(notes) == 2 and all("link-bound" in n and "pcie_5_x8" in n for n in notes)
    code, out, _ = run(capsys, ["reserve", "article.yaml", "--json"])
    d = json.loads(out)
    assert code == 0 and d["job_id"] == "llama3-70b-infer" and len(d["notes"]) == 2 and d["link"] == "pcie_5_x8"
    code, out, _ = run(capsys, ["reserve", "article", "--device", "h100", "--json"])
    assert code == 0 and json.loads(out)["notes"] == []


def test_reserve_list_and_unknown_name(capsys):
    from magnum_lib.graph.manifest import shipped_manifests

    code, out, err = run(capsys, ["reserve", "--list"])
    rows = [line.split() for line in out.splitlines()]
    assert code == 0 and err == "" and {r[0] for r in rows} == set(shipped_manifests()) >= {"article", "recsys_ours"}
    assert all(r[1].endswith(f"{r[0]}.yaml") for r in rows)
    code, out, _ = run(capsys, ["reserve", "--list", "--json"])
    assert json.loads(out)["article"].endswith("manifests/article.yaml")
    code, out, err = run(capsys, ["reserve", "no_such_manifest"])
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "not a shipped manifest" in err or "nor a shipped manifest" in err
    code, out, err = run(capsys, ["reserve"])
    assert code == 2 and len(err.splitlines()) == 1 and "--list" in err
    code, out, err = run(capsys, ["reserve", "--list", "article"])
    assert code == 2 and len(err.splitlines()) == 1


def test_lease_teaches_nvlink_3_on_an_h100(capsys):
    """C16, the article's command: the lease succeeds (NVLink 4 meets NVLink 3), with a note."""
    argv = ["lease", "--job-id=reels_infer_v4", "--gpu-type=h100", "--count=8", "--memory=80GB",
            "--interconnect=nvlink_3", "--lease_timeout=100ms"]
    code, out, err = run(capsys, argv)
    assert code == 0 and err == "" and out.startswith("lease_id")
    note = [line for line in out.splitlines() if line.startswith("note")]
    assert len(note) == 1 and "h100_sxm has nvlink_4" in note[0] and "not nvlink_3" in note[0]
    code, out, _ = run(capsys, argv + ["--json"])
    d = json.loads(out)
    assert code == 0 and d["interconnect"] == "nvlink_3" and len(d["notes"]) == 1  # the minimum asked
    code, out, _ = run(capsys, [a.replace("nvlink_3", "nvlink_4") for a in argv] + ["--json"])
    assert code == 0 and json.loads(out)["notes"] == []


def test_reserve_text_and_device_override(capsys):
    code, out, _ = run(capsys, ["reserve", "recsys_ours", "--device", "h100"])
    assert code == 0 and "on h100_sxm" in out and "attention" in out


def test_reserve_invalid_one_line_per_problem(capsys, tmp_path):
    doc = yaml.safe_load(yaml.safe_dump(GOOD))
    doc["job"]["graph"][1]["runtime"] = "-800us"
    doc["job"]["gpu_type"] = "tpu"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    code, out, err = run(capsys, ["reserve", str(path)])
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 2
    assert lines[0].startswith("job.gpu_type: unknown device type 'tpu'")
    assert lines[1] == "job.graph[1].runtime: -800us is negative"


def test_reserve_bad_device_flag_and_yaml(capsys, repo_root, tmp_path):
    code, _, err = run(capsys, ["reserve", "article", "--device", "tpu"])
    assert code == 2 and err.startswith("--device: unknown device type 'tpu'") and len(err.splitlines()) == 1
    path = tmp_path / "broken.yaml"
    path.write_text("job:\n\tid: x\n")
    code, _, err = run(capsys, ["reserve", str(path)])
    assert code == 2 and len(err.splitlines()) == 1
    assert err.startswith(f"{path}: line 2, column 1: YAML does not parse: ") and "cannot start any token" in err


def test_pack_json(capsys):
    code, out, err = run(capsys, ["pack", "--jobs", "40", "--device", "mtia_v2", "--seed", "3", "--json"])
    assert code == 0 and err == ""
    d = json.loads(out)
    assert {"utilization", "makespan_s", "p99_latency_s", "utilization_exclusive"} <= set(d)
    assert d["jobs"] == 40 and 0 < d["utilization_exclusive"] <= 1 and 0 < d["utilization"] <= 1
    code, again, _ = run(capsys, ["pack", "--jobs", "40", "--seed", "3", "--json"])
    strip = lambda s: {k: v for k, v in json.loads(s).items() if k != "backend"}  # noqa: E731
    assert strip(again) == strip(out)


@pytest.mark.parametrize("argv, flag", [(["--jobs", "0"], "--jobs"), (["--jobs", "x"], "--jobs"),
                                        (["--jobs", "3", "--device", "tpu"], "--device"),
                                        (["--jobs", "3", "--memory-pressure", "2"], "--memory-pressure"),
                                        (["--jobs", "3", "--window", "0"], "--window")])
def test_pack_bad_flags(capsys, argv, flag):
    code, out, err = run(capsys, ["pack", *argv])
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and f"error: {flag} " in err


def test_pack_text(capsys):
    code, out, _ = run(capsys, ["pack", "--jobs", "10", "--load", "0.8"])
    assert code == 0 and all(p in out for p in ("packed", "exclusive", "dynamic"))


def test_hetero_gavel_json(capsys, shared_data):
    path = shared_data / "gavel" / "simulation_throughputs.json"
    code, out, err = run(capsys, ["hetero", "--trace", "gavel", "--trace-file", str(path),
                                  "--cluster", "v100:16,p100:16,k80:16", "--json"])
    assert code == 0 and err == ""
    d = json.loads(out)
    assert d["cluster"] == {"v100": 16, "p100": 16, "k80": 16} and d["jobs"] == 64
    assert d["speedup"] == pytest.approx(d["throughput_aware"] / d["throughput_blind"]) and d["speedup"] > 1


def test_hetero_roofline_and_maxmin(capsys):
    code, out, _ = run(capsys, ["hetero", "--trace", "roofline", "--objective", "maxmin", "--jobs", "20", "--json"])
    d = json.loads(out)
    assert code == 0 and d["objective"] == "maxmin" and d["throughput_blind"] == 1.0 and d["speedup"] >= 1 - 1e-9
    code, out, _ = run(capsys, ["hetero", "--trace", "roofline", "--jobs", "5"])
    assert code == 0 and "speed-up" in out


def test_hetero_missing_trace_and_bad_cluster(capsys, tmp_path):
    # A --trace-file the user names is bad input when absent (exit 2); so is the shared data missing.
    code, out, err = run(capsys, ["hetero", "--trace-file", str(tmp_path / "absent.json")])
    assert code == 2 and out == "" and err.strip() == f"faux-magnum hetero: error: --trace-file no such file: " \
                                                      f"'{tmp_path / 'absent.json'}'"
    code, _, err = run(capsys, ["hetero", "--cluster", "h100:4"])
    assert code == 2 and "--cluster Gavel measured only k80, p100, v100" in err
    code, _, err = run(capsys, ["hetero", "--trace", "roofline", "--cluster", "h100:x"])
    assert code == 2 and "--cluster count of 'h100'" in err
