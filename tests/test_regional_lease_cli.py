"""``faux-magnum lease``: the article's command, the state file across calls, bad input, concurrency."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone

import pytest

from magnum_lib.cli import main
from magnum_lib.regional.default_region import interconnect_satisfies
from magnum_lib.regional.statefile import PAUSE_ENV, StateFile

ARTICLE = ["lease", "--job-id=reels_infer_v4", "--gpu-type=h100", "--count=8", "--memory=80GB",
           "--interconnect=nvlink_3", "--lease_timeout=100ms"]
HOUR = ["--lease_timeout=1h"]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv):
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def request(*flags):
    """The article's request with some flags replaced (same flag name) or added."""
    def name(flag):  # --lease_timeout and --lease-timeout are one flag, given at most once
        return flag.split("=")[0].replace("_", "-")

    names = {name(f) for f in flags}
    return [a for a in ARTICLE if name(a) not in names] + list(flags)


@pytest.fixture
def state_file(tmp_path, capsys):
    """A state file holding one long lease (node 0 full)."""
    path = tmp_path / "region.json"
    run_json(capsys, *request(*HOUR), "--cluster", str(path))
    return path


# -- the article's command ---------------------------------------------------------------------

def test_article_command_readable(capsys):
    before = time.time_ns()
    code, out, err = run(capsys, *ARTICLE)
    after = time.time_ns()
    assert code == 0 and err == ""
    fields = dict(line.split(None, 1) for line in out.splitlines())
    assert fields["lease_id"].startswith("L-")
    assert fields["node_id"].split()[0].isdigit()
    expiry = datetime.fromisoformat(fields["expires_at"].split()[0])
    assert expiry.tzinfo == timezone.utc
    # Issued between our two clock reads, expiring 100 ms later (1 us slack: fromisoformat keeps us).
    assert (before + 100 * 10**6) // 1000 - 1 <= expiry.timestamp() * 1e6 <= (after + 100 * 10**6) // 1000 + 1


def test_article_command_json_and_alias_spelling(capsys):
    before = time.time_ns()
    for spelling in ("--lease_timeout=100ms", "--lease-timeout=100ms"):
        doc = run_json(capsys, *request(spelling))
        assert {"lease_id", "node_id", "expires_at"} <= set(doc)
        assert doc["expires_at_ns"] - doc["issue_time_ns"] == 100 * 10**6 and doc["issue_time_ns"] >= before
        parsed = datetime.fromisoformat(doc["expires_at"])
        assert int(parsed.timestamp()) == doc["expires_at_ns"] // 10**9
        assert doc["expires_at"].endswith(f".{doc['expires_at_ns'] % 10**9:09d}Z")
        assert (doc["device_type"], doc["count"], doc["memory_per_device_bytes"]) == ("h100_sxm", 8, 80 * 10**9)
        nodes = run_json(capsys, "lease", "--list")["nodes"]
        assert interconnect_satisfies(nodes[doc["node_id"]]["interconnect"], "nvlink_3")


def test_help_documents_timestamp_and_exit_codes(capsys):
    code, out, _ = run(capsys, "lease", "--help")
    assert code == 0
    assert "ISO-8601 UTC" in out and "exit status" in out and "--lease-timeout" in out


def test_without_a_file_nothing_persists(capsys):
    first = run_json(capsys, *request(*HOUR))
    second = run_json(capsys, *request(*HOUR))
    assert first["node_id"] == second["node_id"] and second["state"] is None
    assert run_json(capsys, "lease", "--list")["leases"] == []


# -- the state file across calls ----------------------------------------------------------------

def test_file_keeps_leases_between_calls(capsys, state_file):
    first = StateFile(state_file).read().leases[0]
    second = run_json(capsys, *request(*HOUR), "--cluster", str(state_file))
    assert second["lease_id"] != first.lease_id
    assert second["node_id"] != first.node_id  # node 0's 8 devices are taken
    listed = run_json(capsys, "lease", "--cluster", str(state_file), "--list")
    assert [x["lease_id"] for x in listed["leases"]] == [first.lease_id, second["lease_id"]]
    used = {n["node_id"]: n["used"] for n in listed["nodes"]}
    assert used[first.node_id] == used[second["node_id"]] == 8


def test_full_region_exits_1_and_changes_nothing(capsys, state_file):
    for _ in range(3):  # the other three H100 nodes
        run_json(capsys, *request(*HOUR), "--cluster", str(state_file))
    raw = state_file.read_bytes()
    code, out, err = run(capsys, *request(*HOUR), "--cluster", str(state_file))
    assert code == 1 and out == "" and len(err.strip().splitlines()) == 1 and "busy" in err
    assert state_file.read_bytes() == raw


def test_release_frees_the_node_and_a_second_release_exits_1(capsys, state_file):
    lease_id = StateFile(state_file).read().leases[0].lease_id
    doc = run_json(capsys, "lease", "--cluster", str(state_file), "--release", lease_id)
    assert doc["released"]["lease_id"] == lease_id
    assert run_json(capsys, "lease", "--cluster", str(state_file), "--list")["leases"] == []
    again = run_json(capsys, *request(*HOUR), "--cluster", str(state_file))
    assert again["node_id"] == doc["released"]["node_id"]  # first fit takes the freed node again
    raw = state_file.read_bytes()
    code, _, err = run(capsys, "lease", "--cluster", str(state_file), "--release", lease_id)
    assert code == 1 and lease_id in err and state_file.read_bytes() == raw


def test_expired_leases_are_pruned_on_the_next_call(capsys, tmp_path):
    path = str(tmp_path / "r.json")
    short = run_json(capsys, *request("--lease_timeout=1ms"), "--cluster", path)
    time.sleep(0.01)
    listed = run_json(capsys, "lease", "--cluster", path, "--list")
    assert listed["leases"] == [] and listed["pruned_expired"] == [short["lease_id"]]
    assert listed["counters"]["expired"] == 1
    code, out, _ = run(capsys, "lease", "--cluster", path, "--list")
    assert code == 0 and "0 active lease(s)" in out


# -- bad input: exit 2, one line naming the flag, file byte-identical ---------------------------------

@pytest.mark.parametrize("flags, flag", [
    (["--gpu-type=b200"], "--gpu-type"), (["--gpu-type=v100"], "--gpu-type"),
    (["--count=9"], "--count"), (["--count=0"], "--count"), (["--count=eight"], "--count"),
    (["--memory=81GB"], "--memory"), (["--memory=80XB"], "--memory"), (["--memory=0"], "--memory"),
    (["--interconnect=nvlink_9"], "--interconnect"), (["--interconnect=pcie_5"], "--interconnect"),
    (["--lease_timeout=-100ms"], "--lease_timeout"), (["--lease_timeout=0ms"], "--lease_timeout"),
    (["--lease_timeout=soon"], "--lease_timeout"), (["--lease_timeout=100"], "--lease_timeout"),
    (["--lease-timeout=-1s"], "--lease_timeout"), (["--job-id="], "--job-id"),
    (["--list"], "--list"), (["--release=L-default-000000"], "--release"),
    (["--lease_timeout"], "--lease_timeout")])  # argparse: expected one argument
def test_bad_input_exits_2_with_one_line_and_leaves_the_file(capsys, state_file, flags, flag):
    raw = state_file.read_bytes()
    code, out, err = run(capsys, *request(*flags), "--cluster", str(state_file))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and flag in err, err
    assert state_file.read_bytes() == raw


def test_missing_job_id_and_bad_file_location_exit_2(capsys, tmp_path):
    code, _, err = run(capsys, "lease", "--gpu-type=h100")
    assert code == 2 and "--job-id" in err
    code, _, err = run(capsys, *ARTICLE, "--cluster", str(tmp_path / "no" / "dir.json"))
    assert code == 2 and "--cluster" in err and len(err.strip().splitlines()) == 1


def test_failing_call_on_a_missing_file_does_not_create_it(capsys, tmp_path):
    path = tmp_path / "r.json"
    assert run(capsys, *request("--count=9"), "--cluster", str(path))[0] == 2
    assert not path.exists()


@pytest.mark.parametrize("content", [b"not json\n", b'{"schema": "faux-magnum/regional-state", "version": 99}',
                                     b"", b'{"leases": [\n'])
def test_corrupt_file_exits_2_and_is_untouched(capsys, tmp_path, content):
    path = tmp_path / "r.json"
    path.write_bytes(content)
    for argv in (ARTICLE, ["lease", "--list"]):
        code, out, err = run(capsys, *argv, "--cluster", str(path))
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "--cluster" in err
        assert path.read_bytes() == content


# -- separate processes -------------------------------------------------------------------------------

def _cli(*argv, env=None):
    return subprocess.Popen([sys.executable, "-m", "magnum_lib", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def test_concurrent_invocations_all_succeed_without_overcommit(tmp_path):
    """8 processes x 4 H100 devices = exactly the 32 H100 devices of the region.

    Each write pauses 50 ms between temp file and replace, so without the lock
    read-modify-write races would drop leases or over-commit a node.
    """
    path, n = str(tmp_path / "r.json"), 8
    env = dict(os.environ, **{PAUSE_ENV: "0.05"})
    procs = [_cli(*request("--count=4", f"--job-id=job{i}", *HOUR), "--cluster", path, "--json", env=env)
             for i in range(n)]
    results = [(p.wait(timeout=60), p.stdout.read(), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert [r[0] for r in results] == [0] * n, results
    ids = [json.loads(r[1])["lease_id"] for r in results]
    assert len(set(ids)) == n
    state = StateFile(path).read()
    assert sorted(x.lease_id for x in state.leases) == sorted(ids)
    assert sorted(x.job_id for x in state.leases) == sorted(f"job{i}" for i in range(n))
    for node in state.nodes:
        held = sum(x.count for x in state.leases if x.node_id == node.node_id)
        assert held <= node.devices
    assert sum(n.devices for n in state.nodes if n.device_type == "h100_sxm") == 4 * n
    p = _cli(*request(*HOUR), "--cluster", path)  # and now the H100 nodes are full
    out, err = p.communicate(timeout=60)
    assert p.returncode == 1 and "busy" in err


def test_cli_killed_mid_write_leaves_the_file_intact(tmp_path, capsys):
    path = tmp_path / "r.json"
    run_json(capsys, *request(*HOUR), "--cluster", str(path))
    original = path.read_bytes()
    proc = _cli(*request(*HOUR), "--cluster", str(path), env=dict(os.environ, **{PAUSE_ENV: "60"}))
    try:
        deadline = time.monotonic() + 15
        while not [f for f in os.listdir(tmp_path) if ".tmp." in f]:
            assert proc.poll() is None and time.monotonic() < deadline, "writer never reached its pause"
            time.sleep(0.01)
    finally:
        proc.kill()
        proc.communicate()
    assert path.read_bytes() == original
    listed = run_json(capsys, "lease", "--cluster", str(path), "--list")
    assert len(listed["leases"]) == 1
