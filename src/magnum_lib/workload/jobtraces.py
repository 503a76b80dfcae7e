"""Loaders for the small trace files job-level replay needs beside ``traces.py``.

* Tiresias' ``60_job.csv`` (Gu et al., NSDI 2019): ``job_id,num_gpu,submit_time,
  iterations,model_name,duration,interval`` (seconds).
* Helios' ``philly_vc.csv`` (Hu et al., SC 2021): node count of each Philly VC.

Files are found as in :mod:`magnum_lib.workload.traces` (``path``, then
``$MAGNUM_SHARED_DATA``, then ``../shared/data``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from magnum_lib.base.validate import excerpt
from magnum_lib.workload._csvcols import read_columns
from magnum_lib.workload.traces import SOURCES, trace_path

__all__ = ["TiresiasJobs", "load_tiresias_jobs", "load_philly_vc_sizes"]

_TIRESIAS = "tiresias/60_job.csv"
_VC = "helios/philly_vc.csv"
SOURCES.setdefault(_TIRESIAS, "https://github.com/SymbioticLab/Tiresias (commit 959f9b08f44f) simulator/60_job.csv")
SOURCES.setdefault(_VC, "https://github.com/S-Lab-System-Group/HeliosArtifact (commit bdaae109c21f) "
                        "framework/QSSF Service/data/philly_vc.csv")


@dataclass(frozen=True, eq=False)
class TiresiasJobs:
    """A Tiresias job trace, in file order (seconds)."""

    job_id: np.ndarray
    num_gpu: np.ndarray
    submit_s: np.ndarray
    duration_s: np.ndarray
    iterations: np.ndarray
    model_name: tuple
    path: Path = field(repr=False)

    def __len__(self) -> int:
        return int(self.job_id.size)


def load_tiresias_jobs(path=None) -> TiresiasJobs:
    """Load a Tiresias-format trace (default: the 60-job trace)."""
    p = trace_path(_TIRESIAS, path)
    c = read_columns(p, ["job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration", "interval"])
    ids = c.ints("job_id")
    _no_duplicates(p, "job_id", ids.tolist())
    return TiresiasJobs(c.ints("job_id"), c.ints("num_gpu", minimum=1), c.floats("submit_time"),
                        c.floats("duration"), c.ints("iterations"), tuple(c.raw("model_name")), p)


def load_philly_vc_sizes(path=None) -> dict[str, int]:
    """``{vc id: node count}`` from Helios' ``philly_vc.csv`` (11 VCs)."""
    p = trace_path(_VC, path)
    c = read_columns(p, ["vc", "node num"])
    _no_duplicates(p, "vc", list(c.raw("vc")))
    return dict(zip(c.raw("vc"), c.ints("node num", minimum=1).tolist(), strict=True))


def _no_duplicates(path, column: str, values: list) -> None:
    """ValueError naming the file, the column and the first value listed twice (the last
    copy would otherwise silently win)."""
    seen = {}
    for row, v in enumerate(values, start=2):  # line 1 is the header
        if v in seen:
            raise ValueError(f"{path}: line {row}: {column} {excerpt(v)} is listed twice (first on line {seen[v]})")
        seen[v] = row
