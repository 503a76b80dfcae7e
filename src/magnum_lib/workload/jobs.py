"""A job stream as a structure of arrays, built from generators or loaded from CSV."""
from __future__ import annotations

import io
import numbers
import os
from pathlib import Path

import numpy as np

from magnum_lib._resources import data_path
from magnum_lib.base.validate import excerpt
from magnum_lib.workload._csvcols import read_columns
from magnum_lib.workload._validate import MAX_GPUS, MAX_SECONDS, rng_from, to_ns

__all__ = ["Workload", "make_workload", "load_sample_workload", "SAMPLE_WORKLOAD"]

#: The shipped sample (see scripts/make_sample_workload.py and data/sample_workload.md).
SAMPLE_WORKLOAD = data_path("sample_workload.csv")
CSV_HEADER = ["job_id", "submit_s", "duration_s", "num_gpus"]


class Workload:
    """Jobs as parallel numpy arrays (one row per job, sorted by submit time).

    Parameters
    ----------
    submit_s : array of float
        Submit times in seconds, non-decreasing, >= 0.
    duration_s : array of float
        Run times in seconds, > 0.
    num_gpus : array of int or int
        GPUs per job, >= 1 (a scalar applies to every job).
    name : str
        A label (e.g. ``"philly"``, ``"sample"``).

    The arrays are stored read-only; ``submit_ns`` / ``duration_ns`` give the int64
    nanosecond form the engine uses.
    """

    __slots__ = ("submit_s", "duration_s", "num_gpus", "name")

    def __init__(self, submit_s, duration_s, num_gpus=1, name: str = ""):
        submit = np.array(submit_s, dtype=np.float64, copy=True).reshape(-1)
        duration = np.array(duration_s, dtype=np.float64, copy=True).reshape(-1)
        n = submit.size
        if duration.size != n:
            raise ValueError(f"duration_s has {duration.size} values but submit_s has {n}")
        gpus = _gpu_array(num_gpus, n)
        if not np.all(np.isfinite(submit)) or (n and submit.min() < 0):
            raise ValueError(f"submit_s must be finite and >= 0, got min {submit.min() if n else None!r}")
        if n > 1 and np.any(np.diff(submit) < 0):
            i = int(np.argmax(np.diff(submit) < 0)) + 1
            raise ValueError(f"submit_s must be sorted (non-decreasing); job {i} at {submit[i]} "
                             f"comes before job {i - 1} at {submit[i - 1]}")
        if not np.all(np.isfinite(duration)) or (n and duration.min() <= 0):
            i = int(np.argmin(np.where(np.isfinite(duration), duration, -np.inf)))
            raise ValueError(f"duration_s must be finite and > 0; job {i} has {duration[i]!r}")
        for what, a in (("submit_s", submit), ("duration_s", duration)):
            if n and a.max() > MAX_SECONDS:  # keeps submit + duration inside int64 nanoseconds
                i = int(np.argmax(a))
                raise ValueError(f"{what} must be <= {MAX_SECONDS:g} s; job {i} has {a[i]!r}")
        for a in (submit, duration, gpus):
            a.setflags(write=False)
        self.submit_s, self.duration_s, self.num_gpus, self.name = submit, duration, gpus, str(name)

    def __len__(self) -> int:
        return int(self.submit_s.size)

    def __repr__(self) -> str:
        n = len(self)
        span = float(self.submit_s[-1]) if n else 0.0
        return f"Workload({self.name!r}, {n} jobs over {span:.0f} s, {int(self.num_gpus.sum())} GPUs requested)"

    def __eq__(self, other) -> bool:
        if not isinstance(other, Workload):
            return NotImplemented
        return (np.array_equal(self.submit_s, other.submit_s)
                and np.array_equal(self.duration_s, other.duration_s)
                and np.array_equal(self.num_gpus, other.num_gpus))

    __hash__ = None

    @property
    def gpu_time_s(self) -> np.ndarray:
        """GPU-seconds of each job (``duration_s * num_gpus``)."""
        return self.duration_s * self.num_gpus

    @property
    def submit_ns(self) -> np.ndarray:
        return to_ns(self.submit_s)

    @property
    def duration_ns(self) -> np.ndarray:
        return to_ns(self.duration_s)

    def offered_load(self, total_gpus: int) -> float:
        """GPU-seconds demanded per GPU-second available over the submit span."""
        span = float(self.submit_s[-1] - self.submit_s[0]) if len(self) > 1 else 0.0
        if span <= 0:
            raise ValueError("offered_load needs at least two jobs with different submit times")
        return float(self.gpu_time_s.sum()) / (span * total_gpus)

    # ---------------------------------------------------------------- CSV
    def to_csv(self, path=None, *, submit_decimals: int | None = None,
               duration_decimals: int | None = None) -> str | None:
        """Write ``job_id,submit_s,duration_s,num_gpus``.

        By default floats are written in Python's shortest round-trip form, so
        :meth:`from_csv` gives back the same arrays exactly; ``*_decimals`` fixes the
        number of decimals instead (smaller files, error <= half a unit in the last
        place). Either way the text is identical for identical arrays on every platform.
        Returns the text when ``path`` is None.
        """
        fs = repr if submit_decimals is None else f"{{:.{int(submit_decimals)}f}}".format
        fd = repr if duration_decimals is None else f"{{:.{int(duration_decimals)}f}}".format
        buf = io.StringIO()
        buf.write(",".join(CSV_HEADER) + "\n")
        for i, (s, d, g) in enumerate(zip(self.submit_s.tolist(), self.duration_s.tolist(),
                                           self.num_gpus.tolist(), strict=True)):
            buf.write(f"{i},{fs(s)},{fd(d)},{g}\n")
        text = buf.getvalue()
        if path is None:
            return text
        Path(path).write_text(text, encoding="utf-8", newline="\n")
        return None

    @classmethod
    def from_csv(cls, path, name: str | None = None) -> Workload:
        """Read a file written by :meth:`to_csv` (errors name the file, line and column)."""
        p = Path(path)
        c = read_columns(p, CSV_HEADER)
        ids = c.ints("job_id")
        c.check("job_id", ids == np.arange(len(c)), "expected job_id to count 0, 1, 2, ...")
        submit = c.floats("submit_s", maximum=MAX_SECONDS)
        if len(c) > 1:
            c.check("submit_s", np.concatenate(([True], np.diff(submit) >= 0)),
                    "expected submit_s sorted (non-decreasing)")
        duration = c.floats("duration_s", maximum=MAX_SECONDS)
        c.check("duration_s", duration > 0, "expected a duration > 0")
        gpus = c.ints("num_gpus", minimum=1, maximum=MAX_GPUS)
        return cls(submit, duration, gpus, name=p.stem if name is None else name)


def _gpu_array(num_gpus, n: int) -> np.ndarray:
    if isinstance(num_gpus, numbers.Integral) and not isinstance(num_gpus, bool):
        if not 1 <= num_gpus <= MAX_GPUS:
            raise ValueError(f"num_gpus must be in [1, {MAX_GPUS:,}], got {excerpt(num_gpus)}")
        return np.full(n, int(num_gpus), dtype=np.int64)
    arr = np.asarray(num_gpus)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"num_gpus must be integers, got dtype {arr.dtype}")
    if arr.size and arr.max() > MAX_GPUS:  # before the int64 cast: a uint64 could wrap
        raise ValueError(f"num_gpus must be <= {MAX_GPUS:,}; job {int(np.argmax(arr))} has {int(arr.max())}")
    arr = np.array(arr, dtype=np.int64, copy=True).reshape(-1)
    if arr.size != n:
        raise ValueError(f"num_gpus has {arr.size} values but there are {n} jobs")
    if n and arr.min() < 1:
        raise ValueError(f"num_gpus must be >= 1; job {int(np.argmin(arr))} has {int(arr.min())}")
    return arr


def _draw_gpus(gpus, n: int, rng: np.random.Generator) -> np.ndarray:
    """An int, an array of length n, or a mix ``{count: weight}`` drawn with ``rng``."""
    if not isinstance(gpus, dict):
        return _gpu_array(gpus, n)
    if not gpus:
        raise ValueError("gpus mix is empty; give {num_gpus: weight, ...}")
    counts = list(gpus)
    for k in counts:
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
            raise ValueError(f"gpus mix keys must be integers >= 1 (GPUs per job), got {excerpt(k)}")
    w = np.array([gpus[k] for k in counts], dtype=np.float64)
    if not np.all(np.isfinite(w)) or w.min() < 0 or w.sum() <= 0:
        raise ValueError(f"gpus mix weights must be finite, >= 0 and not all 0, got {list(w)}")
    return np.asarray(counts, dtype=np.int64)[rng.choice(len(counts), size=n, p=w / w.sum())]


def make_workload(arrivals, service, gpus=1, *, seed=None, name: str = "synthetic") -> Workload:
    """Combine arrival times, service times and GPU counts into a :class:`Workload`.

    Parameters
    ----------
    arrivals : array of float
        Submit times in seconds (e.g. from :func:`poisson_arrivals`); sorted here if needed.
    service : array of float, float, or callable
        Run times in seconds: an array of the same length, one value for every job,
        or ``service(n, rng) -> array`` (e.g. ``lambda n, rng: lognormal_service(600, 3, n, seed=rng)``).
    gpus : int, array of int, or dict
        GPUs per job; a dict ``{num_gpus: weight}`` is a mix drawn at random.
    seed : int, None or numpy.random.Generator
        Used for a callable ``service`` and a ``gpus`` mix.
    """
    a = np.asarray(arrivals, dtype=np.float64).reshape(-1)
    if a.dtype.kind != "f":
        raise TypeError("arrivals must be a float array of seconds")
    n = a.size
    rng = rng_from(seed)
    if callable(service):
        s = np.asarray(service(n, rng), dtype=np.float64)
    elif isinstance(service, numbers.Real) and not isinstance(service, bool):
        s = np.full(n, float(service))
    else:
        s = np.asarray(service, dtype=np.float64)
    if s.shape != (n,):
        raise ValueError(f"service gives {s.size} run times for {n} arrivals")
    g = _draw_gpus(gpus, n, rng)
    order = np.argsort(a, kind="stable")
    return Workload(a[order], s[order], g[order], name=name)


def load_sample_workload(path=None) -> Workload:
    """The shipped sample workload (Philly-calibrated; see data/sample_workload.md).

    ``path`` overrides the location; else ``$MAGNUM_SAMPLE_WORKLOAD``; else the
    repository's ``data/sample_workload.csv``.
    """
    p = Path(path or os.environ.get("MAGNUM_SAMPLE_WORKLOAD", "") or SAMPLE_WORKLOAD)
    if not p.is_file():
        raise FileNotFoundError(
            f"sample workload not found at {p}; regenerate it with "
            "`python scripts/make_sample_workload.py` from the repository root"
        )
    return Workload.from_csv(p, name="sample")
