"""The evolution from a Borg-like scheduler to Faux-MAGNUM v2 (C39-C43), five presets of one simulator.

Each preset is the previous one with the changes listed (see :data:`~magnum_lib.sim.config.PRESETS`):

=============  =====================================================================  ==========
preset         what changes                                                           article
=============  =====================================================================  ==========
borg_like      one central scheduler per cell, scans every node of its cell per        ~1 s (C39)
               decision (5 us + 400 ns per node), owns the state (fresh view), no
               preemption
borg_plus      + priority preemption of training (Borg kills the victim: no            ~200 ms
               checkpoint delay, the work since its last checkpoint is lost)           (C40)
cheetah        consistent hashing of requests to nodes (one ring point per node): no  p95 50 ms
               scan, no view; the owner queues whatever it is given; kill-preemption   (C41)
magnum_v1      regional schedulers (4) in rounds every 3.7 ms (C25) on gossip views   15 ms (C42)
               + Bloom digest, speculative leases, refusals retried, checkpointed
               preemption at 25 GB/s; the global planner's soft hints (C8-C12)
magnum_v2      + cost-model dispatch (types meeting the SLA first), graph             3.7 ms
               pre-reservation (no 10 ms graph load on MTIA), the node Bouncer         (C43)
               (micro-preemption in 20 us, 250 us decision quantum), tail hedging
=============  =====================================================================  ==========

Measured on one workload (:func:`compare`: the ``region`` cluster, 5,000 nodes, load 0.3 =
about 300 k requests/s, 1 simulated second, seed 0; ``python -m magnum_lib.sim.evolution``),
decision latency p95: borg_like 0.92 s, borg_plus 0.92 s, cheetah 0.20 s, magnum_v1 3.6 ms,
magnum_v2 3.7 ms (they depend on the run length where a queue grows without bound). Without
the global planner's hints (:func:`planner_effect`, policy "two-choices") magnum_v1's p95 is
still 3.6 ms and magnum_v2's 3.7 ms; the hints cut v1's refused leases from 0.18% to 0.0025%.

The planner (layer 1) plans at t = 0 from the region's snapshot and every 30 s after (C8), so
a 1 s run keeps its t = 0 hints: per class, nodes with at least half their devices free,
enough for 1.5x the devices the class keeps busy (:mod:`magnum_lib.planner.streams`);
the schedulers try the better of two hinted nodes first and fall back to their own
two-choices placement. v1's planner is heterogeneity-blind like its schedulers (any
type); v2's asks, like v2's pools, for the types meeting each class's SLA. Which assumptions give the article's
figure, step by step:

* borg_like, ~1 s: **set by an input, the run length** (``checks.run("C39")``), not by a
  per-decision cost. A cell scheduler does at most 1 / (5 us + 1,250 x 400 ns) ~ 2,000
  decisions/s; at the region's traffic it falls behind at once, and its p95 is about 0.9x
  the elapsed time. Over a 1 s run that is "about a second"; over a minute it is tens of
  seconds. A stable 1 s would need a per-node cost of ~0.8 ms (implausible) or a far lower rate.
* borg_plus, ~200 ms: **not reproduced** (``checks.run("C40")``). Preemption frees devices
  held by training but does nothing for a saturated central scanner: its p95 equals
  borg_like's, run for run. A 5x faster scan (c_node 80 ns) gives a p95 near 240 ms on one
  cell over 0.3 s, but over the 13% of requests that started: still saturated. A scan that
  keeps up (under ~6.5 ns per node at load 0.3 on one cell) has a p95 under 1 ms. No scan
  speed gives a *steady* 200 ms except one tuned to the edge of saturation.

What ``borg_like`` models, and what real Borg (Verma et al., "Large-scale cluster management
at Google with Borg", EuroSys 2015, section 3.4) does that it does not: the preset scores
every node of its cell for every request (400 ns per node, ours). Borg caches scores until
a machine or task changes (*score caching*), scores once per group of tasks with identical
requirements (*equivalence classes*), and examines machines in random order only until it
has enough feasible candidates (*relaxed randomization*). The preset is Borg without those
three: a model of the cost of a full central scan, which is the article's story, not of
Borg's measured latency.
* cheetah, p95 50 ms: the **cause is reproduced** (p95 set by imbalance: the same preset
  with two-choices placement has a p95 of 0.09 ms; with one ring point per node the
  arc shares are exponential, so at load 0.3 the nodes owning arcs > 3.3x the mean,
  about e^-3.3 = 4 % of nodes, are overloaded and their queues grow). The **figure is
  not**: ours is ~200 ms and grows with the run; 50 ms needs many virtual nodes
  or a lower load (``ring_vnodes``, ``load``). Its p95 grows with the run (12.5, 38.3,
  125.7, 247.6 ms after 0.15, 0.3, 0.6, 1 s on one cell): the figure is **set by an input,
  the run length** (``checks.run("C41")``).
* magnum_v1, 15 ms: **not reproduced**: p50 1.95 ms (half a 3.7 ms round), p95 3.6 ms,
  p99 3.7 ms, with or without the planner's hints (3.59 ms with, 3.61 ms without). Gossip
  entries carry a version, so a stale snapshot never undoes what a lease reply told the
  scheduler, and refusals stay rare; an earlier model without versions gave 69 ms. The
  hints steer v1's random draws away from nodes held by training: refused leases 0.18%
  without, 0.0025% with, and 1% less energy per request. v1's 15 ms would need stale views
  that undo lease replies (no versions), much higher load, or a slower round: its p95 is
  0.95 x round + 0.07 ms for rounds of 0.5-10 ms, so a 15.7 ms round gives 15 ms, an input
  (``checks.run("C42")``). The v1 -> v2 step shows in the mean and the p99.9 (one cell, 0.3 s:
  mean 5.56 -> 2.05 ms, p99.9 2.56 s -> 3.99 ms: v1's checkpointed preemptions), not the p95.
* magnum_v2, 3.7 ms: **set by an input, the round period** (``checks.run("C43")``): p95 3.72 ms
  with C25's round, 0.95 x round + 0.25 ms for every round of 0.5-10 ms. A request waits on
  average half a round (1.85 ms), at most one round (3.7 ms), plus RTT (0.1 ms) and the
  250 us quantum; micro-preemption (20 us) and cost-model placement keep retries and
  slow devices out of the tail. The figure follows from the round period, not from
  anything the scheduler computes. v2 is a tenth of a millisecond *above* v1 at p95: the
  250 us decision quantum. The hints change little in v2, whose pools already follow the
  cost model: p95 3.716 ms with and without, energy per request 17.54 J against 17.56 J,
  no lease refused in either run. How much the hints help depends on how many nodes they name
  (``hint_headroom``, 1.5x the devices a class keeps busy by default).
* graph pre-reservation (v2): the class's static graph (``recsys_ours``, 8.5 GB) is
  reserved on the MTIA nodes where it fits beside the nodes' other tenants
  (:mod:`magnum_lib.graph.residency`, 8 tenant graphs per node): 97% of the region's MTIA
  nodes serve mtia_graph without a graph load; the others cannot serve it.
"""
from __future__ import annotations

from magnum_lib.sim.config import EVOLUTION, make_config
from magnum_lib.sim.run import run_config

__all__ = ["ARTICLE_FIGURES_MS", "WORKLOAD", "compare", "cheetah_vs_two_choices", "planner_effect"]

#: The article's latency per step, milliseconds (C39-C43; C41 names its p95).
ARTICLE_FIGURES_MS = {"borg_like": 1000.0, "borg_plus": 200.0, "cheetah": 50.0, "magnum_v1": 15.0,
                      "magnum_v2": 3.7}
#: The one workload of the comparison (knobs common to the five presets).
WORKLOAD = dict(cluster="region", duration_s=1.0, load=0.3, seed=0)


def _row(preset: str, out: dict) -> dict:
    d = out["decision_latency_ms"]
    return {"preset": preset, "p50_ms": d["p50"], "p95_ms": d["p95"], "p99_ms": d["p99"],
            "article_ms": ARTICLE_FIGURES_MS.get(preset),
            "breakdown_mean_ms": {k: v["mean"] for k, v in d["breakdown"].items()},
            "started": out["requests"]["started"], "requests": out["requests"]["total"],
            "lease_failure_rate": out["lease_failure_rate"], "sla_attainment": out["sla_attainment"],
            "energy_per_request_j": out["energy_per_request_j"], "wall_s": out["wall_s"]}


def compare(presets=EVOLUTION, backend=None, **workload) -> list[dict]:
    """Run each preset on the same workload (:data:`WORKLOAD`, overridden by ``workload``).

    Percentiles are over the requests that started; ``started`` / ``requests`` says how many
    (a saturated preset leaves most of them waiting, and their latency is at least their age).
    """
    kw = {**WORKLOAD, **workload}
    cluster = kw.pop("cluster")
    return [_row(p, run_config(make_config(p, cluster, **kw), backend=backend)) for p in presets]


def cheetah_vs_two_choices(backend=None, **workload) -> dict:
    """Cheetah beside the same preset with two-choices placement: imbalance sets its p95."""
    kw = {**WORKLOAD, **workload}
    cluster = kw.pop("cluster")
    ring = run_config(make_config("cheetah", cluster, **kw), backend=backend)
    two = run_config(make_config("cheetah", cluster, policy="two-choices", **kw), backend=backend)
    return {"hash": _row("cheetah", ring), "two_choices": _row("cheetah+two-choices", two)}


def planner_effect(presets=("magnum_v1", "magnum_v2"), backend=None, **workload) -> dict:
    """Each preset with the global planner's hints (its default, policy "hints") and without
    (policy "two-choices": the regional schedulers alone), on the same workload."""
    kw = {**WORKLOAD, **workload}
    cluster = kw.pop("cluster")
    return {p: {"hints": _row(p, run_config(make_config(p, cluster, **kw), backend=backend)),
                "no_hints": _row(p + " (no planner)", run_config(make_config(p, cluster, policy="two-choices", **kw),
                                                          backend=backend))}
            for p in presets}


if __name__ == "__main__":  # pragma: no cover - the figures quoted above
    import json
    print(json.dumps({"compare": compare(), "cheetah": cheetah_vs_two_choices(), "planner": planner_effect()},
                     indent=1))
