"""The suite's Hypothesis profiles: no per-example deadline, so load on a shared machine is not a failure."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

from tests.conftest import examples, hypothesis_profile


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


def test_dev_tries_a_fifth_of_the_examples_and_ci_all_of_them():
    assert examples(1500, "dev") == 300 and examples(60, "dev") == 20 and examples(10, "dev") == 10
    assert examples(1500, "ci") == 1500 and examples(60, "ci") == 60
