"""The suite's Hypothesis profiles: no per-example deadline, so load on a shared machine is not a failure."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

from tests.conftest import hypothesis_profile


def test_hypothesis_runs_without_a_per_example_deadline():
    assert settings().deadline is None


@pytest.mark.parametrize(
    ("environ", "expected"),
    [({}, "dev"), ({"CI": "true"}, "ci"), ({"CI": "1"}, "ci"), ({"CI": "false"}, "dev"),
     ({"CI": "true", "HYPOTHESIS_PROFILE": "dev"}, "dev")],
)
def test_ci_selects_the_ci_profile_unless_one_is_named(environ, expected):
    assert hypothesis_profile(environ) == expected


def test_both_profiles_have_no_deadline_and_ci_tolerates_slow_generation():
    dev, ci = settings.get_profile("dev"), settings.get_profile("ci")
    assert dev.deadline is None and ci.deadline is None
    assert HealthCheck.too_slow in ci.suppress_health_check
