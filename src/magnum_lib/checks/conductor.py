"""Claim checks of notebook 03 (the Conductor): C13, C14, C15, C16, C33.

They run the kit's regional layer (``magnum_lib.regional``): the round-based comparison of
speculative leases with a lock (C13, C14, C33), the node-side validator's preemption and
its checkpoint (C15), and the ``faux-magnum lease`` command itself (C16). C17 and C26 are
cited in notebook 03 but checked with notebook 07 (``magnum_lib.checks`` registers them
there); C23 is not testable here (see ``claims.yaml``).
"""
from __future__ import annotations

import contextlib
import io
import json

from magnum_lib import cli
from magnum_lib.base.validate import check_int
from magnum_lib.checks.check import ClaimCheck
from magnum_lib.claims import NOT_REPRODUCED, REFUTED, REPRODUCED, Verdict
from magnum_lib.regional.baselines import simulate_scheduling
from magnum_lib.regional.lease import LeaseIds, issue_lease
from magnum_lib.regional.validator import NodeState, validate
from magnum_lib.units import format_bandwidth, parse_bandwidth, parse_interconnect, parse_size

ARTICLE_ROUND_MS = 10.0          # C13: "under 10 ms" per scheduling round
ARTICLE_PREEMPT_MS = 1.0         # C15, C33: "within 1ms" / "a preemption in <1ms"
NEGLIGIBLE_SHARE = 0.02          # C33: "negligible", read as at most 2% of the GPU time
FASTER = 1.5                     # C14: a lease must decide at least 1.5x faster than the lock
# The fastest path off the GPU in the kit's interconnect table: PCIe 5.0 x16, per direction (63 GB/s).
PCIE5_X16_BPS = parse_interconnect("pcie_5").per_direction_Bps
# The region of notebook 03's section 2: 64 nodes of 8 H100s, 8 schedulers, 1 ms rounds.
_REGION = {"nodes": 64, "schedulers": 8, "rounds": 300, "seed": 1}


def _run(mode: str, **kw) -> dict:
    return simulate_scheduling(mode, check_invariants=True, **kw).to_dict()


# --- C13: under 10 ms per round ------------------------------------------------------------
def _measure_c13(nodes, schedulers, rounds, seed, load, rtt) -> dict:
    r = _run("speculative", nodes=nodes, schedulers=schedulers, rounds=rounds, seed=seed, load=load, rtt=rtt)
    attempts = r["conflicts"] + r["decisions"]
    return {"rtt": rtt, "load": load, "mean_ms": r["decision_latency_mean_s"] * 1e3,
            "p99_ms": r["decision_latency_p99_s"] * 1e3, "decisions": r["decisions"],
            "conflicts_per_attempt": r["conflicts"] / attempts if attempts else 0.0}


def _judge_c13(m: dict) -> Verdict:
    head = (f"a speculative lease (20 µs decision + {m['rtt']} round trip per attempt, retried on refusal) is "
            f"decided in {m['mean_ms']:.2f} ms on average, p99 {m['p99_ms']:.2f} ms, at load {m['load']:g} "
            f"with {m['conflicts_per_attempt']:.0%} of attempts refused")
    if m["p99_ms"] < ARTICLE_ROUND_MS:
        return Verdict("C13", REPRODUCED, f"{head}: under the article's 10 ms, "
                       f"{ARTICLE_ROUND_MS / m['p99_ms']:.0f}x inside it at the p99", m)
    return Verdict("C13", NOT_REPRODUCED, f"{head}: over the article's 10 ms (the round trip dominates)", m)


# --- C14: leases, not locks; the node validates --------------------------------------------
def _measure_c14(nodes, schedulers, rounds, seed, load) -> dict:
    kw = dict(nodes=nodes, schedulers=schedulers, rounds=rounds, seed=seed, load=load)
    spec, lock = _run("speculative", **kw), _run("pessimistic", **kw)   # invariants asserted each round
    return {"load": load, "spec_mean_ms": spec["decision_latency_mean_s"] * 1e3,
            "lock_mean_ms": lock["decision_latency_mean_s"] * 1e3,
            "spec_p99_ms": spec["decision_latency_p99_s"] * 1e3, "lock_p99_ms": lock["decision_latency_p99_s"] * 1e3,
            "caught": spec["conflicts"], "preemptions": spec["preemptions"], "decisions": spec["decisions"]}


def _judge_c14(m: dict) -> Verdict:
    speedup = m["lock_mean_ms"] / m["spec_mean_ms"]
    head = (f"at load {m['load']:g} the nodes refused or preempted for {m['caught']:,} of the unchecked leases "
            f"with no device ever held twice (checked every round), and a lease was decided in "
            f"{m['spec_mean_ms']:.2f} ms on average (p99 {m['spec_p99_ms']:.2f}) against {m['lock_mean_ms']:.2f} ms "
            f"(p99 {m['lock_p99_ms']:.2f}) behind a lock, {speedup:.1f}x")
    if m["caught"] > 0 and speedup >= FASTER:
        return Verdict("C14", REPRODUCED, f"{head}: validation on the node keeps the state right and the "
                       "scheduler fast", m)
    return Verdict("C14", NOT_REPRODUCED, f"{head}: here a lock costs about as little, so leases buy nothing", m)


# --- C15: the lowest-priority job is preempted within 1 ms using GPU checkpointing ---------
def _measure_c15(memory, checkpoint_bandwidth) -> dict:
    """One 8-H100 node holding two 4-GPU jobs (priorities 1 and 0); a priority-5 lease for 4 GPUs."""
    node = NodeState.uniform(1, "h100_sxm", 8, checkpoint_bandwidth=checkpoint_bandwidth)
    ids = LeaseIds("c15")
    for job, prio in (("mid_priority", 1), ("low_priority", 0)):
        r = validate(issue_lease(ids, job, 0, "h100", 4, memory, "nvlink_4", "10m"), node, 0, priority=prio)
        assert r.accepted, r.reason
    urgent = issue_lease(ids, "reels_infer_v4", 0, "h100", 4, memory, "nvlink_3", "100ms", now=1.0)
    res = validate(urgent, node, urgent.issue_time_ns, priority=5)
    victims = [p.job_id for p in res.preempted]
    ckpt_s = max((p.checkpoint_s for p in res.preempted), default=0.0)
    return {"memory_bytes": parse_size(memory), "bandwidth_Bps": parse_bandwidth(checkpoint_bandwidth),
            "bandwidth": checkpoint_bandwidth, "victims": victims, "checkpoint_ms": ckpt_s * 1e3,
            "reason": res.reason}


def _judge_c15(m: dict) -> Verdict:
    if m["victims"] != ["low_priority"]:
        return Verdict("C15", REFUTED, f"the validator evicted {m['victims']}, not the lowest-priority job", m)
    head = (f"the validator evicts the lowest-priority job and checkpoints its {m['memory_bytes'] / 1e9:g} GB per GPU "
            f"at {format_bandwidth(m['bandwidth_Bps'])} in {m['checkpoint_ms']:,.1f} ms")
    if m["checkpoint_ms"] <= ARTICLE_PREEMPT_MS:
        return Verdict("C15", REPRODUCED, f"{head}: within the article's 1 ms", m)
    return Verdict("C15", REFUTED, f"{head}: {m['checkpoint_ms'] / ARTICLE_PREEMPT_MS:,.0f}x the article's 1 ms "
                   f"(1 ms would need {m['memory_bytes'] / 1e-3 / 1e12:.0f} TB/s per GPU)", m)


# --- C33: the cost of a failure is negligible (a preemption in <1 ms) ----------------------
def _measure_c33(nodes, schedulers, rounds, seed, load, checkpoint_bandwidth) -> dict:
    r = _run("speculative", nodes=nodes, schedulers=schedulers, rounds=rounds, seed=seed, load=load,
             checkpoint_bandwidth=checkpoint_bandwidth)
    return {"bandwidth": checkpoint_bandwidth, "preemptions": r["preemptions"],
            "checkpoint_ms_mean": r["checkpoint_s_total"] / r["preemptions"] * 1e3 if r["preemptions"] else 0.0,
            "wasted_share": r["wasted_work_device_s"] / r["capacity_device_s"],
            "useful": r["utilization"], "held": r["held_utilization"]}


def _judge_c33(m: dict) -> Verdict:
    head = (f"{m['preemptions']} preemptions, each checkpoint {m['checkpoint_ms_mean']:,.1f} ms on average at "
            f"{m['bandwidth']}, waste {m['wasted_share']:.1%} of the GPU time (useful {m['useful']:.0%} of "
            f"{m['held']:.0%} held)")
    if m["checkpoint_ms_mean"] <= ARTICLE_PREEMPT_MS and m["wasted_share"] <= NEGLIGIBLE_SHARE:
        return Verdict("C33", REPRODUCED, f"{head}: negligible, as the article says", m)
    return Verdict("C33", REFUTED, f"{head}: a preemption is not <1 ms and its cost is not negligible", m)


# --- C16: the lease command ----------------------------------------------------------------
def _measure_c16(job_id, gpu_type, count, memory, interconnect, lease_timeout) -> dict:
    argv = ["lease", f"--job-id={job_id}", f"--gpu-type={gpu_type}", f"--count={check_int('count', count, 1)}",
            f"--memory={memory}", f"--interconnect={interconnect}", f"--lease_timeout={lease_timeout}", "--json"]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(argv)
    m = {"argv": argv, "status": status, "stderr": err.getvalue().strip()}
    if status == 0:
        lease = json.loads(out.getvalue())
        m.update(lease_id=lease["lease_id"], node_id=lease["node_id"], node=lease["node_name"],
                 expiry_after_ms=(lease["expires_at_ns"] - lease["issue_time_ns"]) / 1e6,
                 notes=lease["notes"])
    return m


def _judge_c16(m: dict) -> Verdict:
    if m["status"] != 0:
        return Verdict("C16", NOT_REPRODUCED, f"`faux-magnum {' '.join(m['argv'][:-1])}` exits {m['status']}: "
                       f"{m['stderr'][:120]}", m)
    return Verdict("C16", REPRODUCED, f"the article's exact command exits 0 with lease {m['lease_id']} on node "
                   f"{m['node_id']} ({m['node']}), expiring {m['expiry_after_ms']:g} ms after issue; it reads "
                   "nvlink_3 as a minimum, since every H100 has NVLink 4", m)


_LOAD = {"load": 0.9}
CHECKS = (
    ClaimCheck("C13", _measure_c13, _judge_c13, defaults={**_REGION, **_LOAD, "rtt": "100us"},
               perturbations=({"rtt": "20ms"},),
               about="decision latency of a speculative lease in the 64-node region, 100 µs round trips"),
    ClaimCheck("C14", _measure_c14, _judge_c14, defaults={**_REGION, **_LOAD},
               perturbations=({"load": 0.05},),
               about="unchecked leases validated by the nodes, against one lock on the true state"),
    ClaimCheck("C15", _measure_c15, _judge_c15, defaults={"memory": "80GB", "checkpoint_bandwidth": PCIE5_X16_BPS},
               perturbations=({"checkpoint_bandwidth": "100TB/s"}, {"memory": "50MB"}),
               about="the validator's preemption of an 80 GB-per-GPU job, checkpointed at PCIe 5 x16 peak"),
    ClaimCheck("C16", _measure_c16, _judge_c16,
               defaults={"job_id": "reels_infer_v4", "gpu_type": "h100", "count": 8, "memory": "80GB",
                         "interconnect": "nvlink_3", "lease_timeout": "100ms"},
               perturbations=({"interconnect": "nvlink_5"}, {"count": 9}),
               about="the article's command, run through the kit's CLI"),
    ClaimCheck("C33", _measure_c33, _judge_c33, defaults={**_REGION, **_LOAD, "checkpoint_bandwidth": "25GB/s"},
               perturbations=({"checkpoint_bandwidth": "100TB/s"},),
               about="what the speculative region's preemptions cost, with checkpoints as simulated time"),
)
