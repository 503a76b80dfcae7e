"""The article's node score, as written, and the corrected placement cost.

The article (Faux-MAGNUM's Oracle) scores a node for a job as::

    score = job_gpu_demand * (1 - node_utilization) + inter_node_bandwidth * job_comm_size

and takes the **argmin**. Read literally:

* ``demand * (1 - utilization)`` is smallest on the *busiest* node. Restricted to nodes
  where the job fits, that is best-fit packing (arguably what was meant); without the fit
  check it picks full nodes, where the job cannot run at all.
* ``bandwidth * comm`` is smallest on the *lowest*-bandwidth node, and the more a job
  communicates the harder it is pushed there: backwards for a communication-heavy job.
  Bandwidth belongs in a denominator (transfer time = bytes / bandwidth).

The corrected cost keeps the packing intent and turns the bandwidth term into time::

    cost = (1 - w) * (free - demand) + w * 1000 * comm / bandwidth

``free - demand`` is the number of devices the job leaves free on its node (stranded if
nothing else fits there: best fit makes it 0), ``1000 * comm / bandwidth`` the
milliseconds per step its traffic takes on the node's network (comm in GB, bandwidth in
GB/s). ``w`` in [0, 1] weighs bandwidth against packing (the notebook's slider). Cost
units: at ``w = 0`` one unit is one stranded device, at ``w = 1`` one millisecond.

Both functions broadcast and never raise on NaN / inf / zero bandwidth: the result is then
NaN or inf, and the planners treat a non-finite cost as "not allowed".
"""
from __future__ import annotations

import numbers

import numpy as np

from magnum_lib.base.validate import ParameterError

__all__ = ["article_score", "placement_cost", "check_weight", "DEFAULT_WEIGHT"]

DEFAULT_WEIGHT = 0.5


def check_weight(weight) -> float:
    """Return ``weight`` as a float in [0, 1] or raise ParameterError naming ``weight``."""
    if isinstance(weight, bool) or not isinstance(weight, numbers.Real) or not 0.0 <= float(weight) <= 1.0:
        raise ParameterError("weight", f"must be a number in [0, 1] (0: packing only, 1: bandwidth only), "
                                       f"got {weight!r}")
    return float(weight)


def article_score(demand, utilization, bandwidth_gbps, comm_gb):
    """The article's score, literally: ``demand * (1 - utilization) + bandwidth * comm`` (argmin wins)."""
    with np.errstate(invalid="ignore", over="ignore"):
        return np.asarray(demand) * (1.0 - np.asarray(utilization)) + np.asarray(bandwidth_gbps) * comm_gb


def placement_cost(demand, free, comm_gb, bandwidth_gbps, weight: float = DEFAULT_WEIGHT):
    """Corrected cost of a job on a node: ``(1-w)*(free-demand) + w*1000*comm/bandwidth``.

    Parameters
    ----------
    demand, free : array_like of int
        Devices the job needs; free devices on the node (the caller checks ``demand <= free``).
    comm_gb : array_like of float
        GB the job sends per step.
    bandwidth_gbps : array_like of float
        The node's network bandwidth, GB/s. Zero gives inf (or NaN with zero traffic).
    weight : float
        ``w`` in [0, 1].
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        comm_ms = 1000.0 * np.asarray(comm_gb, dtype=np.float64) / np.asarray(bandwidth_gbps, dtype=np.float64)
        left = np.asarray(free, dtype=np.float64) - np.asarray(demand, dtype=np.float64)
        return (1.0 - weight) * left + weight * comm_ms
