"""``faux-magnum replay``: replay a real trace under a scheduling policy (job level).

``--las-tiresias-jump`` makes LAS (:class:`~magnum_lib.replay.policies.TiresiasLAS`) wake
for demotions as Tiresias' simulator does (``run_sim.py``, ``jump_time =
int(math.ceil((queue_limit - executed_time) / num_gpu) + event_time)``), as published:
under Python 2.7, which its README requires, without ``from __future__ import division``,
so ``/`` floors on its integers and ``math.ceil`` changes nothing. Without the flag LAS
demotes exactly at the threshold.
"""
from __future__ import annotations

import math

from magnum_lib.base.validate import ParameterError, excerpt, parse_param
from magnum_lib.commands._common import (
    SEED,
    Duration,
    Float,
    InputFile,
    Int,
    Interrupted,
    Size,
    Text,
    int_value,
    json_text,
    print_table,
)

TRACES = ("philly", "tiresias", "alibaba", "gavel", "sample")
S = 10**9  # ns per second, for the duration flags' ranges


def policy_choices() -> tuple:
    """``--policy`` choices: the names of the built-in registry (one list, kept there)."""
    from magnum_lib.replay.registry import names

    return names()


def add(subparsers) -> None:
    p = subparsers.add_parser(
        "replay", help="replay a real trace (Philly, Tiresias, Alibaba, Gavel) under a policy",
        description="Job-level replay: jobs arrive, wait, run as gangs, may be preempted, "
                    "finish; print JCT, queueing, utilization and fairness figures.")
    p.add_argument("--trace", default="philly", choices=TRACES, help="which trace (default: philly)")
    p.add_argument("--trace-file", metavar="PATH", type=InputFile("trace file", 2**28),
                   help="read the trace from this file")
    p.add_argument("--vc", type=Text(r"[0-9A-Za-z]+", "a Philly virtual cluster id such as 0e4a51", max_chars=16,
                                     example="0e4a51"), help="Philly virtual cluster id (e.g. 0e4a51)")
    p.add_argument("--min-duration", default="0s", metavar="D", type=Duration(0, 10**9 * S),
                   help="keep jobs running >= D (e.g. 60s)")
    p.add_argument("--gpu-counts", metavar="LIST", type=Text(r"\d{1,5}(,\d{1,5})*", "comma-separated GPU counts such as "
                                                            "1,2,4,8", max_chars=200, example="1,2"),
                   help="keep jobs with these GPU counts, e.g. 1,2,4,8")
    p.add_argument("--max-jobs", metavar="N", type=Int(1, 100_000_000),
                   help="keep the first N jobs after the filters (Philly: the first N rows of the file "
                        "that pass them, in file order; reading stops there)")
    p.add_argument("--jobs", default="200", metavar="N", type=Int(1, 10_000_000),
                   help="Gavel trace: jobs to generate (default 200)")
    p.add_argument("--jobs-per-hour", default="10", metavar="R", type=Float(0.0, 1e9, lo_open=True),
                   help="Gavel trace: arrival rate (default 10)")
    p.add_argument("--nodes", metavar="N", type=Int(1, 1_000_000), help="cluster nodes (default: the trace's own cluster)")
    p.add_argument("--gpus-per-node", default=None, metavar="G", type=Int(1, 1024),
                   help="GPUs per node (default 8; Tiresias 4)")
    p.add_argument("--gpu-types", metavar="SPEC",
                   type=Text(r"\w{1,32}:\d{1,7}(,\w{1,32}:\d{1,7})*", "TYPE:COUNT pairs such as v100:36,k80:36",
                             max_chars=400, example="v100:4"),
                   help="Gavel trace: GPUs per type, e.g. v100:36,p100:36,k80:36 (default 8 each)")
    p.add_argument("--placement", default="pooled",
                   choices=["pooled", "consolidated", "spread", "random"], help="(default: pooled)")
    p.add_argument("--policy", default="fifo-strict", choices=policy_choices(),
                   help="(default: fifo-strict); gavel-fifo, gavel-rounds(-blind): Gavel's own simulator's "
                        "round mechanism, job for job")
    p.add_argument("--policy-file", metavar="FILE.py:NAME", type=Text(r"[^\x00-\x1f]+\.py:[A-Za-z_]\w*",
                                                                     "FILE.py:NAME", max_chars=4096, example="p.py:P"),
                   help="your policy (class or function) instead")
    p.add_argument("--las-thresholds", default="3250,7200", metavar="LIST",
                   type=Text(r"\d{1,12}(\.\d{1,9})?(,\d{1,12}(\.\d{1,9})?)*", "comma-separated GPU-seconds such as "
                             "3250,7200", max_chars=200, example="3250"),
                   help="LAS queue thresholds in GPU-seconds (default Tiresias' 3250,7200)")
    p.add_argument("--promote-knob", default="0", metavar="K", type=Float(0.0, 1e6),
                   help="LAS starvation avoidance: back to queue 0 after waiting K x run time (0 = off)")
    p.add_argument("--las-tiresias-jump", action="store_true",
                   help="LAS demotion wake-ups by Tiresias' published formula, for job-for-job agreement: "
                        "run_sim.py's int(math.ceil((limit - executed_time) / num_gpu)) under Python 2.7 "
                        "(its README's interpreter, no __future__ division), so / is floor division on its "
                        "integers and the ceil does nothing (e.g. 500 GPU-s, 8 GPUs, 10 s run: 61 s, not 62)")
    p.add_argument("--round", default="360s", metavar="D", type=Duration(10**6, 10**7 * S),
                   help="round length of gavel/ftf and Gavel's time_per_iteration for gavel-* (default 360s)")
    p.add_argument("--restore", default="0s", metavar="D", type=Duration(0, 86_400 * S),
                   help="checkpoint-restore time per resume")
    p.add_argument("--seed", default="0", metavar="S", type=SEED, help="random seed (default 0)")
    p.add_argument("--max-memory", default="4GiB", metavar="SIZE", type=Size(2**28, 2**50),
                   help="refuse a replay estimated to need more memory (default 4GiB)")
    p.add_argument("--max-wall", default="60s", metavar="D", type=Duration(10**9, 30 * 86_400 * S),
                   help="refuse a replay estimated to take longer (default 60s)")
    p.add_argument("--isolate", action="store_true",
                   help="run the replay (plug-in included) in a child process capped at --max-memory "
                        "and --max-wall (+30 s to start): a plug-in that crashes, leaks or hangs is "
                        "refused in one line (for the arena and autograders)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=_run)


def load_policy_file(spec: str):
    """``path.py:Name`` -> the object ``Name`` defined in that file (:mod:`magnum_lib.replay.plugin`)."""
    from magnum_lib.replay.plugin import load_policy_file as load

    return load(spec)


def _file_label(path: str) -> str:
    from magnum_lib.replay.plugin import _file_label as label

    return label(path)


def readable_s(seconds: float) -> str:
    """Seconds as printed, with hours or days beside them where those read better:
    ``2.59345e+06 s (30.0 days)``, ``7300 s (2.03 h)``, ``42.5 s``."""
    text = f"{seconds:.6g} s"
    if not math.isfinite(seconds):
        return text
    if abs(seconds) >= 2 * 86_400:
        return f"{text} ({seconds / 86_400:.3g} days)"
    if abs(seconds) >= 2 * 3600:
        return f"{text} ({seconds / 3600:.3g} h)"
    if abs(seconds) >= 120:
        return f"{text} ({seconds / 60:.3g} min)"
    return text


def _int_list(name, text):
    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ParameterError(name, f"must be comma-separated integers, got {excerpt(text)}") from None
    if not vals or min(vals) < 1:
        raise ParameterError(name, f"must be integers >= 1, got {excerpt(text)}")
    return vals


def _range(name, value, lo, hi):
    if not lo <= value <= hi:
        raise ParameterError(name, f"must be in [{lo}, {hi}], got {value}")
    return value


def build(args):
    """(jobs, cluster) for the parsed arguments."""
    from magnum_lib.replay import ReplayCluster
    from magnum_lib.replay import traces as T
    from magnum_lib.units import parse_duration

    min_dur = parse_param("min_duration", parse_duration, args.min_duration) / 1e9
    if min_dur < 0:
        raise ParameterError("min_duration", f"must be >= 0, got {args.min_duration}")
    counts = _int_list("gpu_counts", args.gpu_counts) if args.gpu_counts else None
    nodes = _range("nodes", int_value("nodes", args.nodes), 1, 1_000_000) if args.nodes else None
    gpn = _range("gpus_per_node", int_value("gpus_per_node", args.gpus_per_node), 1, 1024) \
        if args.gpus_per_node else None
    if args.trace != "philly" and args.vc:
        raise ParameterError("vc", "only applies to --trace philly")
    path = args.trace_file
    if path and not (args.trace == "philly" and args.max_jobs):  # (Philly --max-jobs stops early)
        _check_read(path, args)
    if args.trace == "philly":
        if args.vc is None and nodes is None:
            raise ParameterError("vc", "or --nodes is needed for the Philly trace (the VC's own "
                                       "cluster comes from Helios' philly_vc.csv)")
        m = _range("max_jobs", int_value("max_jobs", args.max_jobs), 1, 100_000_000) if args.max_jobs else None
        jobs = T.philly_jobs(args.vc, min_dur, counts, path=path, max_jobs=m)
        if nodes is None:
            cluster = ReplayCluster.philly_vc(args.vc, gpn or 8, min_gpus=int(jobs.num_gpus.max()))
        else:
            cluster = ReplayCluster.uniform(nodes, gpn or 8)
    elif args.trace == "tiresias":
        jobs = T.tiresias_jobs(path)
        cluster = ReplayCluster.uniform(nodes or 4, gpn or 4)
    elif args.trace == "alibaba":
        cluster = ReplayCluster.alibaba() if nodes is None else ReplayCluster.uniform(nodes, gpn or 8)
        jobs = T.alibaba_pods(cluster if nodes is None else None, path)
    elif args.trace == "gavel":
        n = _range("jobs", int_value("jobs", args.jobs), 1, 10_000_000)
        _check_generation(n, args)
        try:
            rate = float(args.jobs_per_hour)
        except ValueError:
            raise ParameterError("jobs_per_hour", f"must be a number, got {excerpt(args.jobs_per_hour)}") from None
        if not (rate > 0 and math.isfinite(rate)):
            raise ParameterError("jobs_per_hour", f"must be > 0, got {excerpt(args.jobs_per_hour)}")
        spec = {"v100": 8, "p100": 8, "k80": 8}
        if args.gpu_types:
            spec = {}
            for part in args.gpu_types.split(","):
                t, _, c = part.partition(":")
                if t.strip() in spec:
                    raise ParameterError("gpu_types", f"names {excerpt(t.strip())} twice; give each type once")
                spec[t.strip()] = _range("gpu_types", int_value("gpu_types", c), 1, 1_000_000)
        jobs = T.gavel_jobs(n, rate, int_value("seed", args.seed), tuple(spec), path)
        cluster = ReplayCluster.from_counts(spec, gpn or 4)
    else:
        jobs = T.sample_jobs(path)
        # default: 4 nodes, or enough to hold the largest job (the sample has a 64-GPU one)
        fit = -(-int(jobs.num_gpus.max()) // (gpn or 8)) if len(jobs) else 1
        cluster = ReplayCluster.uniform(nodes or max(4, fit), gpn or 8)
    if args.trace != "philly" and (counts or min_dur):
        keep = jobs.work_ns >= round(min_dur * 1e9)
        if counts:
            import numpy as np
            keep &= np.isin(jobs.num_gpus, counts)
        if not keep.any():
            raise ParameterError("gpu_counts", "and --min-duration keep no job")
        jobs = jobs.subset(keep).shifted()
    if args.max_jobs:
        m = _range("max_jobs", int_value("max_jobs", args.max_jobs), 1, 100_000_000)
        jobs = jobs.subset(slice(0, m))
    return jobs, cluster


def _no_ignored_flags(args) -> None:
    """Refuse a flag that the rest of the command line makes meaningless (it would be ignored)."""
    rounds = args.policy == "ftf" or args.policy.startswith("gavel")
    given = [(args.policy != "fifo-strict" and args.policy_file, "policy", "and --policy-file: give one of them"),
             (int(args.jobs) != 200 and args.trace != "gavel", "jobs", "only applies to --trace gavel"),
             (float(args.jobs_per_hour) != 10 and args.trace != "gavel", "jobs_per_hour", "only applies to --trace gavel"),
             (args.gpu_types and args.trace != "gavel", "gpu_types", "only applies to --trace gavel"),
             (args.round != "360s" and (args.policy_file or not rounds), "round",
              "only applies to the round-based policies (ftf, gavel*)"),
             ((args.las_thresholds != "3250,7200" or float(args.promote_knob) != 0 or args.las_tiresias_jump)
              and (args.policy_file or args.policy != "las"), "las_thresholds",
              "(and --promote-knob, --las-tiresias-jump) only apply to --policy las")]
    for bad, name, why in given:
        if bad:
            raise ParameterError(name, why)


def _check_generation(n: int, args) -> None:
    """Refuse, before generating them, more Gavel-style jobs than --max-wall allows."""
    from magnum_lib.replay.budget import GENERATE_JOB_S
    from magnum_lib.units import format_duration, parse_duration

    limit = parse_duration(args.max_wall) / 1e9
    if n * GENERATE_JOB_S > limit:
        raise ParameterError("jobs", f"{n:,} jobs take about {format_duration(int(n * GENERATE_JOB_S * 1e9), digits=1)} "
                                     f"to generate; the limit is {format_duration(int(limit * 1e9), digits=1)}: "
                                     f"lower --jobs, or raise --max-wall")


def _check_read(path: str, args) -> None:
    """Refuse, before reading it, a trace file that takes longer than --max-wall to read."""
    import os

    from magnum_lib.replay.budget import READ_BYTES_S
    from magnum_lib.units import format_duration, parse_duration

    limit = parse_duration(args.max_wall) / 1e9
    try:
        need = os.stat(path).st_size / READ_BYTES_S
    except OSError:
        return  # the reader says what is wrong with it
    if need > limit:
        fix = "give --max-jobs (reading stops there)" if args.trace == "philly" else "use a smaller file"
        raise ParameterError("trace_file", f"takes about {format_duration(int(need * 1e9), digits=1)} to read; the "
                                           f"limit is {format_duration(int(limit * 1e9), digits=1)}: {fix}, "
                                           f"or raise --max-wall")


#: Library names in budget messages -> this command's flags.
_FLAGS = {"round_s": "--round", "max_wall_s": "--max-wall", "max_memory": "--max-memory", "max_jobs": "--max-jobs",
          "gpus_per_node": "--gpus-per-node", "nodes": "--nodes"}


def _flags_in(text: str) -> str:
    import re

    return re.sub(r"\b(" + "|".join(_FLAGS) + r")\b", lambda m: _FLAGS[m.group(1)], text)


def _builtin(args):
    """The built-in policy named by --policy, with the LAS and round options."""
    from magnum_lib.replay import make_policy
    from magnum_lib.units import parse_duration

    if args.policy == "las":
        try:
            th = [float(x) for x in args.las_thresholds.split(",") if x.strip()]
        except ValueError:
            raise ParameterError("las_thresholds", f"must be comma-separated numbers, got "
                                                   f"{excerpt(args.las_thresholds)}") from None
        try:
            knob = float(args.promote_knob)
        except ValueError:
            raise ParameterError("promote_knob", f"must be a number, got {excerpt(args.promote_knob)}") from None
        if not (0 <= knob <= 1e6):
            raise ParameterError("promote_knob", f"must be in [0, 1e6], got {excerpt(args.promote_knob)}")
        try:
            return make_policy("las", thresholds_gpu_s=th, promote_knob=knob,
                               tiresias_jump=args.las_tiresias_jump)
        except ParameterError as exc:
            raise ParameterError("las_thresholds", exc.detail) from None
    if args.policy == "ftf" or args.policy.startswith("gavel"):  # the round-based ones
        r = parse_param("round", parse_duration, args.round) / 1e9
        if not 1e-3 <= r <= 1e7:
            raise ParameterError("round", f"must be between 1ms and 1e7 s, got {excerpt(args.round)}")
        return make_policy(args.policy, round_s=r)
    return make_policy(args.policy)


#: Seconds an isolated replay may take beyond --max-wall: a fresh interpreter, its imports
#: and the plug-in's load.
ISOLATE_START_S = 30.0


def _memory(args) -> int:
    from magnum_lib.units import parse_size

    return parse_size(args.max_memory)


def _summary(args):
    """(summary dict, cluster text) of the replay the arguments describe (the work of ``_run``)."""
    from magnum_lib.replay import replay
    from magnum_lib.units import parse_duration

    seed = _range("seed", int_value("seed", args.seed), 0, 2**63 - 1)
    restore = parse_param("restore", parse_duration, args.restore) / 1e9
    if restore < 0:
        raise ParameterError("restore", f"must be >= 0, got {args.restore}")
    _no_ignored_flags(args)
    policy = load_policy_file(args.policy_file) if args.policy_file else _builtin(args)
    try:
        jobs, cluster = build(args)
    except ParameterError:
        raise
    except (OSError, ValueError) as exc:  # a trace that is missing, unreadable or not what it claims
        text = str(exc) if not isinstance(exc, OSError) or isinstance(exc, FileNotFoundError) else \
            f"{args.trace_file or args.trace}: cannot be read ({exc.strerror or type(exc).__name__})"
        raise ParameterError("trace_file" if args.trace_file else "trace", text) from None
    clock = [None]
    try:
        result = replay(jobs, cluster, policy, placement=args.placement, seed=seed, restore_s=restore,
                        max_memory=_memory(args), max_wall_s=parse_duration(args.max_wall) / 1e9,
                        clock=clock)
    except ParameterError as exc:  # the budget speaks the library's names: say the flags
        if exc.name in ("policy", "jobs"):
            raise
        name = _FLAGS.get(exc.name, "--" + exc.name)[2:]
        raise ParameterError(name.replace("-", "_"), _flags_in(exc.detail)) from None
    except KeyboardInterrupt:
        from magnum_lib.replay.budget import span_s

        total = f"about {span_s(jobs, cluster.total_gpus):.6g}"
        where = "before the end" if clock[0] is None else f"after {clock[0]:.6g} simulated s"
        raise Interrupted(f"{where} of {total}") from None
    s = result.summary()
    s["trace"] = jobs.name
    return s, repr(cluster)


def _run(args) -> int:
    from magnum_lib.units import parse_duration

    if args.isolate:  # the whole replay in a child process: a crash or a leak is one line here
        from magnum_lib.replay.isolate import run_isolated

        name, label = ("policy_file", _file_label(args.policy_file)) if args.policy_file else \
            ("policy", repr(args.policy))
        limit = parse_duration(args.max_wall) / 1e9 + ISOLATE_START_S
        try:
            s, cluster = run_isolated(_summary, (args,), max_memory=_memory(args), timeout_s=limit,
                                      name=name, label=label)
        except KeyboardInterrupt:
            raise Interrupted("before the end (the isolated replay was stopped)") from None
    else:
        s, cluster = _summary(args)
    if args.json:
        print(json_text(s))
        return 0
    rows = [("trace", f"{s['trace']} ({s['jobs']:,} jobs)"), ("cluster", cluster),
            ("policy", f"{s['policy']} ({s['placement']} placement, {s['backend']} loop)"),
            ("avg JCT", readable_s(s['avg_jct_s'])), ("median JCT", readable_s(s['median_jct_s'])),
            ("p99 JCT", readable_s(s['p99_jct_s'])), ("avg queueing", readable_s(s['avg_queue_s'])),
            ("p99 queueing", readable_s(s['p99_queue_s'])), ("makespan", readable_s(s['makespan_s'])),
            ("utilization", f"{s['utilization']:.4f}"),
            ("FTF rho max / mean", f"{s['ftf_rho_max']:.4g} / {s['ftf_rho_mean']:.4g}"),
            ("preemptions", f"{s['preemptions']:,}"), ("wall time", f"{s['wall_s']:.3f} s")]
    print_table(rows)
    return 0
