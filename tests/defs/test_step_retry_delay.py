"""The transient retry policy: production delays by default, zero in tests, and never fewer retries."""

from __future__ import annotations

import os

import pytest

from socialrec_pipeline.defs.record_token import record_token_job
from socialrec_pipeline.defs.retry import retry_job
from socialrec_pipeline.defs.services import (
    DEFAULT_STEP_RETRY_DELAY_S,
    STEP_RETRY_DELAY_ENV,
    TRANSIENT_RETRY,
    step_retry_delay_s,
    transient_retry_policy,
)


@pytest.mark.parametrize(("raw", "expected"), [(None, 2.0), ("", 2.0), ("0", 0.0), (" 1.5 ", 1.5), ("600", 600.0)])
def test_the_delay_setting_defaults_to_production_and_accepts_seconds(raw, expected):
    environ = {} if raw is None else {STEP_RETRY_DELAY_ENV: raw}
    assert step_retry_delay_s(environ) == expected


@pytest.mark.parametrize("raw", ["-1", "abc", "nan", "inf", "601", "2s"])
def test_a_malformed_delay_fails_loudly_naming_the_variable(raw):
    with pytest.raises(ValueError, match=STEP_RETRY_DELAY_ENV):
        step_retry_delay_s({STEP_RETRY_DELAY_ENV: raw})


def test_the_production_policy_waits_about_2_6_and_14_seconds():
    policy = transient_retry_policy(DEFAULT_STEP_RETRY_DELAY_S)
    assert policy.max_retries == 3
    for attempt, centre in [(1, 2), (2, 6), (3, 14)]:
        delays = [policy.calculate_delay(attempt) for _ in range(200)]
        assert all(centre - 2 <= d <= centre + 2 for d in delays), (attempt, min(delays), max(delays))


def test_the_policy_is_built_from_the_setting_when_the_code_location_loads():
    # With the setting unset, `step_retry_delay_s` gives the production 2 s (tested above).
    assert transient_retry_policy(step_retry_delay_s(os.environ)) == TRANSIENT_RETRY


def test_tests_retry_back_to_back_but_as_often_as_production():
    assert TRANSIENT_RETRY.delay == 0
    assert TRANSIENT_RETRY.max_retries == transient_retry_policy(DEFAULT_STEP_RETRY_DELAY_S).max_retries
    api_ops = {node.name: node.definition for node in [*record_token_job.graph.nodes, *retry_job.graph.nodes]}
    assert api_ops.keys() >= {"prepare", "record_url", "record_paid_url", "write_marker", "retry_urls"}
    assert {name: op.retry_policy for name, op in api_ops.items()} == dict.fromkeys(api_ops, TRANSIENT_RETRY)


