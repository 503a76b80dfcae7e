"""The built-in policy registry: complete right after import, the CLI's choices, no self-registration."""
from __future__ import annotations

import subprocess
import sys

from magnum_lib.replay.api import Policy

EXPECTED = {"fifo-strict", "fifo-skip", "sjf", "srtf", "las", "gavel", "gavel-blind", "ftf", "fgd",
            "gavel-fifo", "gavel-rounds", "gavel-rounds-blind"}


def _fresh(code: str) -> str:
    """Run ``code`` in a new interpreter (nothing imported or called before it)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_registry_is_complete_right_after_import():
    # A fresh interpreter: the table must not depend on make_policy having been called.
    names = _fresh("import magnum_lib.replay as r; print(','.join(sorted(r.BUILTIN)))")
    assert set(names.split(",")) == EXPECTED


def test_registry_unchanged_by_calls_and_read_only():
    import pytest

    from magnum_lib.replay import BUILTIN, make_policy

    before = dict(BUILTIN)
    for name in sorted(BUILTIN):
        assert isinstance(make_policy(name), Policy)
    assert dict(BUILTIN) == before
    with pytest.raises(TypeError):
        BUILTIN["mine"] = object          # registration is by editing registry.py, not at run time


def test_cli_policy_choices_are_the_registry():
    import pytest

    from magnum_lib.cli import build_parser
    from magnum_lib.commands import replay as cmd
    from magnum_lib.commands._common import UsageError
    from magnum_lib.replay import BUILTIN

    assert cmd.policy_choices() == tuple(BUILTIN)
    assert not hasattr(cmd, "POLICIES")                 # no second, hand-kept list
    parser = build_parser([cmd])
    for name in BUILTIN:                                # every registered name parses...
        assert parser.parse_args(["replay", "--policy", name]).policy == name
    with pytest.raises(UsageError) as exc:              # ...and nothing else does,
        parser.parse_args(["replay", "--policy", "not-a-policy"])
    assert "'fifo-strict', 'fifo-skip', 'sjf'" in str(exc.value)   # listing the registry's names


def test_policy_modules_do_not_register_themselves():
    # Importing a policy module alone must not change any table (the old import circle).
    out = _fresh("import magnum_lib.replay.fairness, magnum_lib.replay.fgd, magnum_lib.replay.gavel_rounds, "
                 "magnum_lib.replay.policies as p; print(hasattr(p, 'BUILTIN'), hasattr(p, 'make_policy'))")
    assert out == "False False"
