"""Trace loaders: the real files (when present) and hand-made malformed ones."""
import csv
import datetime as dt
import gc
import json
import sys

import numpy as np
import pytest

from magnum_lib.workload import (
    Workload,
    load_alibaba_nodes,
    load_alibaba_pods,
    load_gavel_throughputs,
    load_philly,
    trace_path,
    traces,
)
from magnum_lib.workload._csvcols import _read_columns, read_columns

PHILLY_HEADER = "timestamp,duration,num_gpus,gpu_time,cluster\n"


# ------------------------------------------------------------------ real files

def test_philly_real(shared_data):
    path = shared_data / "philly" / "philly_jobs.csv"
    p = load_philly(path)
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(f)][1:]
    rows = [r for r in rows if r]
    assert len(p) == len(rows) == 82_247  # README figure
    assert p.submit_s[0] == 0 and np.all(np.diff(p.submit_s) >= 0)
    # independent parse with datetime: the span and the earliest job agree
    stamps = sorted(dt.datetime.strptime(r[0], "%Y-%m-%d %H:%M:%S") for r in rows)
    assert p.submit_s[-1] == (stamps[-1] - stamps[0]).total_seconds()
    assert str(p.start) == stamps[0].isoformat()
    assert np.allclose(p.gpu_time_s, p.duration_s * p.num_gpus)
    assert p.num_gpus.sum() == sum(int(r[2]) for r in rows)
    # every Philly VC listed by Helios (an independent source) appears
    with open(shared_data / "helios" / "philly_vc.csv") as f:
        helios_vcs = {r["vc"] for r in csv.DictReader(f)}
    assert helios_vcs <= set(p.vc_names)
    assert set(p.vc) == set(p.vc_names)
    w = p.to_workload()
    assert len(w) == len(p) and w.duration_s.min() >= 1


def test_alibaba_real(shared_data):
    pods = load_alibaba_pods(shared_data / "alibaba" / "openb_pod_list_default.csv")
    assert len(pods) == 8152
    assert set(pods.qos_names) <= {"LS", "BE", "Burstable", "Guaranteed"}
    assert np.all((pods.gpu_milli >= 0) & (pods.gpu_milli <= 1000))
    sched = ~np.isnan(pods.scheduled_s)
    assert np.all(pods.scheduled_s[sched] >= pods.creation_s[sched])
    nodes = load_alibaba_nodes(shared_data / "alibaba" / "openb_node_list_gpu_node.csv")
    assert len(nodes) == 1213
    by_model = nodes.gpus_by_model()
    assert sum(by_model.values()) == 6212 and len(by_model) == 7  # README: 6,212 GPUs of 7 types


def test_gavel_real(shared_data):
    path = shared_data / "gavel" / "simulation_throughputs.json"
    g = load_gavel_throughputs(path)
    raw = json.load(open(path))
    assert len(g.models) == 26 and {"k80", "p100", "v100"} <= set(g.gpu_types)
    key = "('ResNet-18 (batch size 16)', 1)"
    assert g.throughput("ResNet-18 (batch size 16)", "v100") == raw["v100"][key]["null"]
    other = "('ResNet-18 (batch size 64)', 1)"
    assert g.packed[("v100", ("ResNet-18 (batch size 16)", 1), ("ResNet-18 (batch size 64)", 1))] == \
        tuple(raw["v100"][key][other])
    assert len(g.isolated) == sum(len(v) for v in raw.values())
    models, types, m = g.matrix(1, ["k80", "p100", "v100"])
    assert m.shape == (26, 3) and not np.isnan(m).any()
    with pytest.raises(KeyError, match="no throughput"):
        g.throughput("nope", "v100")


def _python_lines(fn, *args, skip=()) -> int:
    """Python lines executed (trace "line" events: every loop iteration makes at least one)
    while running ``fn(*args)``, outside the code objects in ``skip`` and the text decoder
    (which runs once per 8 KiB buffer of the file, not per row)."""
    lines = 0

    def local(frame, event, arg):
        nonlocal lines
        lines += event == "line"
        return local

    def enter(frame, event, arg):
        if frame.f_code in skip or frame.f_code.co_filename == "<frozen codecs>":
            return None
        return local

    gc.collect()  # finalizers of earlier tests' objects would run (and count) in here
    gc.disable()
    sys.settrace(enter)
    try:
        fn(*args)
    finally:
        sys.settrace(None)
        gc.enable()
    return lines


def _philly_file(tmp_path, rows: int):
    start = dt.datetime(2017, 10, 9, 7, 1, 55)
    lines = [f"{start + dt.timedelta(seconds=7 * i):%Y-%m-%d %H:%M:%S},{60 + i % 50}.0,{1 + i % 8},"
             f"{(60 + i % 50) * (1 + i % 8)}.0,vc{i % 3}\n" for i in range(rows)]
    return write(tmp_path, f"philly_{rows}.csv", PHILLY_HEADER + "".join(lines))


def test_philly_loader_is_vectorised(tmp_path):
    """What a notebook needs from the 82,247-row trace: no Python work per row besides the CSV
    reader's loop, so the Python lines load_philly runs outside that loop do not grow with the
    number of rows (a per-row timestamp parse, even a comprehension, adds one per row)."""
    small, big = _philly_file(tmp_path, 1_000), _philly_file(tmp_path, 20_000)
    assert len(load_philly(big)) == 20_000  # also imports what the loader imports lazily
    reader = {read_columns.__code__, _read_columns.__code__}  # the CSV reader and its loop
    assert _python_lines(load_philly, big, skip=reader) == _python_lines(load_philly, small, skip=reader)
    # The counter does see per-row work.
    per_row = lambda path: [np.datetime64(line[:19], "s")  # noqa: E731
                            for line in path.read_text().splitlines()[1:]]
    assert _python_lines(per_row, big) >= 20_000


# ------------------------------------------------------------------ malformed files

def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize("body,line,col,what", [
    ("2017-10-09 07:01:55,66.0,1,66.0,a\n2017-10-09 07:02:00,abc,1,66.0,a\n", 3, 2, "duration"),
    ("2017-10-09 07:01:55,66.0,1,66.0,a\n2017-10-09 07:02:00,-5,1,66.0,a\n", 3, 2, "duration"),
    ("2017-10-09 07:01:55,66.0,1,66.0,a\n\n2017-10-09 07:02:00,5,1.5,66.0,a\n", 4, 3, "num_gpus"),
    ("2017-10-09 07:01:55,66.0,0,66.0,a\n", 2, 3, "num_gpus"),
    ("2017-13-09 07:01:55,66.0,1,66.0,a\n", 2, 1, "timestamp"),
    ("2017-10-09,66.0,1,66.0,a\n", 2, 1, "timestamp"),
    ("2017-10-09 07:01:55,66.0,1,nan,a\n", 2, 4, "gpu_time"),
])
def test_philly_malformed_value(tmp_path, body, line, col, what):
    p = write(tmp_path, "philly_bad.csv", PHILLY_HEADER + body)
    with pytest.raises(ValueError, match=rf"philly_bad\.csv: line {line}, column {col} \('{what}'\)"):
        load_philly(p)


def test_philly_wrong_field_count(tmp_path):
    p = write(tmp_path, "short.csv", PHILLY_HEADER + "2017-10-09 07:01:55,66.0,1,66.0,a\n2017-10-09 07:01:55,66.0\n")
    with pytest.raises(ValueError, match=r"short\.csv: line 3: expected 5 fields"):
        load_philly(p)


def test_philly_bad_header_and_empty(tmp_path):
    with pytest.raises(ValueError, match=r"hdr\.csv: line 1: expected header"):
        load_philly(write(tmp_path, "hdr.csv", "time,duration,num_gpus,gpu_time,cluster\n"))
    with pytest.raises(ValueError, match=r"empty\.csv: line 1: file is empty"):
        load_philly(write(tmp_path, "empty.csv", ""))
    with pytest.raises(ValueError, match="no job rows"):
        load_philly(write(tmp_path, "none.csv", PHILLY_HEADER))


def test_philly_small_file_sorted(tmp_path):
    p = write(tmp_path, "ok.csv", PHILLY_HEADER
              + "2017-10-09 07:00:10,10,2,20,b\n2017-10-09 07:00:00,5,1,5,a\n\n2017-10-09 07:00:10,7,1,7,a\n")
    j = load_philly(p)
    assert list(j.submit_s) == [0, 10, 10]
    assert list(j.duration_s) == [5, 10, 7]  # stable: ties keep file order
    assert list(j.vc) == ["a", "b", "a"] and j.vc_names == ("a", "b")


def test_alibaba_malformed(tmp_path):
    head = ",".join(traces._POD_COLS) + "\n"
    good = "pod-0,12000,16384,1,1000,,LS,Running,0,100,0\n"
    p = write(tmp_path, "pods.csv", head + good + "pod-1,12000,16384,1,1500,,LS,Running,0,100,\n")
    with pytest.raises(ValueError, match=r"pods\.csv: line 3, column 5 \('gpu_milli'\)"):
        load_alibaba_pods(p)
    p = write(tmp_path, "pods2.csv", head + good + "pod-1,12000,16384,1,500,,LS,Running,x,100,\n")
    with pytest.raises(ValueError, match=r"pods2\.csv: line 3, column 9 \('creation_time'\)"):
        load_alibaba_pods(p)
    ok = load_alibaba_pods(write(tmp_path, "pods3.csv", head + good + "pod-1,1,1,0,0,,BE,Pending,5,9,\n"))
    assert np.isnan(ok.scheduled_s[1]) and ok.scheduled_s[0] == 0
    p = write(tmp_path, "nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,two,P100\n")
    with pytest.raises(ValueError, match=r"nodes\.csv: line 2, column 4 \('gpu'\)"):
        load_alibaba_nodes(p)


@pytest.mark.parametrize("data,match", [
    ({"v100": {"ResNet": {"null": 1.0}}}, r"key 'ResNet' is not"),
    ({"v100": {"('ResNet', 0)": {"null": 1.0}}}, r"key \"\('ResNet', 0\)\" is not"),
    ({"v100": {"__import__('os').system('true')": {"null": 1.0}}}, "is not"),
    ({"v100": {"('ResNet', 1)": {"null": -1.0}}}, r"\['null'\]: expected a throughput >= 0"),
    ({"v100": {"('ResNet', 1)": {"x": 1.0}}}, r"\"null\""),
    ({"v100": {"('ResNet', 1)": {"null": 1.0, "('LM', 1)": [1.0]}}}, r"expected \[self steps/s, other steps/s\]"),
    ({"v100": []}, "expected an object of jobs"),
])
def test_gavel_malformed(tmp_path, data, match):
    p = write(tmp_path, "gavel.json", json.dumps(data))
    with pytest.raises(ValueError, match=match):
        load_gavel_throughputs(p)


def test_gavel_invalid_json_line(tmp_path):
    p = write(tmp_path, "broken.json", '{\n  "v100": {\n    "(\'A\', 1)": {"null": 1.0,}\n  }\n}\n')
    with pytest.raises(ValueError, match=r"broken\.json: line 3, column \d+: invalid JSON"):
        load_gavel_throughputs(p)


# ------------------------------------------------------------------ where files are found

def test_explicit_missing_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        load_philly(tmp_path / "nope.csv")


def test_env_var_is_used(tmp_path, monkeypatch):
    (tmp_path / "philly").mkdir()
    write(tmp_path / "philly", "philly_jobs.csv", PHILLY_HEADER + "2017-10-09 07:00:00,5,1,5,a\n")
    monkeypatch.setenv("MAGNUM_SHARED_DATA", str(tmp_path))
    assert trace_path("philly/philly_jobs.csv") == tmp_path / "philly" / "philly_jobs.csv"
    assert len(load_philly()) == 1


def test_missing_with_env_names_env_file_and_source(tmp_path, monkeypatch):
    # $MAGNUM_SHARED_DATA, when set, is the one place looked in (no silent fallback)
    monkeypatch.setenv("MAGNUM_SHARED_DATA", str(tmp_path / "env"))
    with pytest.raises(FileNotFoundError) as e:
        load_gavel_throughputs()
    msg = str(e.value)
    assert "\n" not in msg and "gavel/simulation_throughputs.json" in msg
    assert f"MAGNUM_SHARED_DATA={tmp_path / 'env'}" in msg
    assert "stanford-futuredata/gavel@c4fa40097339" in msg and "faux-magnum data fetch" in msg


def test_missing_everywhere_names_places_and_source(tmp_path, monkeypatch):
    monkeypatch.delenv("MAGNUM_SHARED_DATA", raising=False)
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    monkeypatch.setattr(traces, "_CHECKOUT", tmp_path / "x" / "repo")
    with pytest.raises(FileNotFoundError) as e:
        load_gavel_throughputs()
    msg = str(e.value)
    assert "\n" not in msg
    assert str(work / "shared" / "data") in msg and "(and its parents')" in msg
    assert str(tmp_path / "x" / "shared" / "data") in msg  # beside the (fake) source checkout
    assert "stanford-futuredata/gavel" in msg and "MAGNUM_SHARED_DATA" in msg


def _fake_shared(root):
    (root / "shared" / "data" / "philly").mkdir(parents=True)
    write(root / "shared" / "data" / "philly", "philly_jobs.csv",
          PHILLY_HEADER + "2017-10-09 07:00:00,5,1,5,a\n")
    return root / "shared" / "data" / "philly" / "philly_jobs.csv"


def test_found_beside_an_ancestor_of_the_current_directory(tmp_path, monkeypatch):
    # an installed wheel run from anywhere inside a checkout's parent finds ../shared/data
    monkeypatch.delenv("MAGNUM_SHARED_DATA", raising=False)
    monkeypatch.setattr(traces, "_CHECKOUT", None)
    expected = _fake_shared(tmp_path)
    deep = tmp_path / "checkout" / "notebooks" / "x"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    assert trace_path("philly/philly_jobs.csv") == expected
    assert len(load_philly()) == 1
    (tmp_path / "shared" / "data" / "MANIFEST.tsv").write_text("file\n")
    assert traces.shared_data_dir() == tmp_path / "shared" / "data"


def test_found_beside_the_source_checkout_last(tmp_path, monkeypatch):
    monkeypatch.delenv("MAGNUM_SHARED_DATA", raising=False)
    expected = _fake_shared(tmp_path)
    elsewhere = tmp_path.parent / (tmp_path.name + "_cwd")
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setattr(traces, "_CHECKOUT", tmp_path / "checkout")
    assert trace_path("philly/philly_jobs.csv") == expected
    monkeypatch.setattr(traces, "_CHECKOUT", None)  # an installed wheel: no checkout
    with pytest.raises(FileNotFoundError, match="philly/philly_jobs.csv not found"):
        trace_path("philly/philly_jobs.csv")


def test_traces_missing_says_where_it_looked_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("MAGNUM_SHARED_DATA", str(tmp_path / "env"))
    msg = traces.traces_missing()
    assert "\n" not in msg and f"MAGNUM_SHARED_DATA={tmp_path / 'env'}" in msg
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "philly").mkdir()       # a file but no MANIFEST.tsv: not the folder
    assert traces.traces_missing() == msg
    (tmp_path / "env" / "MANIFEST.tsv").write_text("file\n")
    assert traces.traces_missing() is None
    monkeypatch.delenv("MAGNUM_SHARED_DATA")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(traces, "_CHECKOUT", tmp_path / "x" / "repo")
    msg = traces.traces_missing()
    assert str(tmp_path / "shared" / "data") in msg and str(tmp_path / "x" / "shared" / "data") in msg
    (tmp_path / "x" / "shared" / "data").mkdir(parents=True)
    (tmp_path / "x" / "shared" / "data" / "MANIFEST.tsv").write_text("file\n")
    assert traces.traces_missing() is None       # beside the checkout, as the loaders look


def test_traces_found_script_exit_codes(tmp_path, repo_root):
    import os
    import subprocess

    script = repo_root / "scripts" / "traces_found.py"
    env = dict(os.environ, MAGNUM_SHARED_DATA=str(tmp_path))
    run = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 3 and run.stderr == ""
    assert run.stdout.startswith("real traces not found") and len(run.stdout.splitlines()) == 1
    (tmp_path / "MANIFEST.tsv").write_text("file\n")
    run = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert (run.returncode, run.stdout, run.stderr) == (0, "", "")


def test_hetero_without_traces_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    from magnum_lib.cli import main

    monkeypatch.setenv("MAGNUM_SHARED_DATA", str(tmp_path))
    assert main(["hetero", "--trace", "gavel"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith("faux-magnum hetero: error: trace file gavel/simulation_throughputs.json not found")
    assert "stanford-futuredata/gavel" in err and "faux-magnum data fetch" in err


def test_missing_trace_line_fits_the_cli_cap_from_a_deep_folder(tmp_path, monkeypatch, capsys):
    from magnum_lib.cli import main
    from magnum_lib.commands._common import MAX_LINE
    from magnum_lib.workload import traces

    monkeypatch.delenv("MAGNUM_SHARED_DATA", raising=False)
    monkeypatch.setattr(traces, "_CHECKOUT", None)  # not the folder beside this checkout either
    deep = tmp_path.joinpath(*["a_rather_long_folder_name"] * 4)
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    assert main(["hetero", "--trace", "gavel"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err) < MAX_LINE and not err.endswith("...")  # the whole advice, not cut by the cap
    assert err.endswith("or set MAGNUM_SHARED_DATA to its folder")


# -- rows that parse but cannot be physical (issue 10 s3): refused with file, line and column ----------

@pytest.mark.parametrize("body,col,what", [
    ("2017-10-09 07:01:55,1e308,1,66.0,a\n", 2, "duration"),          # 3e300 years
    ("2017-10-09 07:01:55,66.0,9200000000000000000,66.0,a\n", 3, "num_gpus"),
    ("2017-10-09 07:01:55,66.0,99999999999999999999999,66.0,a\n", 3, "num_gpus"),  # past int64
    ("2017-10-09 07:01:55,66.0,1,1e300,a\n", 4, "gpu_time"),
])
def test_philly_unphysical_rows(tmp_path, body, col, what):
    p = write(tmp_path, "philly_big.csv", PHILLY_HEADER + body)
    with pytest.raises(ValueError, match=rf"philly_big\.csv: line 2, column {col} \('{what}'\)") as info:
        load_philly(p)
    assert len(str(info.value)) < 400


@pytest.mark.parametrize("row,col,what", [
    ("pod-1,12000,16384,1,500,,LS,Running,100,50,\n", 10, "deletion_time"),    # deleted before created
    ("pod-1,12000,16384,1,500,,LS,Running,100,200,50\n", 11, "scheduled_time"),  # scheduled before created
    ("pod-1,12000,16384,9200000000000000000,500,,LS,Running,0,100,\n", 4, "num_gpu"),
    ("pod-1,12000,16384,1,500,,LS,Running,0,1e308,\n", 10, "deletion_time"),
    ("pod-1,12000,9200000000000000000,1,500,,LS,Running,0,100,\n", 3, "memory_mib"),
])
def test_alibaba_unphysical_rows(tmp_path, row, col, what):
    head = ",".join(traces._POD_COLS) + "\n"
    p = write(tmp_path, "pods.csv", head + "pod-0,12000,16384,1,1000,,LS,Running,0,100,0\n" + row)
    with pytest.raises(ValueError, match=rf"pods\.csv: line 3, column {col} \('{what}'\)"):
        load_alibaba_pods(p)


@pytest.mark.parametrize("content,match", [
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ("{\"k80\": {}}".encode("utf-16"), "not UTF-8"),
    (b"\xff\xfe\x00garbage", "not UTF-8"),
    (json.dumps({"k80": {"('m', 1)": {"null": 1e308}}}).encode(), r"throughput >= 0 and <= 1e\+06"),
    (json.dumps({"k80": {"('m', 9200000000000000000)": {"null": 1.0}}}).encode(), "num_gpus"),
    (json.dumps({"k80": {"(" * 50_000 + ")" * 50_000: {"null": 1.0}}}).encode(), "is not"),
])
def test_gavel_hostile_files(tmp_path, content, match):
    p = tmp_path / "g.json"
    p.write_bytes(content)
    with pytest.raises(ValueError, match=match) as info:
        load_gavel_throughputs(p)
    assert len(str(info.value)) < 400


def test_workload_refuses_times_past_int64_nanoseconds():
    with pytest.raises(ValueError, match="duration_s must be <="):
        Workload([0.0], [1e308])
    with pytest.raises(ValueError, match="num_gpus must be"):
        Workload([0.0], [1.0], num_gpus=2**62)


def test_philly_max_jobs_stops_reading(tmp_path):
    """``max_jobs`` keeps the first rows (file order) that pass the filters and reads no further:
    rows past them may be malformed (never read), and the kept ones match the full read's."""
    from magnum_lib.base.validate import ParameterError
    from magnum_lib.replay.traces import philly_jobs

    good = _philly_file(tmp_path, 3_000).read_text()
    bad = write(tmp_path, "tail_bad.csv", good + "not,a,philly,row\n" * 1000 + "x" * 100 + "\n")
    with pytest.raises(ValueError, match="tail_bad.csv: line 3002"):
        load_philly(bad)
    j = philly_jobs("vc1", 70.0, [2, 4], path=bad, max_jobs=50)
    full = philly_jobs("vc1", 70.0, [2, 4], path=tmp_path / "philly_3000.csv")
    assert len(j) == 50 and len(full) > 50
    assert np.array_equal(j.work_ns, full.work_ns[:50]) and np.array_equal(j.num_gpus, full.num_gpus[:50])
    with pytest.raises(ParameterError, match="VCs \\(vc0, vc1, vc2\\)"):
        philly_jobs("vc9", path=tmp_path / "philly_3000.csv", max_jobs=5)


def test_philly_max_jobs_still_checks_the_rows_it_keeps(tmp_path):
    body = "2017-10-09 07:00:00,66.0,1,66.0,a\n2017-10-09 07:00:01,nan,1,66.0,a\n"
    from magnum_lib.replay.traces import philly_jobs

    with pytest.raises(ValueError, match="line 3, column 2"):
        philly_jobs("a", 60.0, path=write(tmp_path, "p.csv", PHILLY_HEADER + body), max_jobs=2)
