"""The replica's roofline against hand-written closed forms."""
import math

import pytest

from magnum_lib.base.validate import ParameterError
from magnum_lib.serving import make_replica

H100_BF16, H100_BW, NVLINK4 = 989.4e12, 3.35e12, 450e9
P8B = 8030261248


def test_decode_of_one_sequence_is_memory_bound_weights_plus_kv():
    r = make_replica("llama3_8b", "h100", 1)
    k = 1000
    cost = r.batch_cost([1], [k])
    assert cost.bound == "memory"
    assert cost.time_s == pytest.approx((P8B * 2 + 32 * 4096 * (k + 1)) / H100_BW, rel=1e-12)


def test_long_prefill_is_compute_bound():
    r = make_replica("llama3_8b", "h100", 1)
    n = 4096
    flops = 2 * P8B * n + 4 * 32 * 32 * 128 * (n * (n + 1) // 2)
    cost = r.batch_cost([n], [0])
    assert cost.bound == "compute" and cost.time_s == pytest.approx(flops / H100_BF16, rel=1e-12)
    assert r.prefill_time(n) == cost.time_s


def test_ridge_point_separates_the_regimes():
    # weights dominate: a batch of B decodes is compute-bound once 2 P B / peak > 2 P / bw,
    # i.e. B > peak / bw = the ridge point (about 295 FLOP/byte on an H100)
    r = make_replica("llama3_8b", "h100", 1, kv_blocks=1)
    ridge = H100_BF16 / H100_BW
    below, above = int(ridge * 0.9), int(ridge * 1.1)
    assert r.batch_cost([1] * below, [0] * below).bound == "memory"
    assert r.batch_cost([1] * above, [0] * above).bound == "compute"


def test_tensor_parallel_allreduce_and_split():
    r = make_replica("llama3_70b", "h100", 8)
    n = 64
    cost = r.batch_cost([1] * n, [500] * n)
    comm = 2 * 80 * (2 * 7 / 8 * n * 8192 * 2 / NVLINK4)
    assert cost.comm_s == pytest.approx(comm, rel=1e-12)
    # 8 KV heads over 8 devices: the KV cache splits 8 ways, weights 8 ways
    kv = 80 * 4096 * (n * 500 + n) / 8
    assert cost.bytes_moved == pytest.approx(70553706496 * 2 / 8 + kv, rel=1e-12)
    assert cost.time_s == pytest.approx(max(cost.compute_s, cost.memory_s) + comm, rel=1e-12)


def test_kv_heads_replicate_past_tp():
    assert make_replica("llama3_70b", "h100", 16).kv_split == 8


def test_moe_reads_the_experts_the_batch_touches():
    r = make_replica("mixtral", "h100", 2)
    m = r.model
    one = r.weight_bytes_read(1)
    assert one == pytest.approx(m.active_params * 2, rel=1e-12)      # one token: exactly its 2 experts
    assert r.weight_bytes_read(10**6) == pytest.approx(m.params * 2, rel=1e-9)  # all experts
    exp = m.shared_params + m.expert_params * 8 * (1 - (6 / 8) ** 3)
    assert r.weight_bytes_read(3) == pytest.approx(exp * 2, rel=1e-12)


def test_kv_capacity_is_memory_left_after_weights():
    r = make_replica("llama3_8b", "h100", 1, block_size=16, memory_utilization=0.9)
    tokens = (80e9 * 0.9 - P8B * 2) / (32 * 4096)
    assert r.kv_blocks == int(tokens) // 16
    assert r.kv_capacity_tokens == r.kv_blocks * 16


def test_swap_and_transfer_times():
    r = make_replica("llama3_8b", "h100", 1)
    assert r.swap_time(1000) == pytest.approx(1000 * 131072 / 63.015e9)
    assert r.transfer_time(1000) == pytest.approx(1000 * 131072 / 50e9)


def test_weights_that_do_not_fit_are_refused():
    with pytest.raises(ParameterError, match=r"tp 1: llama3_70b weights \(141.1 GB\) do not fit"):
        make_replica("llama3_70b", "h100", 1)


@pytest.mark.parametrize("kw, msg", [
    (dict(tp=0), "tp must be >= 1"), (dict(block_size=0), "block_size must be >= 1"),
    (dict(memory_utilization=1.5), r"memory_utilization must be a number in \(0, 1\]"),
    (dict(compute_efficiency=0), "compute_efficiency"), (dict(overhead_s=math.nan), "overhead_s"),
    (dict(device="v100"), "precision 'bf16' is not available on v100"),
    (dict(host_link="warp_drive"), "warp_drive"),
])
def test_bad_replica_parameters(kw, msg):
    with pytest.raises(ValueError, match=msg):
        make_replica(**({"model": "llama3_8b", "device": "h100"} | kw))
