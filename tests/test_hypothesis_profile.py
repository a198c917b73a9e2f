"""The suite's profiles: no per-example deadline (load on a shared machine is not a failure); what only
the full run (CI=true) runs."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.conftest import FULL_RUN_ONLY, examples, hypothesis_profile, is_slow, skip_outside_full_run

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


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


class _Item:
    """What skip_outside_full_run reads and writes of a collected test."""

    def __init__(self, *markers: str) -> None:
        self.markers = [getattr(pytest.mark, name).mark for name in markers]

    def get_closest_marker(self, name):
        return next((m for m in self.markers if m.name == name), None)

    def add_marker(self, mark) -> None:
        self.markers.append(mark.mark)


@pytest.mark.parametrize(("environ", "skipped"), [({}, True), ({"CI": "false"}, True), ({"CI": "true"}, False)])
def test_deployments_and_bench_self_tests_are_skipped_with_their_reason_outside_the_full_run(environ, skipped):
    deployment, meter = _Item("slow", "deployment"), _Item("bench_self_test")
    slow, plain = _Item("slow"), _Item()
    skip_outside_full_run([deployment, meter, slow, plain], environ)
    for item, marker in ((deployment, "deployment"), (meter, "bench_self_test")):
        mark = item.get_closest_marker("skip")
        assert (mark is not None) is skipped
        assert mark is None or (mark.kwargs["reason"] == FULL_RUN_ONLY[marker] and "CI=true" in mark.kwargs["reason"])
    assert slow.get_closest_marker("skip") is None and plain.get_closest_marker("skip") is None


def test_every_full_run_only_marker_is_registered_and_scheduled_first():
    lines = tomllib.loads(PYPROJECT.read_text())["tool"]["pytest"]["ini_options"]["markers"]
    registered = {line.split(":")[0].strip() for line in lines}
    assert set(FULL_RUN_ONLY) <= registered
    assert all(is_slow(_Item(name)) for name in FULL_RUN_ONLY) and not is_slow(_Item())
