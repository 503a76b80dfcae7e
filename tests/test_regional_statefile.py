"""The region state and its file: placement, expiry, invariants, locking, atomic replace, kill safety."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magnum_lib.base.validate import ParameterError
from magnum_lib.regional.default_region import NodeSpec, default_region, interconnect_satisfies
from magnum_lib.regional.lease import Lease
from magnum_lib.regional.statefile import (
    PAUSE_ENV,
    CapacityError,
    LeaseNotFoundError,
    RegionState,
    StateFile,
    StateFileError,
    atomic_write,
    iso_utc,
    parse_request,
)

T0 = 1_700_000_000 * 10**9  # an arbitrary wall-clock instant, ns
GB = 10**9


def _tiny(devices=(4, 4)) -> tuple[NodeSpec, ...]:
    return tuple(NodeSpec(i, f"h{i}", "h100_sxm", d, 80 * GB, "nvlink_4") for i, d in enumerate(devices))


# -- the built-in region ---------------------------------------------------------------

def test_default_region_agrees_with_datasheets():
    nodes = default_region()
    assert [n.node_id for n in nodes] == list(range(len(nodes)))
    by_type = {n.device_type: n for n in nodes}
    # Public datasheet figures: H100 SXM5 80 GB NVLink 4, A100 SXM4 80 GB NVLink 3, MI300X 192 GB.
    assert (by_type["h100_sxm"].memory_per_device_bytes, by_type["h100_sxm"].interconnect) == (80 * GB, "nvlink_4")
    assert (by_type["a100_sxm"].memory_per_device_bytes, by_type["a100_sxm"].interconnect) == (80 * GB, "nvlink_3")
    assert by_type["mi300x"].memory_per_device_bytes == 192 * GB
    assert "mtia_v2" in by_type and all(n.devices == 8 for n in nodes)


def test_region_from_cluster_keeps_the_cluster_nodes():
    from magnum_lib.cluster import build_cluster
    from magnum_lib.regional.default_region import region_from_cluster

    cluster = build_cluster(regions=2, cells_per_region=2, nodes_per_cell=3, seed=1)
    nodes = region_from_cluster(cluster, region=1)
    members = cluster.nodes_of_region(1)
    assert [n.node_id for n in nodes] == list(range(len(members))) and len(members) == 6
    for spec, n in zip(nodes, members, strict=True):
        assert spec.device_type == cluster.type_keys[int(cluster.node_type[n])]
        assert spec.devices == len(cluster.devices_of_node(int(n))) == 8
    with pytest.raises(ParameterError):
        region_from_cluster(cluster, region=2)


@pytest.mark.parametrize("offered, required, ok", [
    ("nvlink_4", "nvlink_3", True), ("nvlink_3", "nvlink_3", True), ("nvlink_3", "nvlink_4", False),
    ("infinity_fabric", "nvlink_3", False), ("nvlink_4", "pcie_5", False), ("pcie_5", "pcie_4", True),
    ("pcie_5_x8", "pcie_5", False), ("infinity_fabric", "infinity_fabric", True)])
def test_interconnect_is_a_minimum_class_within_a_family(offered, required, ok):
    assert interconnect_satisfies(offered, required) is ok


# -- requests ----------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, name", [
    (dict(job_id=""), "job_id"), (dict(job_id="has space"), "job_id"), (dict(job_id="j\n"), "job_id"),
    (dict(gpu_type="b200"), "gpu_type"), (dict(count=0), "count"), (dict(count=True), "count"),
    (dict(memory="80XB"), "memory"), (dict(memory="0GB"), "memory"), (dict(memory="-1GB"), "memory"),
    (dict(interconnect="nvlink_9"), "interconnect"), (dict(lease_timeout="-5ms"), "lease_timeout"),
    (dict(lease_timeout="0s"), "lease_timeout"), (dict(lease_timeout="100"), "lease_timeout"),
    (dict(lease_timeout="25h"), "lease_timeout")])
def test_parse_request_names_the_bad_field(kwargs, name):
    base = dict(job_id="j", gpu_type="h100", count=1, memory="80GB", interconnect="nvlink_3", lease_timeout="1s")
    with pytest.raises(ParameterError) as err:
        parse_request(**{**base, **kwargs})
    assert err.value.name == name


def test_unknown_gpu_type_lists_known_names_with_aliases():
    with pytest.raises(ParameterError, match=r"h100_sxm \(h100.*mi300x") as err:
        parse_request("j", "b200")
    assert err.value.name == "gpu_type"


@pytest.mark.parametrize("kwargs, name", [
    (dict(gpu_type="v100"), "gpu_type"),          # in the catalog, not in the region
    (dict(count=9), "count"),                      # nodes hold 8
    (dict(memory="81GB"), "memory"),               # an H100 has 80 GB
    (dict(interconnect="pcie_4"), "interconnect"),  # no H100 node has PCIe
    (dict(gpu_type="a100", interconnect="nvlink_4"), "interconnect")])  # A100 nodes have NVLink 3
def test_requests_no_node_could_ever_hold_are_refused_unchanged(kwargs, name):
    state = RegionState.fresh()
    state.lease("keep", "h100", 2, lease_timeout="1h", now_ns=T0)
    before = state.to_json()
    with pytest.raises(ParameterError) as err:
        state.lease(**{**dict(job_id="j", gpu_type="h100", count=1), **kwargs}, now_ns=T0 + 1)
    assert err.value.name == name
    assert state.to_json() == before


def test_first_fit_fills_nodes_in_order_then_reports_capacity():
    state = RegionState.fresh(_tiny((4, 4)))
    nodes = [state.lease(f"j{i}", "h100", 3, now_ns=T0).node_id for i in range(2)]
    assert nodes == [0, 1]  # 3 + 3 > 4: the second cannot share node 0
    assert state.lease("small", "h100", 1, now_ns=T0).node_id == 0
    assert state.free_devices() == [0, 1]
    before = state.to_json()
    with pytest.raises(CapacityError, match="busy"):
        state.lease("big", "h100", 2, now_ns=T0)
    assert state.to_json() == before


def test_lease_fields_and_article_request_on_default_region():
    state = RegionState.fresh()
    lease = state.lease("reels_infer_v4", "h100", 8, "80GB", "nvlink_3", "100ms", now_ns=T0)
    node = state.nodes[lease.node_id]
    assert node.device_type == "h100_sxm" and interconnect_satisfies(node.interconnect, "nvlink_3")
    assert (lease.count, lease.memory_per_device_bytes, lease.interconnect) == (8, 80 * GB, "nvlink_3")
    assert lease.expires_at_ns - lease.issue_time_ns == 100 * 10**6 and lease.issue_time_ns == T0


def test_expired_leases_free_their_devices_at_expiry_not_before():
    state = RegionState.fresh(_tiny((4,)))
    first = state.lease("a", "h100", 4, lease_timeout="100ms", now_ns=T0)
    with pytest.raises(CapacityError):
        state.lease("b", "h100", 1, now_ns=first.expires_at_ns - 1)  # valid on [issue, expiry)
    second = state.lease("b", "h100", 4, now_ns=first.expires_at_ns)
    assert [x.lease_id for x in state.leases] == [second.lease_id] != [first.lease_id]
    assert state.counters == {"issued": 2, "released": 0, "expired": 1}


def test_release_frees_devices_and_unknown_id_is_refused():
    state = RegionState.fresh(_tiny((4,)))
    lease = state.lease("a", "h100", 4, lease_timeout="1h", now_ns=T0)
    assert state.release(lease.lease_id, now_ns=T0 + 1).released
    assert state.free_devices() == [4]
    with pytest.raises(LeaseNotFoundError):
        state.release(lease.lease_id, now_ns=T0 + 2)


_OPS = st.lists(st.tuples(st.sampled_from(["lease", "release", "wait"]), st.integers(1, 8),
                          st.integers(1, 400)), max_size=40)


@settings(max_examples=40, deadline=None)
@given(_OPS)
def test_random_operations_keep_the_invariants(ops):
    """No node over-committed, ids never reused, free = devices - active holdings, round trip exact."""
    state = RegionState.fresh(_tiny((8, 4, 2)))
    now, seen, active = T0, set(), {}
    for op, k, ms in ops:
        if op == "wait":
            now += ms * 10**6
        elif op == "release" and active:
            lease_id = sorted(active)[k % len(active)]
            if active[lease_id].is_active(now):
                state.release(lease_id, now_ns=now)
            del active[lease_id]
        elif op == "lease":
            try:
                lease = state.lease(f"j{k}", "h100", k, lease_timeout=f"{ms}ms", now_ns=now)
            except (CapacityError, ParameterError):
                continue
            assert lease.lease_id not in seen
            seen.add(lease.lease_id)
            active[lease.lease_id] = lease
        state.prune(now)
        live = [x for x in active.values() if x.is_active(now)]
        assert {x.lease_id for x in state.leases} == {x.lease_id for x in live}
        for node in state.nodes:
            held = sum(x.count for x in live if x.node_id == node.node_id)
            assert 0 <= held <= node.devices
            assert state.free_devices()[node.node_id] == node.devices - held
        assert RegionState.from_dict(json.loads(state.to_json())).to_json() == state.to_json()


# -- the document --------------------------------------------------------------------------

def _doc(**change):
    state = RegionState.fresh(_tiny((4,)))
    state.lease("a", "h100", 3, lease_timeout="1h", now_ns=T0)
    doc = state.to_dict()
    doc.update(change)
    return doc


@pytest.mark.parametrize("doc", [
    [], {"schema": "other"}, _doc(version=2), _doc(extra=1), _doc(next_seq=0), _doc(next_seq=-1),
    _doc(region=""), _doc(counters={"issued": 1}), _doc(nodes=[]), _doc(nodes="x"),
    _doc(leases=[_doc()["leases"][0]] * 2),  # duplicate id (and over-committed)
    _doc(leases=[dict(_doc()["leases"][0], count=5)]),  # more than the node holds
    _doc(leases=[dict(_doc()["leases"][0], node_id=7)]),
    _doc(leases=[dict(_doc()["leases"][0], released=True)]),
    _doc(leases=[dict(_doc()["leases"][0], count="3")]),
    _doc(nodes=[dict(_doc()["nodes"][0], interconnect="warp")])])
def test_invalid_documents_are_refused(doc):
    with pytest.raises(StateFileError):
        RegionState.from_dict(doc)


def test_iso_utc_has_nanoseconds_and_parses():
    from datetime import datetime, timezone

    text = iso_utc(T0 + 123_456_789)
    assert text.endswith(".123456789Z")
    assert datetime.fromisoformat(text) == datetime.fromtimestamp(T0 // 10**9, timezone.utc).replace(
        microsecond=123456)


# -- the file --------------------------------------------------------------------------------

def test_missing_file_is_created_only_by_a_successful_change(tmp_path):
    path = tmp_path / "r.json"
    with pytest.raises(CapacityError):
        with StateFile(path, _tiny((1,))).transaction() as state:
            state.lease("a", "h100", 1, now_ns=T0)
            state.lease("b", "h100", 1, now_ns=T0)
    assert not path.exists()
    with StateFile(path, _tiny((1,))).transaction() as state:
        state.lease("a", "h100", 1, lease_timeout="1h", now_ns=T0)
    assert [x.job_id for x in StateFile(path).read().leases] == ["a"]


def test_unchanged_state_is_not_rewritten_and_a_raising_block_writes_nothing(tmp_path):
    path = tmp_path / "r.json"
    with StateFile(path).transaction() as state:
        state.lease("a", "h100", 1, lease_timeout="1h", now_ns=T0)
    inode, raw = path.stat().st_ino, path.read_bytes()
    with StateFile(path).transaction():
        pass
    assert path.stat().st_ino == inode  # not replaced
    with pytest.raises(RuntimeError):
        with StateFile(path).transaction() as state:
            state.lease("b", "h100", 1, now_ns=T0)
            raise RuntimeError("killed in the middle")
    assert path.read_bytes() == raw


@pytest.mark.parametrize("content", [b"", b"{", b"\xff\xfe", b"[1, 2]", b"null", b"[" * 100_000])
def test_corrupt_file_raises_and_stays_byte_identical(tmp_path, content):
    path = tmp_path / "r.json"
    path.write_bytes(content)
    with pytest.raises(StateFileError, match="corrupt"):
        with StateFile(path).transaction():
            pass
    assert path.read_bytes() == content


def test_failed_write_keeps_the_old_file_and_reports_it(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    with StateFile(path).transaction() as state:
        state.lease("a", "h100", 1, lease_timeout="1h", now_ns=T0)
    raw = path.read_bytes()

    def disk_full(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", disk_full)
    with pytest.raises(StateFileError, match="cannot write"):
        with StateFile(path).transaction() as state:
            state.lease("b", "h100", 1, lease_timeout="1h", now_ns=T0)
    assert path.read_bytes() == raw and sorted(os.listdir(tmp_path)) == ["r.json", "r.json.lock"]


def test_atomic_write_leaves_no_temp_file(tmp_path):
    path = tmp_path / "r.json"
    atomic_write(path, b"one")
    atomic_write(path, b"two")
    assert path.read_bytes() == b"two" and sorted(os.listdir(tmp_path)) == ["r.json"]


def test_threads_serialise_through_the_lock(tmp_path, monkeypatch):
    """With a pause inside each write, an unlocked read-modify-write would lose leases."""
    monkeypatch.setenv(PAUSE_ENV, "0.02")
    path, n, errors = tmp_path / "r.json", 8, []

    def one(i):
        try:
            with StateFile(path, _tiny((4, 4))).transaction() as state:
                state.lease(f"j{i}", "h100", 1, lease_timeout="1h", now_ns=time.time_ns())
        except Exception as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    state = StateFile(path).read()
    assert sorted(x.job_id for x in state.leases) == sorted(f"j{i}" for i in range(n))
    assert len({x.lease_id for x in state.leases}) == n and state.free_devices() == [0, 0]


_WRITER = """
import sys, time
from magnum_lib.regional.statefile import StateFile
with StateFile(sys.argv[1]).transaction() as state:
    state.lease("victim", "h100", 1, lease_timeout="1h", now_ns=time.time_ns())
"""


def test_writer_killed_between_temp_write_and_replace_leaves_old_file(tmp_path):
    path = tmp_path / "r.json"
    with StateFile(path).transaction() as state:
        state.lease("keep", "h100", 8, lease_timeout="1h", now_ns=time.time_ns())
    original = path.read_bytes()
    env = dict(os.environ, **{PAUSE_ENV: "60"})
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)], env=env)
    try:
        deadline = time.monotonic() + 15
        while not [p for p in os.listdir(tmp_path) if ".tmp." in p]:
            assert proc.poll() is None and time.monotonic() < deadline, "writer never reached its pause"
            time.sleep(0.01)
        time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert path.read_bytes() == original
    assert [p for p in os.listdir(tmp_path) if ".tmp." in p]  # the killed call's temp file
    with StateFile(path).transaction() as state:  # loads fine; the next call cleans up
        assert [x.job_id for x in state.leases] == ["keep"]
        state.lease("next", "h100", 1, lease_timeout="1h", now_ns=time.time_ns())
    assert not [p for p in os.listdir(tmp_path) if ".tmp." in p]
    assert [x.job_id for x in StateFile(path).read().leases] == ["keep", "next"]


def test_lease_round_trips_through_the_file(tmp_path):
    path = tmp_path / "r.json"
    with StateFile(path).transaction() as state:
        lease = state.lease("a", "mi300x", 2, "100GB", "infinity_fabric", "5m", now_ns=T0)
    assert StateFile(path).read().leases == [lease] and isinstance(lease, Lease)
    doc = json.loads(path.read_text())
    assert (doc["schema"], doc["version"]) == ("faux-magnum/regional-state", 1)


# -- the file as a user may have it: links, modes, FIFOs, hand edits, a stuck lock (issue 10 s6) ------

def _lease_one(path) -> None:
    with StateFile(path, _tiny((4,))).transaction() as state:
        state.lease("j", "h100", 1, now_ns=T0 + 10**9)


def test_a_symlinked_state_file_is_followed_and_stays_a_link(tmp_path):
    real_dir, link_dir = tmp_path / "real", tmp_path / "links"
    real_dir.mkdir(), link_dir.mkdir()
    target, link = real_dir / "region.json", link_dir / "region.json"
    with StateFile(target, _tiny((4,))).transaction() as state:
        state.lease("first", "h100", 1, now_ns=T0)
    link.symlink_to(target)
    _lease_one(link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert [x.job_id for x in StateFile(target).read().leases] == ["first", "j"]  # the target is current
    assert (real_dir / "region.json.lock").exists() and not (link_dir / "region.json.lock").exists()
    assert sorted(p.name for p in real_dir.iterdir()) == ["region.json", "region.json.lock"]  # no temp left


def test_a_dangling_symlink_creates_its_target(tmp_path):
    link, target = tmp_path / "link.json", tmp_path / "target.json"
    link.symlink_to(target)
    _lease_one(link)
    assert link.is_symlink() and [x.job_id for x in StateFile(target).read().leases] == ["j"]


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_a_new_state_file_gets_the_umask_and_a_replaced_one_keeps_its_mode(tmp_path, umask):
    path = tmp_path / "r.json"
    old = os.umask(umask)
    try:
        _lease_one(path)
        assert (path.stat().st_mode & 0o777) == 0o666 & ~umask
        assert (tmp_path / "r.json.lock").stat().st_mode & 0o777 == 0o666 & ~umask
        os.chmod(path, 0o640)
        _lease_one(path)
        assert path.stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(old)


def test_a_fifo_state_file_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "r.json"
    os.mkfifo(fifo)
    start = time.monotonic()
    with pytest.raises(StateFileError, match="not a regular file"):
        with StateFile(fifo).transaction():
            pass
    with pytest.raises(StateFileError, match="not a regular file"):
        StateFile(fifo).read()
    assert time.monotonic() - start < 1


def test_a_fifo_planted_as_the_lock_file_is_refused(tmp_path):
    os.mkfifo(tmp_path / "r.json.lock")
    with pytest.raises(StateFileError, match="lock file is not a regular file"):
        with StateFile(tmp_path / "r.json").transaction():
            pass


@pytest.mark.parametrize("edit, where", [
    (lambda d: d["nodes"][0].update(devices=1e30), "nodes[0].devices"),
    (lambda d: d["nodes"][0].update(devices=64), "nodes[0].devices"),
    (lambda d: d["nodes"][0].update(memory_per_device_bytes=10**30), "nodes[0].memory_per_device_bytes"),
    (lambda d: d["nodes"][0].update(node_id=2**70), "nodes[0].node_id"),
    (lambda d: d["leases"][0].update(count=10**30), "leases[0].count"),
    (lambda d: d["leases"][0].update(issue_time_ns=2**63), "leases[0].issue_time_ns"),
    (lambda d: d["leases"][0].update(memory_per_device_bytes=1e30), "leases[0].memory_per_device_bytes"),
    (lambda d: d["counters"].update(issued=2**64), "counters.issued"),
    (lambda d: d.update(next_seq=10**30), "next_seq"),
    (lambda d: d["nodes"][0].update(name="x" * 100_000), "nodes[0].name"),
])
def test_hand_edited_values_past_the_validator_are_refused_with_the_field_path(tmp_path, edit, where):
    path = tmp_path / "r.json"
    _lease_one(path)
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    raw = path.read_bytes()
    with pytest.raises(StateFileError) as info:
        StateFile(path).read()
    message = str(info.value)
    assert f"{where}:" in message and len(message) < 400
    with pytest.raises(StateFileError):
        _lease_one(path)
    assert path.read_bytes() == raw


def test_a_huge_or_deep_state_file_is_refused(tmp_path):
    deep, big = tmp_path / "deep.json", tmp_path / "big.json"
    deep.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    with open(big, "wb") as f:
        f.truncate(2**30)
    with pytest.raises(StateFileError, match="nested too deeply"):
        StateFile(deep).read()
    with pytest.raises(StateFileError, match="more than"):
        StateFile(big).read()


def test_a_held_lock_fails_after_a_bounded_wait_naming_the_lock_file(tmp_path, monkeypatch):
    import fcntl

    import magnum_lib.regional.statefile as statefile

    monkeypatch.setattr(statefile, "LOCK_WAIT_S", 0.2)
    path = tmp_path / "r.json"
    fd = os.open(str(path) + ".lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another open file description: conflicts even in-process
        start = time.monotonic()
        with pytest.raises(StateFileError, match=f"{path}.lock: still locked"):
            _lease_one(path)
        assert 0.2 <= time.monotonic() - start < 2
        assert not path.exists()
    finally:
        os.close(fd)
    _lease_one(path)  # released: the next call goes through


@pytest.mark.parametrize("kwargs, name", [
    (dict(memory="1B"), "memory"), (dict(memory=999_999), "memory"), (dict(memory="2PiB"), "memory"),
    (dict(lease_timeout="1ns"), "lease_timeout"), (dict(lease_timeout="999us"), "lease_timeout"),
    (dict(count=64), "count"), (dict(count=10**30), "count"), (dict(job_id="x" * 100_000), "job_id"),
])
def test_parse_request_physical_ranges(kwargs, name):
    with pytest.raises(ParameterError) as info:
        parse_request(**dict(dict(job_id="j", gpu_type="h100"), **kwargs))
    assert info.value.name == name and len(str(info.value)) < 300


@pytest.mark.parametrize("edit, words", [
    (lambda d: d["counters"].update(issued=d["counters"]["issued"] + 5), "counters: issued 6"),
    (lambda d: d["leases"][0].update(memory_per_device_bytes=d["nodes"][0]["memory_per_device_bytes"] + 1),
     "books 80,000,000,001 bytes per device"),
    (lambda d: d["leases"][0].update(job_id="\x1b[31mred"), "job_id: must be"),
    (lambda d: d["leases"][0].update(node_id=99), "names node 99"),
])
def test_a_file_breaking_the_validators_invariants_is_refused_on_load(tmp_path, capsys, edit, words):
    """Issue 22 s7: counters that disagree with the leases, memory booked past the device's, a
    malformed job id, a dangling lease: refused on load, by the library and by ``lease --list``."""
    from magnum_lib.cli import main

    doc = _doc()
    edit(doc)
    with pytest.raises(StateFileError, match=words.replace("[", r"\[")):
        RegionState.from_dict(doc)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    assert main(["lease", "--cluster", str(path), "--list", "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err and "\x1b" not in err
