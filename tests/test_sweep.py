"""Parameter sweeps: serial and Dask agree; clients and addresses; errors name parameters."""
import numpy as np
import pytest

from magnum_lib import sweep as sweep_mod
from magnum_lib.sweep import SweepResult, SweepTaskError, grid_points, sweep

distributed = pytest.importorskip("distributed")


def erlang_load(rate, servers, seed=None):
    """Deterministic: offered load and a seeded draw (checks seeds reach the task)."""
    out = {"load": rate / servers, "busy": min(1.0, rate / servers)}
    if seed is not None:
        out["draw"] = float(np.random.default_rng(seed).random())
    return out


def fails_at_three(x):
    if x == 3:
        raise ZeroDivisionError("boom")
    return {"y": x}


GRID = {"rate": [1.0, 2.0, 3.0], "servers": [2, 4]}


LOOPBACK = dict(processes=False, protocol="tcp", host="127.0.0.1", dashboard_address=None,
                scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"})


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, **LOOPBACK) as c:
        yield c


@pytest.fixture(scope="module")
def client(cluster):
    with distributed.Client(cluster) as c:
        yield c


def expected_rows(seeds=None):
    return [{**p, **erlang_load(**p)} for p in grid_points(GRID, seeds=seeds)]


def test_serial_table():
    r = sweep(erlang_load, GRID, client="serial", progress=False)
    assert r.backend == "serial"
    assert r.columns == ["rate", "servers", "load", "busy"]
    # grid order: first key slowest
    assert [(row["rate"], row["servers"]) for row in r.rows] == [
        (1.0, 2), (1.0, 4), (2.0, 2), (2.0, 4), (3.0, 2), (3.0, 4)]
    assert np.array_equal(r.column("load"), np.array([0.5, 0.25, 1.0, 0.5, 1.5, 0.75]))
    assert r.rows == expected_rows()


def test_dask_equals_serial_with_client(client):
    serial = sweep(erlang_load, GRID, client="serial", seeds=[1, 2], progress=False)
    dask = sweep(erlang_load, GRID, client=client, seeds=[1, 2], progress=False)
    assert dask == serial and len(dask) == 12
    assert dask.rows == expected_rows(seeds=[1, 2])
    assert client.status == "running"  # a passed Client is left open
    assert client.submit(lambda: 41 + 1).result() == 42


def test_address_string():
    tcp = distributed.LocalCluster(n_workers=1, threads_per_worker=1, **LOOPBACK)
    try:
        assert tcp.scheduler_address.startswith("tcp://127.0.0.1:")
        r = sweep(erlang_load, GRID, client=tcp.scheduler_address, progress=False)
        assert r.rows == expected_rows()
        # the scheduler is still up after the sweep
        with distributed.Client(tcp.scheduler_address) as c:
            assert c.submit(lambda: 1).result() == 1
    finally:
        tcp.close()


def test_default_local_cluster_and_progress(capsys):
    r = sweep(erlang_load, {"rate": [1.0, 2.0], "servers": [1]}, progress=True)
    assert r.backend == "dask-local"
    assert r.rows == [{"rate": 1.0, "servers": 1, "load": 1.0, "busy": 1.0},
                      {"rate": 2.0, "servers": 1, "load": 2.0, "busy": 1.0}]
    assert "sweep" in capsys.readouterr().err  # the tqdm bar


def test_serial_fallback_without_dask(monkeypatch):
    monkeypatch.setattr(sweep_mod, "_dask_available", lambda: False)
    r = sweep(erlang_load, GRID, progress=False)
    assert r.backend == "serial" and r.rows == expected_rows()
    with pytest.raises(ImportError, match="client='serial'"):
        sweep(erlang_load, GRID, client="local", progress=False)


def test_repeats_pass_seeds():
    r = sweep(erlang_load, {"rate": [1.0], "servers": [1]}, client="serial", repeats=3, progress=False)
    assert list(r.column("seed")) == [0, 1, 2]
    assert len(set(r.column("draw"))) == 3


def test_failing_task_names_parameters_serial():
    with pytest.raises(SweepTaskError, match=r"x=3.*ZeroDivisionError: boom") as e:
        sweep(fails_at_three, {"x": [1, 2, 3, 4]}, client="serial", progress=False)
    assert e.value.params == {"x": 3}
    assert isinstance(e.value.__cause__, ZeroDivisionError)


def test_failing_task_names_parameters_dask(client):
    with pytest.raises(SweepTaskError, match=r"x=3.*ZeroDivisionError: boom") as e:
        sweep(fails_at_three, {"x": [1, 2, 3, 4]}, client=client, progress=False)
    assert e.value.params == {"x": 3}
    # The worker's exception itself, not a string of it: its type and traceback survive.
    assert isinstance(e.value.__cause__, ZeroDivisionError)
    assert e.value.__cause__.__traceback__ is not None


@pytest.mark.parametrize("func,match", [
    (lambda x: 5, "returned int, expected a dict"),
    (lambda x: {"x": 1}, "also parameter names"),
])
def test_bad_results(func, match):
    with pytest.raises(SweepTaskError, match=match):
        sweep(func, {"x": [1]}, client="serial", progress=False)


@pytest.mark.parametrize("grid,exc,match", [
    ({}, ValueError, "empty"),
    ([("x", [1])], TypeError, "dict"),
    ({"x": []}, ValueError, r"grid\['x'\] is an empty list"),
    ({"x": 3}, TypeError, r"grid\['x'\] must be a list"),
    ({"x": "abc"}, TypeError, r"grid\['x'\] must be a list"),
    ({"bad name": [1]}, ValueError, "identifiers"),
    ({"class": [1]}, ValueError, "identifiers"),
    ({1: [1]}, ValueError, "identifiers"),
])
def test_bad_grids(grid, exc, match):
    with pytest.raises(exc, match=match):
        sweep(erlang_load, grid, client="serial", progress=False)


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(client=42), TypeError, "client must be"),
    (dict(repeats=0), ValueError, "repeats"),
    (dict(seeds=[]), ValueError, "seeds"),
    (dict(seeds=[1], repeats=2), ValueError, "not both"),
    (dict(n_workers=0), ValueError, "n_workers"),
])
def test_bad_options(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        sweep(erlang_load, {"rate": [1.0], "servers": [1]}, progress=False, **kwargs)


def test_seed_clash():
    with pytest.raises(ValueError, match="seed"):
        sweep(erlang_load, {"rate": [1.0], "servers": [1], "seed": [1]}, client="serial",
              repeats=2, progress=False)


def test_result_table_rendering():
    r = SweepResult([{"a": 1, "name": "x<y", "v": 0.123456789}, {"a": 10, "name": "z", "v": 2.0}],
                    params=["a"])
    lines = repr(r).splitlines()
    assert len({len(line) for line in lines}) == 1  # aligned columns
    assert lines[0].split() == ["a", "name", "v"] and "0.123457" in lines[1]
    h = r._repr_html_()
    assert "<th>name</th>" in h and "x&lt;y" in h and "<script" not in h
    assert list(r.column("a")) == [1, 10] and r.column("name").tolist() == ["x<y", "z"]
    with pytest.raises(KeyError, match="columns: a, name, v"):
        r.column("nope")
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pandas"):
            r.to_pandas()
    else:
        assert list(r.to_pandas().columns) == ["a", "name", "v"]


def test_default_cluster_listens_on_loopback_only(monkeypatch):
    seen = []

    class Recording(distributed.LocalCluster):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            s = self.scheduler
            seen.append([self.scheduler_address, s.http_server.address]
                        + [w.address for w in self.workers.values()]
                        + [w.http_server.address for w in self.workers.values()])

    monkeypatch.setattr(distributed, "LocalCluster", Recording)
    sweep(erlang_load, {"rate": [1.0], "servers": [1]}, progress=False)
    (addresses,) = seen
    assert all(a.startswith("tcp://127.0.0.1:") or a == "127.0.0.1" for a in addresses), addresses
