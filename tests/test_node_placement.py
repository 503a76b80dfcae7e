"""Heterogeneity-aware placement: hand-computed cases, policy comparisons, bad inputs.

Hand figures come from the datasheets (data/hardware.yaml cites them): H100 SXM dense
BF16 989.4 TFLOPS, 3.35 TB/s, 700 W; MTIA v2 BF16 177 TFLOPS, 204.8 GB/s, 90 W.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from magnum_lib.base.validate import ParameterError
from magnum_lib.node.placement import POLICIES, compare_policies, make_stream, node_devices, place, request_stream

# One compute-bound request: 1e12 FLOPs, 1e8 bytes.
H100_S = max(1e12 / 989.4e12, 1e8 / 3.35e12)  # 1.0107 ms
MTIA_S = max(1e12 / 177e12, 1e8 / 204.8e9)  # 5.6497 ms
H100_J, MTIA_J = 700 * H100_S, 90 * MTIA_S  # 0.7075 J, 0.5085 J: MTIA is cheaper, H100 faster
NODE = {"h100": 1, "mtia_v2": 1}  # device 0 is the H100, device 1 the MTIA


def one(sla, n=1, at=0.0):
    return make_stream(np.full(n, at), 1e12, 1e8, sla)


def test_picks_the_cheaper_device_that_meets_the_sla():
    r = place(one("10ms"), NODE)
    assert list(r.device) == [1] and r.fallbacks == 0 and r.sla_attainment == 1
    assert r.energy_j == pytest.approx(MTIA_J, rel=1e-6)
    assert r.latency_s[0] == pytest.approx(MTIA_S, rel=1e-6)


def test_picks_the_faster_device_when_the_cheap_one_misses_the_sla():
    r = place(one("2ms"), NODE)
    assert list(r.device) == [0] and r.fallbacks == 0
    assert r.energy_j == pytest.approx(H100_J, rel=1e-6)


def test_falls_back_to_the_fastest_when_no_device_meets_the_sla():
    r = place(one("0.5ms"), NODE)
    assert list(r.device) == [0] and r.fallbacks == 1 and r.sla_attainment == 0


def test_a_price_per_device_second_changes_what_cheapest_means():
    r = place(one("10ms"), NODE, price={"h100": 1.0, "mtia": 10.0})
    assert list(r.device) == [0]
    assert r.cost == pytest.approx(1.0 * H100_S, rel=1e-6)
    assert r.energy_j == pytest.approx(H100_J, rel=1e-6)


def test_queueing_by_hand():
    # Three requests at 0, SLA 10 ms. Cheapest: the first takes the MTIA (5.65 ms); the
    # second would finish there at 11.3 ms > 10 ms, so it takes the H100 (1.01 ms); so
    # does the third (2.02 ms). Fastest-first puts all three on the H100 in turn.
    cheap = place(one("10ms", n=3), NODE)
    assert list(cheap.device) == [1, 0, 0]
    assert cheap.latency_s == pytest.approx([MTIA_S, H100_S, 2 * H100_S], rel=1e-6)
    assert cheap.energy_j == pytest.approx(MTIA_J + 2 * H100_J, rel=1e-6)
    assert cheap.makespan_s == pytest.approx(MTIA_S, rel=1e-6)
    h100, mtia = cheap.per_type
    assert (h100.device_type, h100.requests, mtia.requests) == ("h100_sxm", 2, 1)
    assert h100.utilization == pytest.approx(2 * H100_S / MTIA_S, rel=1e-6)
    assert mtia.utilization == pytest.approx(1.0)
    fast = place(one("10ms", n=3), NODE, policy="fastest_first")
    assert list(fast.device) == [0, 0, 0]
    assert fast.latency_s == pytest.approx([H100_S, 2 * H100_S, 3 * H100_S], rel=1e-6)
    assert fast.sla_attainment == 1 and fast.energy_j > cheap.energy_j


def test_ties_go_to_the_lowest_index_and_a_free_device_is_used():
    r = place(one("10ms", n=2), {"h100": 2}, policy="fastest_first")
    assert list(r.device) == [0, 1]  # the second finds device 0 busy
    assert r.latency_s == pytest.approx([H100_S, H100_S], rel=1e-6)


def test_a_device_lacking_the_precision_is_never_used():
    # MTIA v2 has no FP8 path: every policy must keep to the H100.
    s = make_stream(np.linspace(0, 0.1, 50), 1e12, 1e8, "50ms")
    for policy in POLICIES:
        r = place(s, NODE, policy=policy, precision="fp8")
        assert (r.device == 0).all(), policy


def test_random_is_seeded_and_uniform():
    s = make_stream(np.zeros(3000), 1e9, 1e6, "1s")
    a, b = (place(s, {"h100": 3, "mtia_v2": 3}, policy="random", seed=4) for _ in range(2))
    assert np.array_equal(a.device, b.device)
    assert not np.array_equal(a.device, place(s, {"h100": 3, "mtia_v2": 3}, policy="random", seed=5).device)
    counts = np.bincount(a.device, minlength=6)  # Binomial(3000, 1/6): mean 500, sd 20.4
    assert np.all(np.abs(counts - 500) < 5 * 20.4)


def test_request_stream_rate_matches_the_load():
    devices = {"h100": 2, "mtia_v2": 4}
    s = request_stream(devices, requests=4000, load=0.5, flops=2e12, bytes_moved=2e9, seed=3)
    t_h100 = max(2e12 / 989.4e12, 2e9 / 3.35e12)
    t_mtia = max(2e12 / 177e12, 2e9 / 204.8e9)
    rate = 0.5 * (2 / t_h100 + 4 / t_mtia)
    gaps = np.diff(s.arrival_s, prepend=0.0)  # exponential: sd of the mean = mean / sqrt(n)
    assert abs(gaps.mean() - 1 / rate) < 5 / rate / np.sqrt(4000)
    assert abs(s.flops.mean() - 2e12) < 5 * 2e12 / np.sqrt(4000)  # lognormal cv 1
    assert (s.sla_s == 0.02).all() and not s.flops.flags.writeable


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_cheapest_saves_energy_at_moderate_load_without_losing_sla(seed):
    devices = {"h100": 2, "mtia_v2": 4}
    s = request_stream(devices, requests=1500, load=0.4, sla="20ms", seed=seed)
    r = compare_policies(s, devices)
    cheap, fast, rand = r["cheapest_meeting_sla"], r["fastest_first"], r["random"]
    assert cheap.energy_j < 0.95 * fast.energy_j
    assert cheap.sla_attainment >= fast.sla_attainment - 0.005
    assert cheap.sla_attainment > rand.sla_attainment  # random overloads the slow devices
    # Cheapest spends the SLA slack: a slower median than fastest-first, still within the SLA.
    assert fast.latency_p50_s < cheap.latency_p50_s <= 0.02


def test_at_high_load_the_energy_saving_vanishes():
    # Near saturation every device must be busy whatever the policy, so the mix of device
    # types, and with it the energy per request, is set by capacity rather than by choice;
    # and both policies miss most SLAs.
    devices = {"h100": 2, "mtia_v2": 4}
    s = request_stream(devices, requests=1500, load=0.95, sla="20ms", seed=1)
    r = compare_policies(s, devices, policies=("cheapest_meeting_sla", "fastest_first"))
    cheap, fast = r["cheapest_meeting_sla"], r["fastest_first"]
    assert abs(cheap.energy_j / fast.energy_j - 1) < 0.02
    assert cheap.sla_attainment < 0.5 and fast.sla_attainment < 0.5
    assert cheap.fallbacks > len(s) / 2
    assert all(t.utilization > 0.9 for t in cheap.per_type + fast.per_type)


def test_energy_is_tdp_times_busy_time_and_to_dict_is_json():
    devices = {"h100": 1, "a100": 1, "mtia_v2": 2}
    s = request_stream(devices, requests=300, load=0.5, seed=2)
    r = place(s, devices)
    tdp = {"h100_sxm": 700, "a100_sxm": 400, "mtia_v2": 90}
    busy = sum(t.utilization * t.devices * r.makespan_s * tdp[t.device_type] for t in r.per_type)
    assert r.energy_j == pytest.approx(busy, rel=1e-6)
    assert sum(t.energy_j for t in r.per_type) == pytest.approx(r.energy_j)
    assert sum(t.requests for t in r.per_type) == r.requests == 300
    d = json.loads(json.dumps(r.to_dict(), allow_nan=False))
    assert {"sla_attainment", "energy_j", "per_type", "fallbacks"} <= d.keys()


def test_node_devices_resolves_aliases():
    assert node_devices({"H100": 2, "mtia": 1}) == ("h100_sxm", "h100_sxm", "mtia_v2")
    assert node_devices(["a100", "mi300"]) == ("a100_sxm", "mi300x")


# ---------------------------------------------------------------------------
# Bad inputs
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("devices", [{"h200": 1}, ["h100", "tpu_v5"], {}, {"h100": -1}, "h100", 3])
def test_bad_devices(devices):
    with pytest.raises(ParameterError, match="devices"):
        place(one("10ms"), devices)


def test_unknown_device_type_is_named():
    with pytest.raises(ValueError, match="tpu_v5"):
        node_devices(["tpu_v5"])


@pytest.mark.parametrize("kwargs, field", [
    (dict(policy="cheapest"), "policy"),
    (dict(price={"h100": 1.0}), "price"),  # no price for the MTIA
    (dict(price={"h100": 1.0, "mtia": -2.0}), "price"),
    (dict(price={"h100": 1.0, "mtia": 1.0, "tpu": 1.0}), "price"),
    (dict(price="dollars"), "price"),
    (dict(seed=-1), "seed"),
    (dict(precision="fp4"), "precision"),
])
def test_bad_place_parameters(kwargs, field):
    with pytest.raises(ValueError, match=field):
        place(one("10ms"), NODE, **kwargs)


@pytest.mark.parametrize("args, field", [
    (([0.0], 1e12, 1e8, -0.01), "sla"),
    (([0.0], 1e12, 1e8, "-5ms"), "sla"),
    (([0.0], 1e12, 1e8, 0.0), "sla"),
    (([0.0], -1.0, 1e8, 0.01), "flops"),
    (([0.0], 1e12, np.nan, 0.01), "bytes_moved"),
    (([1.0, 0.0], 1e12, 1e8, 0.01), "arrival_s"),
    (([], 1e12, 1e8, 0.01), "arrival_s"),
    (([0.0, 1.0], [1e12] * 3, 1e8, 0.01), "flops"),
])
def test_bad_streams(args, field):
    with pytest.raises(ValueError, match=field):
        make_stream(*args)


@pytest.mark.parametrize("kwargs, field", [
    (dict(load=0), "load"), (dict(requests=0), "requests"), (dict(sla="-1ms"), "sla"),
    (dict(flops=-1.0), "flops"), (dict(cv=0), "cv"), (dict(devices={"k80": 1}, precision="fp8"), "precision"),
])
def test_bad_request_stream(kwargs, field):
    kwargs = {"devices": NODE, **kwargs}
    with pytest.raises(ValueError, match=field):
        request_stream(**kwargs)


def test_stream_must_be_a_request_stream():
    with pytest.raises(TypeError, match="RequestStream"):
        place([0.0], NODE)


def test_a_policy_written_by_hand_plugs_in():
    def slowest_finish(finish_s, cost, arrival_s, sla_s):  # a deliberately odd rule
        return int(np.argmax(np.where(np.isfinite(finish_s), finish_s, -1)))

    r = place(one("10ms", n=2), NODE, policy=slowest_finish)
    assert r.policy == "slowest_finish" and list(r.device) == [1, 1]
    assert r.latency_s == pytest.approx([MTIA_S, 2 * MTIA_S], rel=1e-6)
    # The callable sees the same finish times and costs the built-in policies use.
    seen = []
    place(one("10ms"), NODE, policy=lambda f, c, a, s: seen.append((f, c, a, s)) or 0)
    (f, c, a, s), = seen
    assert f == pytest.approx([H100_S, MTIA_S], rel=1e-6) and c == pytest.approx([H100_J, MTIA_J], rel=1e-6)
    assert (a, s) == (0.0, pytest.approx(0.01))


@pytest.mark.parametrize("answer", [2, -1, 0.5, None, True])
def test_a_policy_returning_a_bad_index_is_refused(answer):
    with pytest.raises(ParameterError, match="policy"):
        place(one("10ms"), NODE, policy=lambda *args: answer)


def test_a_policy_may_not_pick_a_device_lacking_the_precision():
    with pytest.raises(ParameterError, match="policy"):
        place(one("10ms"), NODE, policy=lambda *args: 1, precision="fp8")
