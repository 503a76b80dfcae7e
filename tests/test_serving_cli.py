"""``faux-magnum serve``: its JSON, a router from a file, and one-line errors."""
import pytest

from magnum_lib.cli import main
from tests.conftest import cli_json, import_compiled, replaced

pytestmark = pytest.mark.needs_traces
BASE = ["serve", "--trace", "azure-code", "--requests", "60", "--model", "llama3_8b", "--tp", "1", "--replicas", "2"]


def test_json_has_the_issue_keys(capsys):
    d = cli_json(capsys, BASE + ["--batching", "chunked", "--token-budget", "256", "--router", "least-outstanding"])
    assert {"ttft_ms", "tpot_ms", "e2e_ms", "goodput_rps_per_gpu", "throughput_tok_s", "prefix_hit_rate",
            "preemptions", "kv_utilization", "energy_j_per_token", "wall_s"} <= set(d)
    assert set(d["ttft_ms"]) == {"p50", "p90", "p99", "p99.9", "mean"} and d["finished"] == 60
    assert d["config"]["token_budget"] == 256 and d["gpus"] == 2


def test_disaggregate_replaces_replicas(capsys):
    d = cli_json(capsys, BASE + ["--disaggregate", "1:2"])
    assert d["gpus"] == 3 and d["config"]["disaggregate"] == [1, 2]


def test_router_from_a_file(capsys, tmp_path):
    f = tmp_path / "r.py"
    f.write_text("from magnum_lib.serving import Router\n"
                 "class Last(Router):\n    name = 'last'\n"
                 "    def route(self, view, request):\n        return view.candidates[-1]\n"
                 "class Wrong(Router):\n    name = 'wrong'\n"
                 "    def route(self, view, request):\n        return 99\n")
    d = cli_json(capsys, BASE + ["--router-file", f"{f}:Last"])
    assert d["config"]["router"] == "last"
    assert main(BASE + ["--router-file", f"{f}:Wrong"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--router 'wrong': returned 99 for request 0" in err


@pytest.mark.parametrize("extra, msg", [
    (["--model", "llama3_70b"], "--tp 1: llama3_70b weights"),
    (["--device", "tpu9"], "--device unknown accelerator 'tpu9'; known:"),
    (["--disaggregate", "2"], "--disaggregate must be P:D"),
    (["--kv-blocks", "2"], None),  # every request refused: a run, not an error
])
def test_errors_are_one_line(capsys, extra, msg):
    rc = main(replaced(BASE, extra) + (["--json"] if msg is None else []))
    out = capsys.readouterr()
    if msg is None:
        assert rc == 0 and '"refused": 60' in out.out
    else:
        assert rc == 2 and out.err.count("\n") == 1 and msg in out.err and out.out == ""


def test_model_choices_are_the_catalogs_names(capsys):
    from magnum_lib.commands.serve import _MODELS
    from magnum_lib.serving import default_models

    cat = default_models()
    assert set(_MODELS) == {n for k in cat for n in (k, *cat[k].aliases)}
    assert cli_json(capsys, replaced(BASE, ["--model", "llama3-8b"]))["model"] == "llama3_8b"


def test_the_compiled_loop_runs_and_gives_the_reference_figures(capsys, monkeypatch):
    import_compiled("magnum_lib.serving._serve")
    fast = cli_json(capsys, BASE + ["--router", "power-of-two", "--batching", "chunked"])
    monkeypatch.setenv("MAGNUM_PUREPYTHON", "1")
    slow = cli_json(capsys, BASE + ["--router", "power-of-two", "--batching", "chunked"])
    assert (fast["loop"], slow["loop"]) == ("compiled", "python")
    drop = ("wall_s", "loop")
    assert {k: v for k, v in fast.items() if k not in drop} == {k: v for k, v in slow.items() if k not in drop}


def test_a_long_run_says_its_estimate_first(capsys, monkeypatch):
    from magnum_lib.serving import budget

    monkeypatch.setenv("MAGNUM_PUREPYTHON", "1")
    monkeypatch.setattr(budget, "REFERENCE_ITERATION_S", 1.0)  # as if each iteration took a second
    assert main(BASE + ["--json"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("serve: at most about ") and "on the readable Python loop" in err and err.count("\n") == 1
    monkeypatch.setattr(budget, "REFERENCE_ITERATION_S", 1e-5)
    cli_json(capsys, BASE)  # a short run says nothing (cli_json demands a silent stderr)
