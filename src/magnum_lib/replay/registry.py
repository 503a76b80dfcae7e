"""The built-in policies by name: one table, written out here.

Nothing registers itself when imported: a policy is built in because it is listed in
:data:`BUILTIN` below, so the table is the same right after ``import magnum_lib.replay``
as after any call. ``faux-magnum replay --policy`` offers exactly these names
(:func:`names`); tests/test_replay_registry.py checks both.
"""
from __future__ import annotations

from functools import partial
from types import MappingProxyType

from magnum_lib.base.validate import check_choice
from magnum_lib.replay.api import Policy
from magnum_lib.replay.fairness import FinishTimeFairness, GavelMaxMin
from magnum_lib.replay.fgd import FGD
from magnum_lib.replay.gavel_rounds import GavelFIFO, GavelRounds
from magnum_lib.replay.policies import SJF, SRTF, FifoSkip, FifoStrict, TiresiasLAS

__all__ = ["BUILTIN", "make_policy", "names"]

#: name -> factory(**options) of a Policy. Read-only: add a policy by adding a line here.
BUILTIN = MappingProxyType({
    "fifo-strict": FifoStrict,
    "fifo-skip": FifoSkip,
    "sjf": SJF,
    "srtf": SRTF,
    "las": TiresiasLAS,
    "gavel": partial(GavelMaxMin, aware=True),
    "gavel-blind": partial(GavelMaxMin, aware=False),
    "ftf": FinishTimeFairness,
    "fgd": FGD,
    # Gavel's own simulator's round mechanism (job-for-job agreement with it).
    "gavel-fifo": GavelFIFO,
    "gavel-rounds": partial(GavelRounds, "maxmin"),
    "gavel-rounds-blind": partial(GavelRounds, "maxmin-blind"),
})


def names() -> tuple:
    """The built-in policy names, in table order (the CLI's ``--policy`` choices)."""
    return tuple(BUILTIN)


def make_policy(name: str, **options) -> Policy:
    """A built-in policy by name (``names()``), with its options."""
    check_choice("policy", name, sorted(BUILTIN))
    return BUILTIN[name](**options)
