"""``faux-magnum replay``: JSON keys, every shipped policy, --policy-file, bad input in one
line with exit 2; and the arena leaderboard on magnum_lib.sweep."""
from __future__ import annotations

import json

import pytest

from magnum_lib.cli import main
from tests.conftest import replaced

KEYS = {"jobs", "avg_jct_s", "p99_jct_s", "avg_queue_s", "makespan_s", "utilization",
        "ftf_rho_max", "preemptions", "wall_s"}
PHILLY = ["replay", "--trace", "philly", "--vc", "0e4a51", "--min-duration", "60s",
          "--gpu-counts", "1,2,4,8", "--nodes", "9", "--gpus-per-node", "4",
          "--placement", "pooled", "--seed", "0"]


def _json(capsys, argv):
    assert main(argv + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.needs_traces
def test_issue_example_json(capsys):
    out = _json(capsys, PHILLY + ["--policy", "fifo-strict"])
    assert KEYS <= set(out)
    assert out["jobs"] == 1429 and out["preemptions"] == 0
    skip = _json(capsys, PHILLY + ["--policy", "fifo-skip"])
    assert skip["avg_jct_s"] < out["avg_jct_s"]      # head-of-line blocking costs


@pytest.mark.needs_traces
@pytest.mark.parametrize("policy", ["fifo-strict", "fifo-skip", "sjf", "srtf", "las", "gavel",
                                    "gavel-blind", "ftf", "fgd", "gavel-fifo", "gavel-rounds",
                                    "gavel-rounds-blind"])
def test_every_policy_runs(capsys, policy):
    out = _json(capsys, ["replay", "--trace", "tiresias", "--nodes", "2", "--gpus-per-node", "4",
                         "--policy", policy])
    assert out["jobs"] == 60 and out["avg_jct_s"] > 0 and out["policy"] == policy


@pytest.mark.needs_traces
def test_gavel_trace_on_heterogeneous_cluster(capsys):
    out = _json(capsys, ["replay", "--trace", "gavel", "--jobs", "30", "--jobs-per-hour", "30",
                         "--gpu-types", "v100:8,p100:8,k80:8", "--policy", "gavel"])
    assert out["jobs"] == 30 and out["gpus"] == 24


@pytest.mark.needs_traces
def test_gavel_round_policies_are_gavels_simulator_semantics(capsys):
    """--policy gavel-fifo is replay.gavel_rounds.GavelFIFO (the job-for-job twin of Gavel's
    simulator), with --round as its time_per_iteration; a shorter round changes the result."""
    from magnum_lib.replay import ReplayCluster, replay, traces
    from magnum_lib.replay.gavel_rounds import GavelFIFO

    out = _json(capsys, ["replay", "--trace", "tiresias", "--nodes", "2", "--gpus-per-node", "4",
                         "--policy", "gavel-fifo"])
    want = replay(traces.tiresias_jobs(), ReplayCluster.uniform(2, 4), GavelFIFO(), progress=False)
    assert out["avg_jct_s"] == pytest.approx(float(want.jct_s.mean()), rel=1e-12)
    short = _json(capsys, ["replay", "--trace", "tiresias", "--nodes", "2", "--gpus-per-node", "4",
                           "--policy", "gavel-fifo", "--round", "60s"])
    assert short["avg_jct_s"] != out["avg_jct_s"]


@pytest.mark.needs_traces
def test_policy_file(capsys, tmp_path):
    f = tmp_path / "mine.py"
    f.write_text("from magnum_lib.replay import Policy\n"
                 "class Biggest(Policy):\n"
                 "    name = 'biggest'\n"
                 "    def schedule(self, view):\n"
                 "        plan = view.plan()\n"
                 "        for j in sorted(view.queue, key=lambda j: (-j.num_gpus, j.id)):\n"
                 "            plan.start(j)\n"
                 "        return plan\n")
    out = _json(capsys, ["replay", "--trace", "tiresias", "--policy-file", f"{f}:Biggest"])
    assert out["policy"] == "biggest" and out["jobs"] == 60
    bad = tmp_path / "bad.py"
    bad.write_text("from magnum_lib.replay import Decision\n"
                   "def twice(view):\n"
                   "    return Decision(start=[(j.id, [0]) for j in view.queue[:2]])\n")
    assert main(["replay", "--trace", "tiresias", "--policy-file", f"{bad}:twice"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "'twice'" in err and "start job" in err


@pytest.mark.parametrize("argv,flag", [
    (["--nodes", "0"], "--nodes"), (["--gpus-per-node", "2000"], "--gpus-per-node"),
    (["--min-duration", "abc"], "--min-duration"), (["--gpu-counts", "1,x"], "--gpu-counts"),
    (["--seed", "-1"], "--seed"), pytest.param(["--vc", "nope"], "--vc", marks=pytest.mark.needs_traces),
    (["--restore", "-5s"], "--restore"),
    (["--policy-file", "missing.py:X"], "--policy-file"), (["--max-jobs", "0"], "--max-jobs"),
    (["--policy", "las", "--las-thresholds", "100,50"], "--las-thresholds"),
    (["--policy", "las", "--promote-knob", "-1"], "--promote-knob"),
    (["--policy", "ftf", "--round", "0s"], "--round"),
])
def test_bad_input_one_line_exit_2(capsys, argv, flag):
    base = ["replay", "--trace", "philly", "--vc", "0e4a51"]
    assert main(replaced(base, argv)) == 2     # --vc nope replaces the base's VC (not a repeat)
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and flag in err and "Traceback" not in err


@pytest.mark.needs_traces
def test_leaderboard_on_sweep():
    from magnum_lib.replay import ReplayCluster
    from magnum_lib.replay.arena import leaderboard, philly_slices

    slices = philly_slices("0e4a51", 150, [0, 300])
    rows, res = leaderboard({"fifo-strict": "fifo-strict", "fifo-skip": "fifo-skip", "srtf": "srtf"},
                            slices, ReplayCluster.uniform(4, 4), seeds=[0, 1], client="serial")
    assert len(res) == 3 * 2 * 2
    assert [r["rank"] for r in rows] == [1, 2, 3]
    assert rows[0]["avg_jct_s"] <= rows[1]["avg_jct_s"] <= rows[2]["avg_jct_s"]
    assert rows[-1]["policy"] == "fifo-strict"


def test_las_tiresias_jump_flag_reaches_the_policy(capsys, tmp_path):
    # Issue 19's two-job case as a Tiresias trace file (see test_replay_core.py: job 1
    # ends at 171 s with Tiresias' Python 2.7 wake-up, at 162.5 s at the exact threshold).
    trace = tmp_path / "two.csv"
    trace.write_text("job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
                     "0,8,0,1,vgg19,200,0\n1,1,10,1,vgg19,100,0\n")
    base = ["replay", "--trace", "tiresias", "--trace-file", str(trace), "--nodes", "1",
            "--gpus-per-node", "8", "--policy", "las", "--las-thresholds", "500"]
    from magnum_lib.replay import ReplayCluster, make_jobs, replay
    from magnum_lib.replay.policies import TiresiasLAS

    jobs = make_jobs([0, 10], [200, 100], [8, 1])
    for flag in (False, True):
        out = _json(capsys, base + ["--las-tiresias-jump"] * flag)
        assert out["trace"] == "tiresias-2"          # the file's, not Tiresias' 60 jobs
        direct = replay(jobs, ReplayCluster.uniform(1, 8), TiresiasLAS((500.0,), tiresias_jump=flag))
        assert out["avg_jct_s"] == direct.summary()["avg_jct_s"]
        assert out["avg_jct_s"] == (300 + (171 if flag else 162.5) - 10) / 2


@pytest.mark.needs_traces
def test_las_options_reach_the_policy(capsys):
    # Tiresias' 60 jobs on 8 GPUs: enough preemptions to tell the options apart, and quick on
    # the Python loop (a 100 GPU-s threshold with promotion churns on a long Philly queue)
    base = ["replay", "--trace", "tiresias", "--nodes", "2", "--gpus-per-node", "4", "--policy", "las"]
    default = _json(capsys, base)
    tight = _json(capsys, base + ["--las-thresholds", "100", "--promote-knob", "2"])
    assert tight["preemptions"] != default["preemptions"]
    from magnum_lib.replay import ReplayCluster, replay
    from magnum_lib.replay.policies import TiresiasLAS
    from magnum_lib.replay.traces import tiresias_jobs

    direct = replay(tiresias_jobs(), ReplayCluster.uniform(2, 4), TiresiasLAS((100.0,), 2.0)).summary()
    assert tight["avg_jct_s"] == direct["avg_jct_s"]


def test_trace_file_too_slow_to_read_is_refused_before_reading(tmp_path, capsys, monkeypatch):
    """A trace file whose read alone passes --max-wall is refused up front, naming the way out;
    Philly with --max-jobs is not (its reader stops early)."""
    from magnum_lib.replay import budget

    monkeypatch.setattr(budget, "READ_BYTES_S", 1000.0)  # a 4 kB file "takes" 4 s to read
    rows = "".join(f"{i},1,{i},1,resnet,100,0\n" for i in range(200))
    f = tmp_path / "t.csv"
    f.write_text("job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n" + rows)
    assert main(["replay", "--trace", "tiresias", "--trace-file", str(f), "--max-wall", "1s"]) == 2
    err = capsys.readouterr().err
    assert "--trace-file" in err and "to read" in err and "--max-wall" in err and err.count("\n") == 1
    assert main(["replay", "--trace", "tiresias", "--trace-file", str(f), "--max-wall", "10m", "--json"]) == 0
