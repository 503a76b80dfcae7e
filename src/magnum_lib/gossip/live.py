"""Live gossip: real endpoints exchanging UDP datagrams on 127.0.0.1 with asyncio.

One event loop in one process runs ``endpoints`` endpoints, each with its own socket on an
ephemeral port. Every ``interval`` each endpoint sends its view (as much as fits in one
datagram, see :mod:`magnum_lib.gossip.wire`) to ``fanout`` random peers; a receiver merges
it into its view with the same merge function the rest of the library uses
(:func:`~magnum_lib.gossip.merge.merge_lww` by default). At ``update_at`` endpoint ``e0``
changes its state (generation + 1); the run measures, with ``time.perf_counter``, how long
it takes until every endpoint holds exactly the state ``e0`` holds. Loss is injected at
the sender: each datagram is dropped with probability ``loss`` (seeded). Malformed
datagrams are dropped and counted per endpoint; they never stop an endpoint. Sockets are
always closed.

No datagram is trusted. Each endpoint is given the membership (``e0`` .. ``e{E-1}``, all at
generation 0) at start and refuses, whole, any well-formed datagram that

* comes from a sender that is not a member, or that claims to be the receiver
  (reason ``"sender"``);
* carries state for a node that is not a member, or a vector clock naming a writer that is
  not one (``"member"``): phantom ids never enter a view, so a view holds at most ``E``
  entries;
* carries a generation (or, for vector clocks, a clock counter) above what time allows
  (``"generation"``): an owner changes its state at most :data:`MAX_UPDATES_PER_INTERVAL`
  times per interval, so after ``t`` seconds no honest generation exceeds
  ``MAX_UPDATES_PER_INTERVAL * (floor(t / interval) + 1)`` (the ``+ 1`` is one interval of
  slack for clock skew and a send racing a tick). A forged ``2**63 - 1`` is refused.

Every refusal is counted by reason (``refused_by_reason``). The one-datagram-per-peer cache
that skips re-merging a repeated datagram holds member addresses only, so it is bounded
too. A datagram whose sender id is not the member sending from that address (each member's
id is tied to its endpoint's address, :data:`BIND_SENDER`) is refused (``"sender"``), so a
forger on another socket cannot speak for a member. Convergence is judged on the members'
own states: an endpoint counts as having the update only when its entry for ``e0`` has
``e0``'s generation and (for lww and vc) equals ``e0``'s state, and the run converged only
if, at the end, every endpoint holds every member's actual state (a forged record for any
member, not only ``e0``, is "not converged" rather than a false success).

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

from magnum_lib.base.validate import ParameterError, check_choice, check_int, parse_param
from magnum_lib.gossip.merge import merge_article, merge_lww, merge_vc, phantom_busy, resolve, vc_view, write_vc
from magnum_lib.gossip.state import NodeState, bitmap_of, view_of
from magnum_lib.gossip.wire import KIND_STATES, KIND_VERSIONED, MAX_DATAGRAM, WireError, decode, entry_bytes, pack
from magnum_lib.units import parse_duration

MAX_ENDPOINTS = 64
MERGES = {"lww": merge_lww, "article": merge_article, "vc": merge_vc}
HOST = "127.0.0.1"
#: Tie each member id to the address its endpoint sends from (False: any address may use any
#: member id, as a forger who can spoof source addresses; tests of the convergence judgement).
BIND_SENDER = True
GPUS = 8
BUSY_BEFORE, BUSY_AFTER = (0, 1, 2, 3), (2, 3, 4)  # e0's update frees GPUs 0 and 1
MAX_UPDATES_PER_INTERVAL = 1  # an owner bumps its generation at most once per interval
REFUSALS = ("sender", "member", "generation")
MAX_DURATION_NS = 600 * 10**9  # a live run holds sockets and a core: keep it bounded
RCVBUF = 1 << 20  # bytes per socket requested


@dataclass(frozen=True)
class LiveResult:
    """Outcome of :func:`run_live` (counters summed over endpoints).

    ``convergence_time_s`` is the real time from the update until the last endpoint held
    ``e0``'s new state (nan when not converged); ``seen_after_s[i]`` is that time for
    endpoint ``i`` (nan if it never saw it), ready to plot. ``malformed_by_reason`` splits
    ``dropped_malformed`` by :data:`magnum_lib.gossip.wire.REASONS` (plus ``"error"`` for
    anything unexpected); ``refused_by_reason`` splits ``dropped_refused`` (well-formed but
    untrusted datagrams) by :data:`REFUSALS`. ``max_view_entries`` is the largest view any
    endpoint held during the run (at most ``endpoints``). ``datagrams_sent -
    datagrams_received`` is what was still in flight at the end (or, on an overloaded
    machine, overflowed a socket buffer).

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
    dropped_refused: int
    refused_by_reason: dict
    max_view_entries: int
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


@dataclass
class Counters:
    sent: int = 0
    received: int = 0
    dropped_loss: int = 0
    malformed: collections.Counter = field(default_factory=collections.Counter)
    refused: collections.Counter = field(default_factory=collections.Counter)
    max_view: int = 1
    merges: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0


class Refused(Exception):
    """A well-formed datagram this endpoint does not trust; ``reason`` is one of REFUSALS."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class Endpoint(asyncio.DatagramProtocol):
    """One gossiping node: a socket, its own state, its view of the others, counters.

    ``members`` are the node ids it accepts state about; ``start`` (perf_counter seconds)
    and ``interval_s`` give the generation bound (see the module docstring).
    """

    def __init__(self, index: int, rule: str, rng: random.Random, loss: float, *,
                 members: frozenset, start: float, interval_s: float):
        self.node_id = f"e{index}"
        self.members = members
        self.start = start
        self.interval_s = interval_s
        self.peer_addrs: frozenset = frozenset()  # set once the sockets are bound
        self.member_addrs: dict = {}              # member id -> the address it sends from
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
        self._last: dict = {}                   # member address -> its last merged datagram
        self.watch: NodeState | None = None     # the state whose arrival we time
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
            self._check_trusted(msg, addr)
            # The owner is the only writer of its own record: ignore claims about us.
            remote = {n: e for n, e in msg.view.items() if n != self.node_id}
            merged = self.merge(self.view, remote)
            c.merges += 1
            if addr in self.peer_addrs:  # bounded: one entry per member
                self._last[addr] = data
            if merged != self.view:  # C-level compare, identical entries short-cut
                self.view = merged
                self._datagram = None
                c.max_view = max(c.max_view, len(merged))
        except WireError as exc:
            c.malformed[exc.reason] += 1
            return
        except Refused as exc:
            c.refused[exc.reason] += 1
            return
        except Exception:  # never let one datagram kill the endpoint
            c.malformed["error"] += 1
            return
        self._check_seen()

    def generation_limit(self, now: float) -> int:
        """The highest generation an honest member can have reached by ``now``."""
        return MAX_UPDATES_PER_INTERVAL * (int(max(0.0, now - self.start) / self.interval_s) + 1)

    def _check_trusted(self, msg, addr=None) -> None:
        """Raise :class:`Refused` unless every claim in ``msg`` is one a member could make
        (from ``addr``, the datagram's source: a member's id only from that member's address)."""
        if msg.sender not in self.members or msg.sender == self.node_id:
            raise Refused("sender")
        if not self.members.issuperset(msg.view):
            raise Refused("member")
        limit = self.generation_limit(time.perf_counter())
        for entry in msg.view.values():
            if isinstance(entry, NodeState):
                if entry.generation > limit:
                    raise Refused("generation")
                continue
            for v in entry:  # vector clocks: every writer a member, every counter in time
                if not self.members.issuperset(v.clock):
                    raise Refused("member")
                if v.state.generation > limit or any(count > limit for count in v.clock.values()):
                    raise Refused("generation")
        if BIND_SENDER and self.member_addrs and self.member_addrs.get(msg.sender) != tuple(addr or ())[:2]:
            raise Refused("sender")


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

    def holds(self, truth: NodeState) -> bool:
        """Whether this endpoint reads ``truth`` (its owner's actual state) for its node."""
        s = self.state_of(truth.node_id)
        if s is None or s.generation != truth.generation:
            return False
        # The article's merge ORs busy bitmaps, so its endpoints can agree on the generation
        # only; phantom_busy_endpoints counts the content they got wrong.
        return self.rule == "article" or s == truth

    def _check_seen(self):
        if self.watch is not None and math.isnan(self.seen_at) and self.holds(self.watch):
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


def _all_hold(eps) -> bool:
    """Whether every endpoint reads every member's actual state (its owner's own)."""
    truths = [ep.own_state() for ep in eps]
    return all(ep.holds(t) for ep in eps for t in truths)


async def _run(n, interval_s, duration_s, loss, fanout, seed, rule, update_at_s, stop_when_converged, started):
    loop = asyncio.get_running_loop()
    # One seed, one independent stream per endpoint (numpy's SeedSequence spawning);
    # random.Random draws peers ~20x faster than Generator.choice for these tiny samples.
    streams = np.random.SeedSequence(seed).spawn(n)
    members = frozenset(f"e{i}" for i in range(n))
    start = time.perf_counter()  # reset below, once the sockets are bound
    eps = [Endpoint(i, rule, random.Random(int(s.generate_state(1)[0])), loss, members=members,
                    start=start, interval_s=interval_s) for i, s in enumerate(streams)]
    transports = []
    try:
        for ep in eps:
            t, _ = await loop.create_datagram_endpoint(lambda ep=ep: ep, local_addr=(HOST, 0),
                                                       family=socket.AF_INET)
            transports.append(t)
        addrs = [t.get_extra_info("sockname")[:2] for t in transports]
        for ep in eps:
            ep.peer_addrs = frozenset(addrs)
            ep.member_addrs = {other.node_id: a for other, a in zip(eps, addrs, strict=True)}
        if started is not None:
            started(addrs)
        start = time.perf_counter()
        for ep in eps:
            ep.start = start
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
            eps[0].update(busy_gpus=BUSY_AFTER)
            t_update = time.perf_counter()
            for ep in eps:
                ep.watch = eps[0].own_state()
                ep._check_seen()
            while stop_when_converged and time.perf_counter() < deadline:
                if all(not math.isnan(ep.seen_at) for ep in eps) and _all_hold(eps):
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
    # Seen once is not enough: every endpoint must still hold every member's actual state at the end.
    converged = not any(math.isnan(t) for t in seen) and _all_hold(eps)
    reasons, refusals = collections.Counter(), collections.Counter()
    for ep in eps:
        reasons.update(ep.counters.malformed)
        refusals.update(ep.counters.refused)
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
        malformed_by_reason=dict(reasons), dropped_refused=sum(refusals.values()),
        refused_by_reason=dict(refusals), max_view_entries=max(ep.counters.max_view for ep in eps),
        merges=total("merges"), knew_old_state=knew,
        phantom_busy_endpoints=phantom, bytes_sent=total("bytes_sent"),
        bytes_received=total("bytes_received"), wall_s=wall)
