"""Live gossip: real endpoints exchanging UDP datagrams on 127.0.0.1 with asyncio.

One event loop in one process runs ``endpoints`` endpoints, each with its own socket on an
ephemeral port. Every ``interval`` each endpoint sends its view (as much as fits in one
datagram, see :mod:`magnum_lib.gossip.wire`) to ``fanout`` random peers; a receiver merges
it into its view with the same merge function the rest of the library uses
(:func:`~magnum_lib.gossip.merge.merge_lww` by default). At ``update_at`` endpoint ``e0``
changes its state (generation + 1); the run measures, with ``time.perf_counter``, how long
it takes until every endpoint holds that generation. Loss is injected at the sender: each
datagram is dropped with probability ``loss`` (seeded). Malformed datagrams are dropped and
counted per endpoint; they never stop an endpoint. Sockets are always closed.

Real time is not reproducible: the seed fixes the peer choices and losses each endpoint
draws, not the interleaving the operating system gives the datagrams.
"""
from __future__ import annotations

import asyncio
import collections
import math
import numbers
import random
import socket
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from magnum_lib.engine.errors import ParameterError, check_choice, check_int, parse_param
from magnum_lib.gossip.merge import merge_article, merge_lww, merge_vc, phantom_busy, resolve, vc_view, write_vc
from magnum_lib.gossip.state import NodeState, bitmap_of, view_of
from magnum_lib.gossip.wire import KIND_STATES, KIND_VERSIONED, MAX_DATAGRAM, WireError, decode, entry_bytes, pack
from magnum_lib.units import parse_duration

MAX_ENDPOINTS = 64
MERGES = {"lww": merge_lww, "article": merge_article, "vc": merge_vc}
HOST = "127.0.0.1"
GPUS = 8
BUSY_BEFORE, BUSY_AFTER = (0, 1, 2, 3), (2, 3, 4)  # e0's update frees GPUs 0 and 1
MAX_DURATION_NS = 600 * 10**9  # a live run holds sockets and a core: keep it bounded
RCVBUF = 1 << 20  # bytes per socket requested


@dataclass(frozen=True)
class LiveResult:
    """Outcome of :func:`run_live` (counters summed over endpoints).

    ``convergence_time_s`` is the real time from the update until the last endpoint held
    the new generation (nan when not converged); ``seen_after_s[i]`` is that time for
    endpoint ``i`` (nan if it never saw it), ready to plot. ``malformed_by_reason`` splits
    ``dropped_malformed`` by :data:`magnum_lib.gossip.wire.REASONS` (plus ``"error"`` for
    anything unexpected). ``datagrams_sent - datagrams_received`` is what was still in
    flight at the end (or, on an overloaded machine, overflowed a socket buffer).

    The update frees GPUs 0 and 1 of ``e0`` (busy before: 0-3; after: 2-4).
    ``knew_old_state`` counts the other endpoints that held the old state when it happened;
    ``phantom_busy_endpoints`` those that, at the end, hold the new generation but still
    read a freed GPU busy - the article's merge flaw, live (0 for lww and vc).
    """

    endpoints: int
    interval_s: float
    duration_s: float
    loss: float
    fanout: int
    seed: int
    merge: str
    update_at_s: float
    converged: bool
    convergence_time_s: float
    seen_after_s: tuple
    datagrams_sent: int
    datagrams_received: int
    dropped_loss: int
    dropped_malformed: int
    malformed_by_reason: dict
    merges: int
    knew_old_state: int
    phantom_busy_endpoints: int
    bytes_sent: int
    bytes_received: int
    wall_s: float

    def to_dict(self) -> dict:
        d = asdict(self)
        d["seen_after_s"] = [None if math.isnan(t) else t for t in self.seen_after_s]
        if math.isnan(self.convergence_time_s):
            d["convergence_time_s"] = None
        return d


def _generation(entry) -> int:
    return entry.generation if isinstance(entry, NodeState) else resolve(entry)[0].generation


@dataclass
class Counters:
    sent: int = 0
    received: int = 0
    dropped_loss: int = 0
    malformed: collections.Counter = field(default_factory=collections.Counter)
    merges: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0


class Endpoint(asyncio.DatagramProtocol):
    """One gossiping node: a socket, its own state, its view of the others, counters."""

    def __init__(self, index: int, rule: str, rng: random.Random, loss: float):
        self.node_id = f"e{index}"
        self.rule = rule
        self.kind = KIND_VERSIONED if rule == "vc" else KIND_STATES
        self.merge = MERGES[rule]
        self.rng = rng
        self.loss = loss
        own = {self.node_id: NodeState(self.node_id, 0, bitmap_of(BUSY_BEFORE, GPUS), GPUS)}
        self.view = vc_view(own) if rule == "vc" else own
        self.counters = Counters()
        self.transport = None
        self._encoded: dict[str, tuple] = {}  # node -> (entry, its encoded record lines)
        self._datagram: bytes | None = None     # the encoded view while it is unchanged
        self._last: dict = {}                   # peer address -> its last merged datagram
        self.watch: tuple[str, int] | None = None  # (node, generation) whose arrival we time
        self.seen_at = math.nan

    # -- asyncio protocol -------------------------------------------------------------
    def connection_made(self, transport):
        self.transport = transport
        # A roomy receive buffer rides out moments when this process is not scheduled
        # (the kernel caps it at net.core.rmem_max); overflow would be silent loss.
        transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)

    def datagram_received(self, data, addr):
        c = self.counters
        c.received += 1
        c.bytes_received += len(data)
        if self._last.get(addr) == data:
            # The same datagram as this peer's last one, already merged: every rule
            # (even the article's) would leave the view unchanged, so skip the work.
            c.merges += 1
            return
        try:
            msg = decode(data)
            if msg.kind != self.kind:
                raise WireError("kind", f"kind {msg.kind} but this endpoint merges with {self.rule!r}")
            # The owner is the only writer of its own record: ignore claims about us.
            remote = {n: e for n, e in msg.view.items() if n != self.node_id}
            merged = self.merge(self.view, remote)
            c.merges += 1
            self._last[addr] = data
            if merged != self.view:  # C-level compare, identical entries short-cut
                self.view = merged
                self._datagram = None
        except WireError as exc:
            c.malformed[exc.reason] += 1
            return
        except Exception:  # never let one datagram kill the endpoint
            c.malformed["error"] += 1
            return
        self._check_seen()

    def error_received(self, exc):
        # e.g. ICMP port unreachable after a peer closed: not a datagram, keep running.
        pass

    # -- behaviour --------------------------------------------------------------------
    def update(self, busy_gpus) -> int:
        """Change this endpoint's own state; return the new generation."""
        mine = self.own_state().updated(busy=bitmap_of(busy_gpus, GPUS))
        if self.rule == "vc":
            self.view = write_vc(self.view, self.node_id, mine)
        else:
            self.view = {**self.view, self.node_id: mine}
        self._datagram = None
        return mine.generation

    def own_state(self) -> NodeState:
        return self.state_of(self.node_id)

    def state_of(self, node: str) -> NodeState | None:
        """What this endpoint reads for ``node`` (one state, resolved if there are siblings)."""
        entry = self.view.get(node)
        return entry if entry is None or isinstance(entry, NodeState) else resolve(entry)[0]

    def _check_seen(self):
        if self.watch is not None and math.isnan(self.seen_at):
            node, gen = self.watch
            entry = self.view.get(node)
            if entry is not None and _generation(entry) >= gen:
                self.seen_at = time.perf_counter()

    def gossip(self, peers: list[tuple[str, int]], fanout: int):
        """Send this endpoint's view (as much as fits) to ``fanout`` random peers."""
        data = self._datagram or self._encode()
        for i in self.rng.sample(range(len(peers)), fanout):
            if self.rng.random() < self.loss:
                self.counters.dropped_loss += 1
                continue
            self.transport.sendto(data, peers[i])
            self.counters.sent += 1
            self.counters.bytes_sent += len(data)

    def _encode(self) -> bytes:
        entries = []
        for node, entry in self.view.items():
            cached = self._encoded.get(node)
            if cached is None or cached[0] is not entry:  # entries are immutable: encode once
                cached = self._encoded[node] = (entry, entry_bytes(entry))
            if node == self.node_id:
                own = cached[1]
            else:
                entries.append(cached[1])
        # 100 bytes cover the 8-byte header and the {"from": id} line (ids <= 64 chars).
        if sum(map(len, entries)) + len(own) > MAX_DATAGRAM - 100:
            self.rng.shuffle(entries)  # too big for one datagram: a random part each time
        data, included = pack(self.node_id, self.kind, [own] + entries)
        # Reuse the datagram until the view changes, unless it holds only part of the view.
        self._datagram = data if included == len(entries) + 1 else None
        return data


def _seconds(name: str, value) -> float:
    ns = parse_param(name, parse_duration, value)
    if not 0 < ns <= MAX_DURATION_NS:
        raise ParameterError(name, f"must be > 0 and <= {MAX_DURATION_NS // 10**9} s, got {value!r}")
    return ns / 1e9


def check_live_parameters(endpoints, interval, duration, loss, fanout, seed, merge, update_at):
    """Validate :func:`run_live`'s parameters; return them normalised (seconds as floats)."""
    endpoints = check_int("endpoints", endpoints, 2, MAX_ENDPOINTS)
    interval_s = _seconds("interval", interval)
    duration_s = _seconds("duration", duration)
    if isinstance(loss, bool) or not isinstance(loss, numbers.Real) or not 0 <= loss < 1:
        raise ParameterError("loss", f"must be a probability in [0, 1), got {loss!r}")
    fanout = check_int("fanout", fanout, 1)
    if fanout >= endpoints:
        raise ParameterError("fanout", f"must be < endpoints ({endpoints}), got {fanout}")
    seed = check_int("seed", seed, 0)
    check_choice("merge", merge, tuple(MERGES))
    if interval_s > duration_s:
        raise ParameterError("interval", f"must be <= duration ({duration_s:g} s), got {interval_s:g} s")
    update_at_s = duration_s / 10 if update_at is None else update_at
    if isinstance(update_at_s, bool) or not isinstance(update_at_s, numbers.Real) \
            or not 0 <= update_at_s < duration_s:
        raise ParameterError("update_at", f"must be seconds in [0, duration={duration_s:g}), got {update_at!r}")
    return endpoints, interval_s, duration_s, float(loss), fanout, seed, merge, float(update_at_s)


async def _run(n, interval_s, duration_s, loss, fanout, seed, rule, update_at_s, stop_when_converged, started):
    loop = asyncio.get_running_loop()
    # One seed, one independent stream per endpoint (numpy's SeedSequence spawning);
    # random.Random draws peers ~20x faster than Generator.choice for these tiny samples.
    streams = np.random.SeedSequence(seed).spawn(n)
    eps = [Endpoint(i, rule, random.Random(int(s.generate_state(1)[0])), loss) for i, s in enumerate(streams)]
    transports = []
    try:
        for ep in eps:
            t, _ = await loop.create_datagram_endpoint(lambda ep=ep: ep, local_addr=(HOST, 0),
                                                       family=socket.AF_INET)
            transports.append(t)
        addrs = [t.get_extra_info("sockname")[:2] for t in transports]
        if started is not None:
            started(addrs)
        start = time.perf_counter()
        deadline = start + duration_s
        done = asyncio.Event()

        async def tick(i: int):
            ep = eps[i]
            peers = [a for j, a in enumerate(addrs) if j != i]
            # Spread first sends over one interval so the endpoints do not beat in step.
            next_t = start + interval_s * float(ep.rng.random())
            while True:
                await asyncio.sleep(max(0.0, next_t - time.perf_counter()))
                now = time.perf_counter()
                if done.is_set() or now >= deadline:
                    return
                ep.gossip(peers, fanout)
                # A late tick is not made up with a burst: the next one is one interval on.
                next_t = max(next_t + interval_s, now)

        async def change():
            await asyncio.sleep(max(0.0, start + update_at_s - time.perf_counter()))
            knew = sum(ep.state_of(eps[0].node_id) is not None for ep in eps[1:])
            gen = eps[0].update(busy_gpus=BUSY_AFTER)
            t_update = time.perf_counter()
            for ep in eps:
                ep.watch = (eps[0].node_id, gen)
                ep._check_seen()
            while stop_when_converged and time.perf_counter() < deadline:
                if all(not math.isnan(ep.seen_at) for ep in eps):
                    done.set()
                    break
                await asyncio.sleep(min(interval_s, 0.005))
            return t_update, knew

        tasks = [asyncio.create_task(tick(i)) for i in range(n)]
        t_update, knew = await change()
        await asyncio.gather(*tasks)
        wall = time.perf_counter() - start
    finally:
        for t in transports:
            t.close()
    return eps, t_update, knew, wall


def run_live(endpoints: int = 16, interval="10ms", duration="2s", loss: float = 0.0, fanout: int = 3,
             seed: int = 0, *, merge: str = "lww", update_at: float | None = None,
             stop_when_converged: bool = True, started=None) -> LiveResult:
    """Run ``endpoints`` UDP gossip endpoints on 127.0.0.1 for at most ``duration``.

    Parameters
    ----------
    endpoints : int
        Endpoints (2..64), named ``e0``, ``e1``, ...
    interval, duration : str or float
        Gossip period and run length: ``"10ms"``, ``"2s"`` or seconds; both > 0,
        interval <= duration.
    loss : float
        Probability in [0, 1) that a datagram is dropped at the sender.
    fanout : int
        Peers each endpoint sends to per interval (1..endpoints-1).
    seed : int
        Seeds the per-endpoint peer choices and losses.
    merge : {"lww", "article", "vc"}
        The merge rule the endpoints use.
    update_at : float, optional
        Seconds after start when ``e0`` updates its state (default duration / 10).
    stop_when_converged : bool
        Stop as soon as every endpoint has the update (default) rather than at ``duration``.
    started : callable, optional
        Called with the list of endpoint addresses once the sockets are bound (tests use it
        to aim datagrams at the endpoints).
    """
    n, interval_s, duration_s, loss, fanout, seed, merge, update_at_s = check_live_parameters(
        endpoints, interval, duration, loss, fanout, seed, merge, update_at)
    eps, t_update, knew, wall = asyncio.run(_run(n, interval_s, duration_s, loss, fanout, seed, merge,
                                           update_at_s, bool(stop_when_converged), started))
    seen = tuple(ep.seen_at - t_update if not math.isnan(ep.seen_at) else math.nan for ep in eps)
    converged = not any(math.isnan(t) for t in seen)
    reasons = collections.Counter()
    for ep in eps:
        reasons.update(ep.counters.malformed)
    truth = view_of(eps[0].own_state())
    phantom = sum(bool(phantom_busy({"e0": ep.state_of("e0")}, truth)) for ep in eps[1:]
                  if ep.state_of("e0") is not None)
    total = lambda name: sum(getattr(ep.counters, name) for ep in eps)  # noqa: E731
    return LiveResult(
        endpoints=n, interval_s=interval_s, duration_s=duration_s, loss=loss, fanout=fanout,
        seed=seed, merge=merge, update_at_s=update_at_s, converged=converged,
        convergence_time_s=max(seen) if converged else math.nan, seen_after_s=seen,
        datagrams_sent=total("sent"), datagrams_received=total("received"),
        dropped_loss=total("dropped_loss"), dropped_malformed=sum(reasons.values()),
        malformed_by_reason=dict(reasons), merges=total("merges"), knew_old_state=knew,
        phantom_busy_endpoints=phantom, bytes_sent=total("bytes_sent"),
        bytes_received=total("bytes_received"), wall_s=wall)
