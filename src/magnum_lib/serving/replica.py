"""A serving replica: one model on ``tp`` devices of one node, and the roofline of an iteration.

An iteration runs one forward pass over a batch of sequences; sequence ``i`` brings
``c_i`` new tokens (a prefill chunk, or ``c_i = 1`` for a decode step) on top of ``k_i``
tokens already in its KV cache. With ``N = sum c_i`` and the attention pairs
``P = sum (c_i k_i + c_i (c_i + 1) / 2)`` (each new token attends to the cached ones and
to the new ones up to itself), the work is::

    flops  = 2 x active_params x N  +  4 x layers x heads x head_dim x P
    bytes  = weights read  +  kv_bytes_per_token x (sum k_i + N)     (read the cache, write the new)

Weights are read once per iteration: all of them for a dense model; for a mixture of
experts, the shared weights plus the experts the ``N`` tokens touch, in expectation
``experts x (1 - (1 - experts_per_token / experts) ** N)`` per layer when tokens pick
experts uniformly at random. With tensor parallelism over ``tp`` devices, flops and
weights split ``tp`` ways and the KV cache ``min(tp, kv_heads)`` ways (a KV head is not
split: past ``kv_heads`` devices the heads are replicated). The device time is the
roofline ``max(flops / (peak x compute_efficiency), bytes / (bandwidth x memory_efficiency))``.
Tensor parallelism adds two all-reduces per layer of ``N x hidden x dtype bytes`` each,
ring algorithm, not overlapped with compute::

    comm = 2 x layers x (2 (tp - 1) / tp x N x hidden x dtype_bytes / link_bw + allreduce_latency)

Leaves out: activations' memory traffic, kernel launch overheads (``overhead_s`` adds a
fixed time per iteration), and any overlap of communication with compute.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from magnum_lib.base.validate import ParameterError, check_int, excerpt
from magnum_lib.hardware import Accelerator, default_catalog
from magnum_lib.serving.models import ModelSpec, get_model
from magnum_lib.units import Interconnect, parse_interconnect

__all__ = ["ReplicaSpec", "IterationCost", "make_replica"]


@dataclass(frozen=True)
class IterationCost:
    """One iteration's time (s) and what bounds it."""

    time_s: float
    compute_s: float
    memory_s: float
    comm_s: float
    flops: float          # per device
    bytes_moved: float    # per device

    @property
    def bound(self) -> str:
        return "compute" if self.compute_s >= self.memory_s else "memory"


def _fraction(name: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
        raise ParameterError(name, f"must be a number in (0, 1], got {excerpt(v)}")
    return float(v)


def _nonneg(name: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (v >= 0 and math.isfinite(v)):
        raise ParameterError(name, f"must be a finite number >= 0, got {excerpt(v)}")
    return float(v)


@dataclass(frozen=True)
class ReplicaSpec:
    """A model served on ``tp`` devices of one type (build it with :func:`make_replica`).

    Attributes
    ----------
    model : ModelSpec
    device : Accelerator
    tp : int
        Tensor-parallel degree (devices of one node).
    block_size : int
        Tokens per KV-cache page.
    kv_blocks : int
        KV-cache pages the replica holds (from memory left after the weights, or given).
    link : Interconnect
        The node's device link (tensor-parallel all-reduces).
    host_link : Interconnect
        Device-to-host link (swapping KV to host memory), one per device.
    transfer_link : Interconnect
        Link a replica sends KV over to another replica (disaggregation), one per device.
    """

    model: ModelSpec
    device: Accelerator
    tp: int
    block_size: int
    kv_blocks: int
    link: Interconnect
    host_link: Interconnect
    transfer_link: Interconnect
    compute_efficiency: float = 1.0
    memory_efficiency: float = 1.0
    allreduce_latency_s: float = 0.0
    overhead_s: float = 0.0

    # ---- derived constants (per device)
    @property
    def kv_split(self) -> int:
        """Devices the KV cache is split over: ``min(tp, kv_heads)``."""
        return min(self.tp, self.model.kv_heads)

    @property
    def kv_bytes_per_token_device(self) -> float:
        return self.model.kv_bytes_per_token / self.kv_split

    @property
    def kv_capacity_tokens(self) -> int:
        return self.kv_blocks * self.block_size

    @property
    def power_w(self) -> float:
        """Draw of the replica while it runs an iteration: ``tp`` x TDP."""
        return self.tp * self.device.tdp_w

    def weight_bytes_read(self, n_tokens: int) -> float:
        """Bytes of weights one iteration over ``n_tokens`` reads, whole replica (see module doc)."""
        m = self.model
        if m.experts == 1 or n_tokens <= 0:
            return float(m.params * m.dtype_bytes) if n_tokens > 0 else 0.0
        touched = m.experts * (1.0 - (1.0 - m.experts_per_token / m.experts) ** n_tokens)
        return float((m.shared_params + m.expert_params * touched) * m.dtype_bytes)

    def iteration(self, n_tokens: int, attn_pairs: float, kv_read_tokens: int) -> IterationCost:
        """Cost of an iteration with ``n_tokens`` new tokens, ``attn_pairs`` attention pairs
        and ``kv_read_tokens`` cached tokens read (the totals of the module docstring)."""
        m = self.model
        if n_tokens <= 0:
            return IterationCost(self.overhead_s, 0.0, 0.0, 0.0, 0.0, 0.0)
        flops = (2.0 * m.active_params * n_tokens + 4.0 * m.layers * m.heads * m.head_dim * attn_pairs) / self.tp
        nbytes = self.weight_bytes_read(n_tokens) / self.tp \
            + self.kv_bytes_per_token_device * (kv_read_tokens + n_tokens)
        compute = flops / (self.device.peak(m.dtype) * self.compute_efficiency)
        memory = nbytes / (self.device.mem_bandwidth_Bps * self.memory_efficiency)
        comm = 0.0
        if self.tp > 1:
            msg = n_tokens * m.hidden * m.dtype_bytes
            comm = 2 * m.layers * (2.0 * (self.tp - 1) / self.tp * msg / self.link.per_direction_Bps
                                   + self.allreduce_latency_s)
        return IterationCost(max(compute, memory) + comm + self.overhead_s, compute, memory, comm, flops, nbytes)

    def batch_cost(self, chunks, cached) -> IterationCost:
        """Cost of an iteration given each sequence's new tokens ``chunks`` and cached ``cached``."""
        n = sum(int(c) for c in chunks)
        pairs = sum(int(c) * int(k) + int(c) * (int(c) + 1) // 2 for c, k in zip(chunks, cached, strict=True))
        return self.iteration(n, pairs, sum(int(k) for k in cached))

    def prefill_time(self, prompt_tokens: int) -> float:
        """One prompt's whole prefill alone (no cache), s."""
        return self.batch_cost([prompt_tokens], [0]).time_s

    def swap_time(self, tokens: int) -> float:
        """Moving ``tokens`` of KV between device and host memory (one way), s."""
        return tokens * self.kv_bytes_per_token_device / self.host_link.per_direction_Bps

    def transfer_time(self, tokens: int) -> float:
        """Sending ``tokens`` of KV to another replica (each device sends its shard), s."""
        return tokens * self.kv_bytes_per_token_device / self.transfer_link.per_direction_Bps


def make_replica(model="llama3_8b", device="h100_sxm", tp: int = 1, *, block_size: int = 16,
                 kv_blocks: int | None = None, memory_utilization: float = 0.9,
                 compute_efficiency: float = 1.0, memory_efficiency: float = 1.0,
                 host_link="pcie_5", transfer_link="infiniband_ndr", allreduce_latency_s: float = 0.0,
                 overhead_s: float = 0.0, catalog=None) -> ReplicaSpec:
    """A :class:`ReplicaSpec`; the KV pages default to what ``memory_utilization`` of each
    device's memory holds after its share of the weights (vLLM's ``gpu_memory_utilization``).

    Raises ParameterError when the weights do not fit, or a value is out of range.
    """
    m = get_model(model)
    acc = device if isinstance(device, Accelerator) else (catalog or default_catalog())[device]
    tp = check_int("tp", tp, 1, 64)
    block_size = check_int("block_size", block_size, 1, 1 << 16)
    util = _fraction("memory_utilization", memory_utilization)
    acc.peak(m.dtype)  # raises naming the device when it lacks the model's dtype
    free = acc.memory_bytes * util - m.weight_bytes / tp
    if kv_blocks is None:
        if free <= 0:
            raise ParameterError("tp", f"{tp}: {m.key} weights ({m.weight_bytes / 1e9:.1f} GB) do not fit in "
                                       f"{tp} x {acc.key} at memory_utilization {util}; raise tp")
        per_token = m.kv_bytes_per_token / min(tp, m.kv_heads)
        kv_blocks = int(free // per_token) // block_size
    kv_blocks = check_int("kv_blocks", kv_blocks, 1, 1 << 40)
    return ReplicaSpec(
        model=m, device=acc, tp=tp, block_size=block_size, kv_blocks=kv_blocks, link=acc.interconnect,
        host_link=parse_interconnect(host_link), transfer_link=parse_interconnect(transfer_link),
        compute_efficiency=_fraction("compute_efficiency", compute_efficiency),
        memory_efficiency=_fraction("memory_efficiency", memory_efficiency),
        allreduce_latency_s=_nonneg("allreduce_latency_s", allreduce_latency_s),
        overhead_s=_nonneg("overhead_s", overhead_s))
