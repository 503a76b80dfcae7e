"""Leases: fields, renewal, release, ids, round trip, bad input."""
import pytest

from magnum_lib.regional.lease import Lease, LeaseIds, as_ns, issue_lease


def _lease(ids=None, **kw):
    args = dict(job_id="reels_infer_v4", node_id=3, device_type="h100", count=8, memory="80GB",
                interconnect="nvlink_3", timeout="100ms", now=1.5)
    args.update(kw)
    return issue_lease(ids or LeaseIds(0), **args)


def test_issue_normalises_units_and_names():
    lease = _lease()
    assert lease.device_type == "h100_sxm"
    assert lease.memory_per_device_bytes == 80 * 10**9
    assert lease.interconnect == "nvlink_3"
    assert lease.issue_time_ns == 1_500_000_000
    assert lease.timeout_ns == 100_000_000
    assert lease.expires_at_ns == lease.issue_time_ns + lease.timeout_ns
    assert _lease(memory="80GiB").memory_per_device_bytes == 80 * 2**30


def test_expiry_is_half_open():
    lease = _lease(now=0)
    assert lease.is_active(99_999_999) and lease.is_expired(100_000_000)


def test_renew_moves_expiry_and_keeps_id():
    lease = _lease(now=0)
    renewed = lease.renew(50_000_000, "1s")
    assert renewed.lease_id == lease.lease_id
    assert renewed.expires_at_ns == 50_000_000 + 10**9
    assert lease.renew(10).timeout_ns == lease.timeout_ns
    with pytest.raises(ValueError, match="expired"):
        lease.renew(100_000_000)
    with pytest.raises(ValueError, match="released"):
        lease.release().renew(0)


def test_release_is_idempotent_and_frees():
    lease = _lease(now=0)
    gone = lease.release()
    assert gone.released and not gone.is_active(0) and gone.release() is gone
    assert not lease.released  # frozen: the original is unchanged


def test_round_trip_through_dict():
    lease = _lease().release()
    assert Lease.from_dict(lease.to_dict()) == lease
    with pytest.raises(ValueError, match="unknown"):
        Lease.from_dict({**lease.to_dict(), "extra": 1})
    with pytest.raises(ValueError, match="missing"):
        Lease.from_dict({k: v for k, v in lease.to_dict().items() if k != "count"})


def test_ids_unique_and_reproducible():
    a, b = LeaseIds("eu"), LeaseIds("eu")
    first = [a() for _ in range(1000)]
    assert len(set(first)) == 1000
    assert first == [b() for _ in range(1000)]
    assert first[0] == "L-eu-000000"
    resumed = LeaseIds("eu", start=a.next_seq)
    assert resumed() not in first


@pytest.mark.parametrize("field, kw", [
    ("count", dict(count=0)), ("memory", dict(memory="80XB")), ("memory", dict(memory="-1GB")),
    ("interconnect", dict(interconnect="nvlonk")), ("timeout", dict(timeout="-1ms")),
    ("timeout", dict(timeout="soon")), ("device_type", dict(device_type="h900")),
    ("node_id", dict(node_id=-1)), ("now", dict(now=-1.0)),
])
def test_bad_input_names_the_field_and_consumes_no_id(field, kw):
    ids = LeaseIds(0)
    with pytest.raises(ValueError, match=rf"^{field}\b"):
        _lease(ids, **kw)
    assert ids.next_seq == 0


def test_dataclass_checks_consistency():
    good = _lease().to_dict()
    with pytest.raises(ValueError, match="expires_at_ns"):
        Lease(**{**good, "expires_at_ns": good["expires_at_ns"] + 1})
    with pytest.raises(ValueError, match="job_id"):
        Lease(**{**good, "job_id": ""})
    with pytest.raises(ValueError, match="region"):
        LeaseIds("")
    assert as_ns("t", 0.25) == 250_000_000 and as_ns("t", "2ms") == 2_000_000
    with pytest.raises(ValueError, match="^t "):
        as_ns("t", float("nan"))
