"""The Hypothesis profiles of tests/conftest.py: CI selects "ci" with HYPOTHESIS_PROFILE=ci."""
from __future__ import annotations

import os

from hypothesis import settings


def test_ci_profile_is_reproducible():
    ci = settings.get_profile("ci")
    assert ci.derandomize is True and ci.deadline is None and ci.database is None
    assert 50 <= ci.max_examples <= 500


def test_profile_follows_the_environment():
    wanted = os.environ.get("HYPOTHESIS_PROFILE", "default")
    assert settings.default is settings.get_profile(wanted)
