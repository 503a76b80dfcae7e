"""``faux-magnum simulate``: JSON keys, flags with units, one-line errors."""
import pytest

from magnum_lib.cli import main
from tests.conftest import cli_json

BASE = ["simulate", "--preset", "magnum_v2", "--cluster", "classroom", "--duration", "50ms", "--load", "0.8",
        "--seed", "0"]


def test_json_has_the_issue_keys(capsys):
    out = cli_json(capsys, BASE)
    for k in ("decision_latency_ms", "sla_attainment", "utilization", "lease_failure_rate", "preemptions",
              "hedges", "energy_j", "requests", "events", "wall_s", "sim_s"):
        assert k in out
    assert set(out["decision_latency_ms"]) >= {"p50", "p95", "p99", "p999", "breakdown"}
    assert out["sim_s"] == 0.05 and out["preset"] == "magnum_v2"


def test_same_flags_same_json(capsys):
    a, b = cli_json(capsys, BASE), cli_json(capsys, BASE)
    for r in (a, b):
        r.pop("wall_s"), r.pop("requests_per_wall_s")
    assert a == b


def test_knob_flags_reach_the_simulator(capsys):
    out = cli_json(capsys, BASE + ["--rtt", "2ms", "--schedulers", "3", "--hetero-aware", "false",
                                   "--policy", "random", "--round", "500us"])
    cfg = out["preset_config"]
    assert cfg["rtt_s"] == 0.002 and cfg["schedulers"] == 3 and cfg["hetero_aware"] is False
    assert cfg["policy"] == "random" and cfg["round_s"] == 0.0005
    assert out["decision_latency_ms"]["breakdown"]["rtt"]["p50"] == pytest.approx(1.0)


def test_readable_output(capsys):
    assert main(BASE) == 0
    out = capsys.readouterr().out
    assert "decision latency" in out and "lease failure rate" in out


@pytest.mark.parametrize("flags, says", [
    (["--duration", "10q"], "--duration"), (["--load", "-1"], "--load"), (["--load", "abc"], "--load"),
    (["--schedulers", "1.5"], "--schedulers"), (["--policy", "psychic"], "--policy"),
    (["--hetero-aware", "maybe"], "--hetero-aware"), (["--preset", "borg_9000"], "--preset"),
    (["--gossip-loss", "1"], "--gossip-loss"), (["--seed", "-2"], "--seed"),
])
def test_bad_flags_are_one_line_exit_2(capsys, flags, says):
    assert main(BASE + flags) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err and "Traceback" not in err
