"""The job list a replay runs: one structure of arrays built from every trace we load.

Times are int64 nanoseconds inside (``submit_ns``, ``work_ns``); the builders take
seconds. ``work_ns`` is the run time on the reference GPU type (speed 1.0); a job on
a type with speed ``s`` needs ``work_ns / s`` of wall time. Jobs are sorted by submit
time (stable: ties keep trace order), and job ``i`` is the ``i``-th in that order.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from magnum_lib.base.validate import ParameterError, excerpt

__all__ = ["ReplayJobs", "make_jobs"]

NS = 1_000_000_000


@dataclass(frozen=True, eq=False)
class ReplayJobs:
    """Jobs of one replay (see the module docstring).

    Attributes
    ----------
    submit_ns, work_ns : int64 arrays
        Submit time (first job at its own offset, usually 0) and work in ns.
    num_gpus : int64 array
        GPUs of the gang (all granted together or not at all).
    gpu_milli : int64 array
        Thousandths of each GPU the job uses (1000 = whole GPUs; Alibaba pods share).
    speed : float64 array (jobs x GPU types) or None
        Relative speed on each cluster GPU type (Gavel's matrix); None means 1.0 everywhere.
    type_mask : int64 array or None
        Bit ``t`` set = the job may run on GPU type ``t``; None or 0 = any type.
    group_code, group_names : per-job code into names (Philly VC, user, model...).
    model_code, model_names : the model of each job when the trace says (Gavel, Tiresias).
    """

    submit_ns: np.ndarray
    work_ns: np.ndarray
    num_gpus: np.ndarray
    gpu_milli: np.ndarray
    speed: np.ndarray | None = None
    type_mask: np.ndarray | None = None
    group_code: np.ndarray | None = None
    group_names: tuple = ()
    model_code: np.ndarray | None = None
    model_names: tuple = ()
    name: str = ""
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        # make_jobs checks everything; this catches the impossible values of a direct build.
        n = np.shape(self.submit_ns)[0] if np.ndim(self.submit_ns) == 1 else -1
        for name, lo, hi in (("submit_ns", 0, None), ("work_ns", 1, None), ("num_gpus", 1, None),
                             ("gpu_milli", 1, 1000)):
            a = np.asarray(getattr(self, name))
            if a.ndim != 1 or a.shape[0] != n or a.dtype.kind not in "iu":
                raise ParameterError(name, f"must be a 1-D integer array of {n} values (as submit_ns), "
                                           f"got {a.dtype} of shape {a.shape}")
            if a.size and (a.min() < lo or (hi is not None and a.max() > hi)):
                bad = int(a.min()) if a.min() < lo else int(a.max())
                raise ParameterError(name, f"must be in [{lo}, {hi if hi is not None else 'inf'}], got {bad}")

    def __len__(self) -> int:
        return int(self.submit_ns.size)

    def __repr__(self) -> str:
        return (f"ReplayJobs({self.name!r}, {len(self)} jobs, "
                f"{int(self.num_gpus.sum()) if len(self) else 0} GPUs requested)")

    @property
    def submit_s(self) -> np.ndarray:
        return self.submit_ns / NS

    @property
    def duration_s(self) -> np.ndarray:
        """Run time on the reference type (speed 1), seconds."""
        return self.work_ns / NS

    @property
    def whole_gpus(self) -> bool:
        return bool(np.all(self.gpu_milli == 1000))

    def subset(self, index) -> ReplayJobs:
        """The jobs at ``index`` (a boolean mask or sorted indices), renumbered 0..k-1."""
        if isinstance(index, slice):
            idx = np.arange(len(self))[index]
        else:
            arr = np.asarray(index)
            idx = np.flatnonzero(arr) if arr.dtype == bool else arr.astype(np.int64)
        take = (lambda a: None if a is None else a[idx])
        return ReplayJobs(self.submit_ns[idx], self.work_ns[idx], self.num_gpus[idx],
                          self.gpu_milli[idx], take(self.speed), take(self.type_mask),
                          take(self.group_code), self.group_names, take(self.model_code),
                          self.model_names, self.name, dict(self.info))

    def shifted(self) -> ReplayJobs:
        """The same jobs with submit times relative to the first one."""
        if len(self) == 0:
            return self
        j = self.subset(np.arange(len(self)))
        object.__setattr__(j, "submit_ns", self.submit_ns - self.submit_ns[0])
        return j


#: The longest run time of a job on any GPU type (work / speed), seconds: about 32 years,
#: so that submit + run time stays far inside the engine's int64 ns.
MAX_WALL_S = 1e9


def _int_array(name, values, n, minimum, maximum=None):
    arr = np.asarray(values)
    if arr.ndim == 0:
        arr = np.full(n, arr)
    if arr.shape != (n,):
        raise ParameterError(name, f"must have {n} values (one per job), got shape {arr.shape}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ParameterError(name, "must be whole numbers")
    elif arr.dtype.kind not in "iub":
        raise ParameterError(name, f"must be integers, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    if n and arr.min() < minimum:
        i = int(np.argmin(arr))
        raise ParameterError(name, f"must be >= {minimum}; job {i} has {int(arr[i])}")
    if maximum is not None and n and arr.max() > maximum:
        i = int(np.argmax(arr))
        raise ParameterError(name, f"must be <= {maximum}; job {i} has {int(arr[i])}")
    return arr


def make_jobs(submit_s, duration_s, num_gpus=1, *, gpu_milli=1000, speed=None, type_mask=None,
              group=None, model=None, name: str = "jobs") -> ReplayJobs:
    """Validate per-job arrays (seconds) and build :class:`ReplayJobs`, sorted by submit time.

    ``duration_s`` is the run time on the reference type (> 0; rounded to whole ns).
    ``group`` and ``model`` are per-job labels (strings or ints) or None.
    """
    submit = np.asarray(submit_s, dtype=np.float64).reshape(-1)
    n = submit.size
    dur = np.asarray(duration_s, dtype=np.float64).reshape(-1)
    if dur.size != n:
        raise ParameterError("duration_s", f"has {dur.size} values but submit_s has {n}")
    if not np.all(np.isfinite(submit)) or (n and submit.min() < 0):
        raise ParameterError("submit_s", "must be finite and >= 0")
    if not np.all(np.isfinite(dur)) or (n and dur.min() <= 0):
        i = int(np.argmin(np.where(np.isfinite(dur), dur, -np.inf)))
        raise ParameterError("duration_s", f"must be finite and > 0; job {i} has {excerpt(float(dur[i]))}")
    if n and max(submit.max(), dur.max()) > 1e8:
        raise ParameterError("duration_s", "and submit_s must be <= 1e8 s (about 3 years)")
    gpus = _int_array("num_gpus", num_gpus, n, 1, 1 << 20)
    milli = _int_array("gpu_milli", gpu_milli, n, 1, 1000)
    if np.any((milli < 1000) & (gpus != 1)):
        raise ParameterError("gpu_milli", "below 1000 (a shared GPU) needs num_gpus == 1")
    sp = None
    if speed is not None:
        sp = np.array(speed, dtype=np.float64, copy=True)
        if sp.ndim != 2 or sp.shape[0] != n:
            raise ParameterError("speed", f"must be a (jobs x gpu types) array, got shape {sp.shape}")
        if not np.all(np.isfinite(sp)) or sp.min() < 0:
            raise ParameterError("speed", "must be finite and >= 0 (0 = cannot run on that type)")
        # A tiny positive speed would overflow the engine's int64 ns (work / speed).
        wall = np.divide(dur[:, None], sp, out=np.zeros_like(sp), where=sp > 0)
        if sp.size and wall.max() > MAX_WALL_S:
            j, t = np.unravel_index(int(np.argmax(wall)), wall.shape)
            raise ParameterError("speed", f"gives job {j} a run time of {wall[j, t]:.3g} s on type {t}; at most "
                                          f"{MAX_WALL_S:.0e} s (raise the speed or use 0: cannot run there)")
    mask = None if type_mask is None else _int_array("type_mask", type_mask, n, 0)

    def codes(label, values):
        if values is None:
            return None, ()
        vals = np.asarray(values, dtype=object).reshape(-1)
        if vals.size != n:
            raise ParameterError(label, f"must have {n} values (one per job), got {vals.size}")
        names, code = np.unique(vals.astype(str), return_inverse=True)
        return code.astype(np.int32), tuple(names.tolist())

    gcode, gnames = codes("group", group)
    mcode, mnames = codes("model", model)
    order = np.argsort(submit, kind="stable")
    submit_ns = np.round(submit * NS).astype(np.int64)
    work_ns = np.maximum(np.round(dur * NS), 1).astype(np.int64)
    o = order
    pick = (lambda a: None if a is None else a[o])
    return ReplayJobs(submit_ns[o], work_ns[o], gpus[o], milli[o], pick(sp), pick(mask),
                      pick(gcode), gnames, pick(mcode), mnames, str(name))
