"""Run a function over a parameter grid, on Dask or serially, and get a table back.

>>> def f(rate, servers):
...     return {"load": rate / servers}
>>> sweep(f, {"rate": [1, 2], "servers": [4]}, client="serial", progress=False)
rate  servers  load
   1        4  0.25
   2        4   0.5

Where tasks run (``client=``):

* ``None`` (default): a private ``distributed.LocalCluster`` started for this call and
  closed afterwards; if Dask is not installed, serially in this process.
* ``"local"``: the same LocalCluster, but an error if Dask is missing.
* ``"serial"``: in this process, one after the other (no Dask needed; easiest to debug).
* ``"tcp://host:port"`` (any scheduler address): connect to that scheduler; our
  connection is closed afterwards, the scheduler and its workers are left running.
* a ``distributed.Client``: used as is and left open.

The default LocalCluster runs its workers as threads in this process
(``processes=False``): it starts in about 0.1 s, needs no pickling of ``func``, and
the Cython kernels release the GIL where they run long. Scheduler and workers listen
on 127.0.0.1 only, on free ports, with the dashboard off. Pass ``processes=True``
for separate worker processes (``func`` must then be importable, not defined
in a notebook cell).
"""
from __future__ import annotations

import html
import itertools
import keyword
import numbers
import os
import time
from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["sweep", "SweepResult", "SweepTaskError", "grid_points"]


class SweepTaskError(RuntimeError):
    """A task raised; ``.params`` is the failing parameter combination."""

    def __init__(self, params: dict, message: str):
        super().__init__(message)
        self.params = params


# --------------------------------------------------------------------------- grid

def grid_points(grid: Mapping, *, seeds=None) -> list[dict]:
    """Every combination of ``grid`` (first key varies slowest), each repeated per seed."""
    if not isinstance(grid, Mapping):
        raise TypeError(f"grid must be a dict {{name: [values, ...]}}, got {type(grid).__name__}")
    if not grid:
        raise ValueError("grid is empty; give at least one parameter, e.g. {'rate': [0.5, 0.8]}")
    names = list(grid)
    for name in names:
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
            raise ValueError(f"grid parameter names must be Python identifiers, got {name!r}")
        values = grid[name]
        if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
            raise TypeError(f"grid[{name!r}] must be a list of values, got {type(values).__name__} {values!r}")
        if len(values) == 0:
            raise ValueError(f"grid[{name!r}] is an empty list; give at least one value")
    if seeds is not None and "seed" in grid:
        raise ValueError("'seed' is both a grid parameter and given by seeds/repeats; use one")
    points = [dict(zip(names, combo, strict=True)) for combo in itertools.product(*(list(grid[n]) for n in names))]
    if seeds is None:
        return points
    return [{**p, "seed": s} for p in points for s in seeds]


def _seeds(repeats, seeds):
    if seeds is not None:
        if repeats not in (None, 1):
            raise ValueError("give repeats or seeds, not both")
        seeds = list(seeds)
        if not seeds or not all(isinstance(s, numbers.Integral) and not isinstance(s, bool) for s in seeds):
            raise ValueError(f"seeds must be a non-empty list of integers, got {seeds!r}")
        return seeds
    if repeats is None or repeats == 1:
        return None
    if isinstance(repeats, bool) or not isinstance(repeats, numbers.Integral) or repeats < 1:
        raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
    return list(range(int(repeats)))


# --------------------------------------------------------------------------- tasks

def _fmt_params(params: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items())


def _check_result(params: dict, out) -> dict:
    if not isinstance(out, Mapping):
        raise SweepTaskError(params, f"sweep task ({_fmt_params(params)}) returned "
                             f"{type(out).__name__}, expected a dict of results")
    clash = [k for k in out if k in params]
    if clash:
        raise SweepTaskError(params, f"sweep task ({_fmt_params(params)}) returned keys {clash} "
                             "that are also parameter names")
    return dict(out)


def _call(func, params):
    """One task on a worker (a wrapper, so a parameter may be named like a ``submit`` option)."""
    return func(**params)


def _progress_bar(total: int, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, disable=not enabled, desc="sweep", unit="task", leave=False)


def _run_serial(func, points, progress):
    out = []
    with _progress_bar(len(points), progress) as bar:
        for p in points:
            try:
                res = func(**p)
            except Exception as exc:
                raise SweepTaskError(p, f"sweep task ({_fmt_params(p)}) failed: "
                                     f"{type(exc).__name__}: {exc}") from exc
            out.append(_check_result(p, res))
            bar.update(1)
    return out


def _run_dask(client, func, points, progress):
    from distributed import as_completed

    futures = [client.submit(_call, func, p, pure=False) for p in points]
    index = {f.key: i for i, f in enumerate(futures)}
    out = [None] * len(points)
    try:
        with _progress_bar(len(points), progress) as bar:
            for fut in as_completed(futures):
                i = index[fut.key]
                try:
                    value = fut.result()  # re-raises the task's own exception, with its traceback
                except Exception as exc:
                    raise SweepTaskError(points[i], f"sweep task ({_fmt_params(points[i])}) failed: "
                                         f"{type(exc).__name__}: {exc}") from exc
                out[i] = _check_result(points[i], value)
                bar.update(1)
    except BaseException:
        client.cancel(futures)
        raise
    return out


def _dask_available() -> bool:
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


def sweep(func, grid: Mapping, *, client=None, repeats=None, seeds=None, progress: bool = True,
          n_workers: int | None = None, processes: bool = False) -> SweepResult:
    """Call ``func(**params)`` for every combination in ``grid`` and tabulate the results.

    Parameters
    ----------
    func : callable
        Takes the grid names (and ``seed`` when ``repeats``/``seeds`` is given) as
        keyword arguments and returns a dict of results (numbers, strings, ...).
    grid : dict of str -> list
        Parameter name -> non-empty list of values; names must be identifiers.
    client : None, "local", "serial", scheduler address str, or distributed.Client
        Where to run (see the module docstring).
    repeats : int, optional
        Run each combination this many times with ``seed=0, 1, ...``.
    seeds : list of int, optional
        Run each combination once per seed (``seed=`` passed to ``func``).
    progress : bool
        Show a tqdm progress bar (a widget in notebooks).
    n_workers : int, optional
        Workers of the private LocalCluster (default ``min(2, cpu count)``).
    processes : bool
        Private LocalCluster workers as processes instead of threads.

    Returns
    -------
    SweepResult
        One row per task, in grid order.

    Raises
    ------
    SweepTaskError
        When a task raises; the message and ``.params`` name the combination.
    """
    if not callable(func):
        raise TypeError(f"func must be callable, got {type(func).__name__}")
    points = grid_points(grid, seeds=_seeds(repeats, seeds))
    started = time.perf_counter()
    backend = "serial"
    if client == "serial" or (client is None and not _dask_available()):
        results = _run_serial(func, points, progress)
    else:
        results, backend = _run_on_dask(client, func, points, progress, n_workers, processes)
    rows = [{**p, **r} for p, r in zip(points, results, strict=True)]
    return SweepResult(rows, params=list(points[0]), backend=backend,
                       elapsed_s=time.perf_counter() - started)


def _run_on_dask(client, func, points, progress, n_workers, processes):
    if client is None or client == "local":
        if not _dask_available():
            raise ImportError("client='local' needs dask.distributed: pip install 'dask[distributed]' "
                              "(or use client='serial')")
        from distributed import Client, LocalCluster

        if n_workers is None:
            n_workers = max(1, min(2, os.cpu_count() or 1))
        elif isinstance(n_workers, bool) or not isinstance(n_workers, numbers.Integral) or n_workers < 1:
            raise ValueError(f"n_workers must be an integer >= 1, got {n_workers!r}")
        # Everything listens on loopback only: the scheduler, the workers and their
        # small HTTP health servers (Dask starts one even with the dashboard off;
        # port 0 so a busy 8787 is no matter). Dashboard off.
        with LocalCluster(n_workers=int(n_workers), threads_per_worker=1, processes=bool(processes),
                          protocol="tcp", host="127.0.0.1", dashboard_address=None,
                          scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"}
                          ) as cluster, \
                Client(cluster) as c:
            return _run_dask(c, func, points, progress), "dask-local"
    if isinstance(client, str):
        from distributed import Client

        with Client(client) as c:  # our connection only; the scheduler stays up
            return _run_dask(c, func, points, progress), f"dask {client}"
    try:
        from distributed import Client
    except ImportError:
        Client = None
    if Client is not None and isinstance(client, Client):
        return _run_dask(client, func, points, progress), "dask client"
    raise TypeError("client must be None, 'local', 'serial', a scheduler address like "
                    f"'tcp://127.0.0.1:8786', or a distributed.Client; got {client!r}")


# --------------------------------------------------------------------------- result

def _cell(v) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.6g}"
    return str(v)


class SweepResult:
    """The table of a sweep: one row (a dict) per task, parameters first.

    Attributes
    ----------
    rows : list of dict
    columns : list of str
        Parameter names, then result keys in first-seen order.
    params : list of str
        The parameter columns.
    backend : str
        Where it ran ("serial", "dask-local", ...).
    elapsed_s : float
        Wall time of the sweep.
    """

    max_repr_rows = 30

    def __init__(self, rows, params=(), backend: str = "serial", elapsed_s: float = 0.0):
        self.rows = list(rows)
        self.params = list(params)
        cols = list(self.params)
        for r in self.rows:
            cols.extend(k for k in r if k not in cols)
        self.columns = cols
        self.backend = backend
        self.elapsed_s = elapsed_s

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    def __getitem__(self, i):
        return self.rows[i]

    def __eq__(self, other) -> bool:
        if not isinstance(other, SweepResult):
            return NotImplemented
        return self.columns == other.columns and self.rows == other.rows

    __hash__ = None

    def column(self, name: str) -> np.ndarray:
        """One column as a numpy array (missing cells are None)."""
        if name not in self.columns:
            raise KeyError(f"no column {name!r}; columns: {', '.join(self.columns)}")
        values = [r.get(name) for r in self.rows]
        if all(isinstance(v, (numbers.Number, np.generic)) for v in values) or all(isinstance(v, str) for v in values):
            return np.asarray(values)
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out

    def to_pandas(self):
        """A ``pandas.DataFrame`` (needs pandas)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("SweepResult.to_pandas() needs pandas (pip install pandas); "
                              "use .rows or .column(name) without it") from None
        return pd.DataFrame(self.rows, columns=self.columns)

    def _shown(self):
        n = len(self.rows)
        return self.rows if n <= self.max_repr_rows else self.rows[: self.max_repr_rows]

    def __repr__(self) -> str:
        if not self.rows:
            return "SweepResult(0 rows)"
        table = [self.columns] + [[_cell(r.get(c, "")) for c in self.columns] for r in self._shown()]
        widths = [max(len(row[j]) for row in table) for j in range(len(self.columns))]
        lines = ["  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in table]
        if len(self.rows) > self.max_repr_rows:
            lines.append(f"... {len(self.rows)} rows in all")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(_cell(r.get(c, '')))}</td>" for c in self.columns) + "</tr>"
            for r in self._shown()
        )
        more = (f"<p>{len(self.rows)} rows in all (first {self.max_repr_rows} shown)</p>"
                if len(self.rows) > self.max_repr_rows else "")
        return (f"<table class='magnum-sweep'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
                f"<p>{len(self.rows)} tasks, {html.escape(self.backend)}, {self.elapsed_s:.2f} s</p>{more}")
