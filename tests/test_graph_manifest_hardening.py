"""Hostile manifest files: each refused in one line, exit 2, quickly, without reading it whole.

Cases that could hang or blow up (a FIFO, /dev/zero, an alias bomb) run the real CLI in a
subprocess with a timeout, so a regression fails the test instead of hanging the suite.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from magnum_lib.cli import main
from magnum_lib.graph.manifest import MAX_MANIFEST_BYTES, MAX_YAML_NODES, ManifestError, load_manifest, parse_manifest

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
GOOD_TEXT = "job:\n  id: x\n  gpu_type: mtia_v2\n  graph:\n    - {layer: a, runtime: 1ms, memory: 1GB}\n"


def cli(*argv, timeout=30.0):
    """``faux-magnum ARGV`` in a fresh interpreter; a hang fails after ``timeout`` seconds."""
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "magnum_lib", *argv], capture_output=True, text=True,
                          timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - start


def refused(path, *fragments) -> str:
    """load_manifest refuses ``path`` with one problem holding every fragment; the CLI agrees."""
    with pytest.raises(ManifestError) as info:
        load_manifest(path)
    assert len(info.value.problems) == 1, info.value.problems
    line = info.value.problems[0]
    assert all(f in line for f in fragments), line
    return line


def one_line_exit_2(capsys, path) -> str:
    code = main(["reserve", str(path)])
    out = capsys.readouterr()
    assert code == 2 and out.out == "" and len(out.err.splitlines()) == 1, out
    return out.err


# --------------------------------------------------------------------------- encodings

def test_latin1_names_the_byte_and_line(tmp_path, capsys):
    p = tmp_path / "latin1.yaml"
    p.write_bytes("job:\n  id: caf\u00e9-infer\n".encode("latin-1"))
    refused(p, str(p), "is not UTF-8", "byte 0xE9 at offset 14 (line 2)", "save it as UTF-8")
    one_line_exit_2(capsys, p)


@pytest.mark.parametrize("codec, name", [("utf-16", "UTF-16 (little-endian)"), ("utf-16-be", None),
                                         ("utf-32", "UTF-32 (little-endian)")])
def test_utf16_and_utf32(tmp_path, capsys, codec, name):
    p = tmp_path / f"{codec}.yaml"
    p.write_bytes(GOOD_TEXT.encode(codec))
    if name is None:  # no byte-order mark: the NUL bytes give it away
        refused(p, "NUL byte at offset 0", "UTF-16/32 without a byte-order mark")
    else:
        refused(p, name, "byte-order mark FF FE", "save it as UTF-8")
    one_line_exit_2(capsys, p)


def test_binary_file(tmp_path, capsys):
    p = tmp_path / "blob.yaml"
    p.write_bytes(bytes(range(256)) * 40)
    refused(p, "NUL byte at offset 0", "binary data")
    assert len(one_line_exit_2(capsys, p)) < 300


def test_utf8_with_byte_order_mark_is_accepted(tmp_path):
    p = tmp_path / "bom.yaml"
    p.write_bytes(b"\xef\xbb\xbf" + GOOD_TEXT.encode())
    assert load_manifest(p).job_id == "x"


def test_control_characters_are_a_yaml_error(tmp_path):
    p = tmp_path / "ctl.yaml"
    p.write_bytes(GOOD_TEXT.encode().replace(b"id: x", b"id: x\x07"))
    refused(p, "YAML does not parse")


# --------------------------------------------------------------------------- not a regular file

@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "manifest.yaml"
    os.mkfifo(fifo)  # no writer: opening it for reading would wait forever
    code, out, err, took = cli("reserve", str(fifo), timeout=30)
    # the CLI refuses it while parsing the flags (os.stat), before the loader sees it ...
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert str(fifo) in err and "FIFO" in err
    # ... and the loader refuses it too, for callers of the library
    with pytest.raises(ManifestError, match="is a FIFO"):
        load_manifest(fifo)


def test_directory_is_refused(tmp_path, capsys):
    refused(tmp_path, "is a directory, not a regular file")
    one_line_exit_2(capsys, tmp_path)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_dev_zero_is_refused_without_reading(capsys):
    code, out, err, _ = cli("reserve", "/dev/zero", timeout=30)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "character device" in err
    with pytest.raises(ManifestError, match="/dev/zero: is a character device"):
        load_manifest("/dev/zero")


def test_huge_file_is_refused_by_size_before_reading(tmp_path, capsys):
    p = tmp_path / "huge.yaml"
    with open(p, "wb") as f:  # sparse: 4 GB on paper, nothing on disk
        f.truncate(4 * 10**9)
    line = refused(p, "is 4 GB; a manifest is at most 1 MB")
    assert line == f"{p}: is 4 GB; a manifest is at most 1 MB (the article's is a few hundred bytes)"
    one_line_exit_2(capsys, p)
    # the limit itself: exactly MAX_MANIFEST_BYTES is read (and then parsed), one more is not
    p.write_bytes(GOOD_TEXT.encode() + b"#" * (MAX_MANIFEST_BYTES - len(GOOD_TEXT)))
    assert load_manifest(p).job_id == "x"
    p.write_bytes(p.read_bytes() + b"#")
    refused(p, "a manifest is at most 1 MB")


def test_missing_and_unnameable_paths(tmp_path, capsys):
    refused(tmp_path / "absent.yaml", "cannot read: no such file")
    long_name = "m" * 100_000
    line = refused(long_name, "cannot read")
    assert len(line) < 400  # a 100 kB argument is not echoed whole
    err = one_line_exit_2(capsys, long_name)
    assert len(err) < 400


# --------------------------------------------------------------------------- YAML bombs

def billion_laughs(levels: int = 10, fan: int = 10) -> str:
    """The classic alias bomb: ``fan ** levels`` strings from a few hundred bytes."""
    lines = ["a0: &a0 [" + ", ".join(["lol"] * fan) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fan) + "]" for i in range(1, levels)]
    return "\n".join(lines) + f"\njob: {{id: *a{levels - 1}}}\n"


def test_alias_bomb_is_refused_fast_and_short(tmp_path):
    text = billion_laughs()
    assert 500 < len(text) < 700  # the size of the one that ran past 60 s and 900 MB
    p = tmp_path / "bomb.yaml"
    p.write_text(text)
    code, out, err, took = cli("reserve", str(p), timeout=30)
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and len(err) < 300
    assert f"expands to more than {MAX_YAML_NODES:,} nodes" in err
    assert took < 15  # generous for a shared machine; the bomb itself needed > 60 s


def test_alias_limit_is_on_expansion_not_on_aliases():
    # Aliases that expand little are fine (a shared layer spec is a legitimate use) ...
    spec = "{runtime: 1ms, memory: 1GB}"
    doc = (f"defaults: &d {spec}\njob:\n  id: x\n  gpu_type: mtia_v2\n  graph:\n"
           "    - {layer: a, runtime: 1ms, memory: 1GB}\n")
    with pytest.raises(ManifestError, match="defaults: unknown top-level key"):
        parse_manifest(doc)  # parsed fine; refused for its extra key only
    # ... a small bomb below the limit builds, one level more is refused
    with pytest.raises(ManifestError, match="job.id: expected a non-empty name"):
        parse_manifest(billion_laughs(levels=3, fan=10))
    with pytest.raises(ManifestError, match="expands to more than"):
        parse_manifest(billion_laughs(levels=6, fan=10))


def test_recursive_alias_and_deep_nesting():
    with pytest.raises(ManifestError, match="nests more than 32 levels"):
        parse_manifest("job: &a [*a]\n")
    with pytest.raises(ManifestError, match="nests more than 32 levels|YAML does not parse"):
        parse_manifest("job: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ManifestError, match="nests more than 32 levels"):
        parse_manifest("job: " + "[" * 40 + "]" * 40 + "\n")


# --------------------------------------------------------------------------- big values, short messages

@pytest.mark.parametrize("field, value", [
    ("runtime", "9" * 100_000), ("memory", "x" * 100_000), ("layer", "L" * 100_000),
    ("interconnect", "nvlink_" + "9" * 100_000), ("interconnect", "9" * 100_000 + "GB/s"),
])
def test_huge_values_are_not_echoed(field, value):
    layer = {"layer": "a", "runtime": "1ms", "memory": "1GB", field: value}
    doc = {"job": {"id": "x", "gpu_type": "mtia_v2", "graph": [layer]}}
    with pytest.raises(ManifestError) as info:
        parse_manifest(doc)
    assert len(info.value.problems) == 1 and len(str(info.value)) < 300, str(info.value)[:300]
    assert info.value.problems[0].startswith(f"job.graph[0].{field}: ")


def test_huge_integer_and_many_layers():
    with pytest.raises(ManifestError) as info:
        parse_manifest("job: {id: " + "1" * 5000 + "}\n")
    assert len(str(info.value)) < 300
    many = {"job": {"id": "x", "gpu_type": "mtia_v2", "graph": [{"layer": "a"}] * 20_000}}
    with pytest.raises(ManifestError, match="20,000 layers; at most 10,000"):
        parse_manifest(many)
    broken = {"job": {"id": "x", "gpu_type": "mtia_v2", "graph": [{"layer": f"l{i}"} for i in range(500)]}}
    with pytest.raises(ManifestError) as info:
        parse_manifest(broken)
    assert len(info.value.problems) == 21 and info.value.problems[-1] == "... and 980 more problems"


@pytest.mark.parametrize("text, fragment", [
    ("job: {id: x}\nwhen: !!timestamp 2001-12-\n", "YAML value cannot be built"),  # PyYAML AttributeError
    ("job: !!python/object:os.system x\n", "YAML does not parse"),                  # SafeLoader refuses tags
    ("job: {id: x}\n---\njob: {id: y}\n", "YAML does not parse"),                     # two documents
    ("job: {[1, 2]: x}\n", "YAML does not parse"),                                     # unhashable key
])
def test_hostile_yaml_constructs(text, fragment):
    with pytest.raises(ManifestError) as info:
        parse_manifest(text)
    assert len(info.value.problems) == 1 and fragment in info.value.problems[0] and len(str(info.value)) < 300


@pytest.mark.parametrize("field, value, fragment", [
    ("memory", "1e30GB", "is above 1 PB"), ("runtime", "1e29h", "is longer than an hour"),
    ("transfer", "1e13B", "is above 1 TB"),
])
def test_per_layer_upper_bounds(field, value, fragment):
    layer = {"layer": "a", "runtime": "1ms", "memory": "1GB", "interconnect": "pcie_5", field: value}
    with pytest.raises(ManifestError) as info:
        parse_manifest({"job": {"id": "x", "gpu_type": "mtia_v2", "graph": [layer]}})
    assert info.value.problems == [p for p in info.value.problems if fragment in p] and len(info.value.problems) == 1
    assert info.value.problems[0].startswith(f"job.graph[0].{field}: ")


def test_bounds_hold_at_the_limits():
    """The largest accepted layer on the slowest link still gives an int64 timeline."""
    from magnum_lib.graph.reserve import reserve

    layer = {"layer": "a", "runtime": "1h", "memory": "1GB", "interconnect": "100TB/s"}
    m = parse_manifest({"job": {"id": "x", "gpu_type": "k80", "graph": [layer] * 1}})
    r = reserve(m)
    assert 0 < r.makespan_ns < 2**62 and len(r.notes) == 1
    many = parse_manifest({"job": {"id": "x", "gpu_type": "k80", "pre_reserve": False,
                                   "graph": [dict(layer, layer=f"l{i}") for i in range(10_000)]}})
    with pytest.raises(ValueError, match="past 2\\^62 ns"):
        reserve(many)


def test_cli_device_too_slow_for_the_graph(tmp_path, capsys):
    rows = "".join(f"    - {{layer: l{i}, runtime: 1h, memory: 1MB, interconnect: 100TB/s}}\n" for i in range(10_000))
    p = tmp_path / "slow.yaml"
    p.write_text(f"job:\n  id: x\n  gpu_type: k80\n  pre_reserve: false\n  graph:\n{rows}")
    err = one_line_exit_2(capsys, p)
    assert err.startswith("job.gpu_type: on k80 the graph would run past 2^62 ns")


@pytest.mark.parametrize("kw, name", [
    (dict(runtime_ns=2**63 - 1), "runtime_ns"), (dict(runtime_ns=0), "runtime_ns"),
    (dict(memory_bytes=-1), "memory_bytes"), (dict(transfer_bytes=-5), "transfer_bytes"),
    (dict(bandwidth_Bps=float("nan")), "bandwidth_Bps"),
])
def test_layer_built_directly_is_checked_like_a_parsed_one(kw, name):
    """Two layers of 2^63-1 ns once wrapped reserve()'s end time to -2."""
    from magnum_lib.base.validate import ParameterError
    from magnum_lib.graph.manifest import MAX_LAYER_RUNTIME_NS, Layer, Manifest
    from magnum_lib.graph.reserve import reserve

    with pytest.raises(ParameterError) as e:
        Layer("a", **{**dict(runtime_ns=1, memory_bytes=1), **kw})
    assert e.value.name == name
    longest = Layer("a", MAX_LAYER_RUNTIME_NS, 1)  # the edge: an hour per layer, summed exactly
    r = reserve(Manifest("j", "h100_sxm", (longest, longest)))
    assert r.end_ns.tolist() == [MAX_LAYER_RUNTIME_NS, 2 * MAX_LAYER_RUNTIME_NS]


def test_reserve_sums_the_timeline_without_int64_wrap():
    """Three layers each stretched under 2^62 ns sum past 2^63: refused, not wrapped negative."""
    import dataclasses

    from magnum_lib.graph.reserve import reserve
    from magnum_lib.hardware import Catalog, default_catalog

    base = default_catalog()
    acc = base["k80"]
    slow = dataclasses.replace(acc, interconnect=dataclasses.replace(acc.interconnect, per_direction_Bps=1e8))
    catalog = Catalog({**{k: base[k] for k in base}, "k80": slow})
    layer = {"layer": "a", "runtime": "1h", "memory": "1GB", "interconnect": "100TB/s"}  # 3.6e18 ns each
    one = reserve(parse_manifest({"job": {"id": "x", "gpu_type": "k80", "graph": [layer]}}), catalog=catalog)
    assert one.makespan_ns == 36 * 10**17
    three = parse_manifest({"job": {"id": "x", "gpu_type": "k80",
                                    "graph": [dict(layer, layer=f"l{i}") for i in range(3)]}})
    with pytest.raises(ValueError, match="past 2\\^62 ns"):
        reserve(three, catalog=catalog)
