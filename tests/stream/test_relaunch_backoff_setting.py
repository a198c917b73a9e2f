"""SOCIALREC_RELAUNCH_BACKOFF_MINUTES: the relaunch schedule is a deploy-time setting, strictly parsed."""

from __future__ import annotations

from datetime import timedelta

import pytest

from socialrec_pipeline.recording.settings import SettingError
from socialrec_pipeline.stream.intake import (
    BACKOFF_VARIABLE,
    DEFAULT_BACKOFF_MINUTES,
    TickLimits,
    relaunch_backoff,
    tick_limits_from_env,
)


def test_unset_is_the_default_schedule():
    assert relaunch_backoff({}) == TickLimits().backoff
    assert [step / timedelta(minutes=1) for step in relaunch_backoff({BACKOFF_VARIABLE: " "})] == list(
        DEFAULT_BACKOFF_MINUTES
    )


def test_a_schedule_of_its_own_reaches_the_sensor_limits():
    limits = tick_limits_from_env({BACKOFF_VARIABLE: "0.5, 2,10"})
    assert limits.backoff == (timedelta(seconds=30), timedelta(minutes=2), timedelta(minutes=10))


@pytest.mark.parametrize("raw", ["five", "1,,2", "0", "-1", "1,2,1441", ",".join(["1"] * 13), "nan", "inf"])
def test_a_malformed_schedule_is_refused_with_the_rule(raw):
    with pytest.raises(SettingError, match=BACKOFF_VARIABLE):
        relaunch_backoff({BACKOFF_VARIABLE: raw})
