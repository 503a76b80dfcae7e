"""Inference requests as plain arrays, and a generator of Poisson or bursty arrivals.

A :class:`ServingRequests` holds ``n`` requests sorted by arrival: ``arrival_ns`` (int64,
from 0), ``prompt`` and ``output`` token counts (int64, each >= 1), and optionally the
prompt's prefix-block hashes in CSR form (request ``i``'s hashes are
``hash_ids[hash_ptr[i]:hash_ptr[i + 1]]``, one per ``hash_block`` tokens of its prompt,
Mooncake's layout; equal ids = the same prefix block).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from magnum_lib.base.validate import ParameterError, check_int, check_positive

__all__ = ["ServingRequests", "MAX_TOKENS", "generate_requests"]

NS = 1_000_000_000
#: Largest prompt or output a request may have (10 million tokens; real contexts are <= ~1e6).
MAX_TOKENS = 10_000_000


@dataclass(frozen=True, eq=False)
class ServingRequests:
    """``n`` requests in arrival order (see the module docstring)."""

    arrival_ns: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    hash_ptr: np.ndarray | None = None
    hash_ids: np.ndarray | None = None
    hash_block: int = 512
    name: str = "requests"

    def __post_init__(self):
        n = self.arrival_ns.size
        for f in ("arrival_ns", "prompt", "output"):
            a = getattr(self, f)
            if a.dtype != np.int64 or a.ndim != 1 or a.size != n:
                raise ParameterError(f, f"must be a 1-D int64 array of {n} values")
        if n and (np.any(np.diff(self.arrival_ns) < 0) or self.arrival_ns[0] < 0):
            raise ParameterError("arrival_ns", "must be >= 0 and non-decreasing")
        for f in ("prompt", "output"):
            a = getattr(self, f)
            if n and (a.min() < 1 or a.max() > MAX_TOKENS):
                raise ParameterError(f, f"token counts must be in [1, {MAX_TOKENS:,}]")
        if (self.hash_ptr is None) != (self.hash_ids is None):
            raise ParameterError("hash_ids", "give hash_ptr and hash_ids together")
        if self.hash_ptr is not None:
            p = self.hash_ptr
            if p.dtype != np.int64 or p.size != n + 1 or p[0] != 0 or np.any(np.diff(p) < 0) \
                    or p[-1] != self.hash_ids.size or self.hash_ids.dtype != np.int64:
                raise ParameterError("hash_ptr", "must be int64 CSR offsets 0..len(hash_ids), one per request + 1")
            hb = check_int("hash_block", self.hash_block, 1, MAX_TOKENS)
            if n and np.any(np.diff(p) != -(-self.prompt // hb)):
                i = int(np.argmax(np.diff(p) != -(-self.prompt // hb)))
                raise ParameterError("hash_ids", f"request {i}: expected one hash per {hb}-token prompt block "
                                                 f"(ceil(prompt / {hb})), got {int(p[i + 1] - p[i])}")

    def __len__(self) -> int:
        return int(self.arrival_ns.size)

    @property
    def arrival_s(self) -> np.ndarray:
        return self.arrival_ns / NS

    @property
    def duration_s(self) -> float:
        """Time from the first arrival to the last, s."""
        return float(self.arrival_ns[-1] - self.arrival_ns[0]) / NS if len(self) else 0.0

    def hashes(self, i: int) -> np.ndarray:
        """Request ``i``'s prefix-block hashes (empty without them)."""
        if self.hash_ptr is None:
            return np.zeros(0, np.int64)
        return self.hash_ids[self.hash_ptr[i]:self.hash_ptr[i + 1]]

    def head(self, n: int) -> ServingRequests:
        """The first ``n`` requests."""
        n = check_int("n", n, 0)
        n = min(n, len(self))
        hp = hi = None
        if self.hash_ptr is not None:
            hp, hi = self.hash_ptr[:n + 1].copy(), self.hash_ids[:self.hash_ptr[n]].copy()
        return ServingRequests(self.arrival_ns[:n].copy(), self.prompt[:n].copy(), self.output[:n].copy(),
                               hp, hi, self.hash_block, self.name)

    def scaled(self, rate_scale: float) -> ServingRequests:
        """The same requests arriving ``rate_scale`` times as fast (inter-arrivals divided)."""
        s = check_positive("rate_scale", rate_scale, maximum=1e6)
        arr = np.floor(self.arrival_ns / s).astype(np.int64)
        return ServingRequests(arr, self.prompt, self.output, self.hash_ptr, self.hash_ids, self.hash_block,
                               f"{self.name} x{s:g}")


def generate_requests(n: int, rate_per_s: float, *, prompt_mean: float = 1024, output_mean: float = 128,
                      sigma: float = 1.0, burstiness: float = 1.0, seed: int = 0) -> ServingRequests:
    """``n`` synthetic requests.

    Inter-arrivals are gamma with mean ``1 / rate_per_s`` and coefficient of variation
    ``burstiness`` (1 = Poisson, > 1 bursty); prompt and output lengths are lognormal with
    the given means and log-space standard deviation ``sigma``, rounded, at least 1.
    """
    n = check_int("n", n, 0, 10**8)
    rate = check_positive("rate_per_s", rate_per_s, maximum=1e9)
    cv = check_positive("burstiness", burstiness, maximum=100)
    pm = check_positive("prompt_mean", prompt_mean, maximum=MAX_TOKENS)
    om = check_positive("output_mean", output_mean, maximum=MAX_TOKENS)
    if isinstance(sigma, bool) or not isinstance(sigma, (int, float)) or not 0 <= sigma <= 5:
        raise ParameterError("sigma", f"must be a number in [0, 5], got {sigma!r}")
    rng = np.random.default_rng(seed)
    shape = 1.0 / cv ** 2
    gaps = rng.gamma(shape, 1.0 / (rate * shape), n)
    arrival = np.round(np.cumsum(gaps) * NS).astype(np.int64)
    if n:
        arrival -= arrival[0]

    def lengths(mean):
        mu = np.log(mean) - sigma ** 2 / 2  # lognormal mean = exp(mu + sigma^2 / 2)
        return np.clip(np.round(rng.lognormal(mu, sigma, n)), 1, MAX_TOKENS).astype(np.int64)

    return ServingRequests(arrival, lengths(pm), lengths(om), name=f"poisson-cv{cv:g}")
