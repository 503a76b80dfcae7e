"""serving_sweep: router x batching x replica count on magnum_lib.sweep."""
import pytest

from magnum_lib.base.validate import ParameterError
from magnum_lib.serving import generate_requests, make_replica, serving_sweep, simulate, summarize
from magnum_lib.serving.sweeps import COLUMNS

REQS = generate_requests(150, 25, prompt_mean=400, output_mean=30, seed=4)
SPEC = make_replica("llama3_8b", "h100", 1, kv_blocks=600)
GRID = dict(routers=["round-robin", "least-outstanding", "prefix-aware"], batchings=["static", "chunked"],
            replicas=[1, 3])


def test_every_combination_once_with_the_figures_of_its_own_run():
    table = serving_sweep(REQS, SPEC, client="serial", progress=False, token_budget=256, **GRID)
    assert len(table) == 3 * 2 * 2
    assert [(r["router"], r["batching"], r["replicas"]) for r in table] == [
        (a, b, n) for a in GRID["routers"] for b in GRID["batchings"] for n in GRID["replicas"]]
    assert set(COLUMNS) <= set(table[0])
    row = table[7]  # least-outstanding, chunked, 3 replicas
    s = summarize(simulate(REQS, SPEC, replicas=3, batching="chunked", router="least-outstanding", token_budget=256))
    assert (row["router"], row["batching"], row["replicas"]) == ("least-outstanding", "chunked", 3)
    assert row["ttft_ms_p99"] == s["ttft_ms"]["p99"] and row["goodput_rps_per_gpu"] == s["goodput_rps_per_gpu"]
    assert row["gpus"] == 3 and all(r["finished"] == len(REQS) for r in table)


def test_on_dask_the_table_equals_the_serial_one():
    pytest.importorskip("distributed")
    small = dict(routers=["round-robin", "power-of-two"], batchings=["continuous"], replicas=[2])
    serial = serving_sweep(REQS, SPEC, client="serial", progress=False, **small)
    dask = serving_sweep(REQS, SPEC, client="local", progress=False, **small)
    assert dask.backend != "serial"
    strip = lambda t: [{k: v for k, v in r.items() if k != "cpu_s"} for r in t]  # noqa: E731
    assert strip(dask) == strip(serial)


@pytest.mark.parametrize("kw, name", [
    (dict(routers=[]), "routers"), (dict(replicas=[0]), "replicas"), (dict(batchings=["eager"]), "batching"),
    (dict(routers=["nearest"]), "router"), (dict(slo_ttft_s=0), "slo_ttft_s"), (dict(batching="static"), "batching"),
    (dict(max_batch=0), "max_batch")])
def test_bad_input_names_the_argument_before_any_run(kw, name):
    with pytest.raises(ParameterError) as err:
        serving_sweep(REQS, SPEC, client="serial", progress=False, **kw)
    assert err.value.name == name
