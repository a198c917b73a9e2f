"""Alerts reach a person: failed runs, checks that turned bad, tokens that gave up — posted to a local
webhook receiver in Slack's `{"text": ...}` shape, at most once per subject per hour, never when unset."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import dagster as dg
import pytest
import redis as redis_lib

from socialrec_pipeline.defs.alerts import alert_on_check_and_stuck_token, alert_on_run_failure
from socialrec_pipeline.defs.resources import MongoResource, RedisResource
from socialrec_pipeline.defs.tags import TOKEN_TAG
from socialrec_pipeline.recording.alerts import WEBHOOK_ENV, AlertSender, AlertSettings
from socialrec_pipeline.sandbox.fixture_server import FixtureServer, Reply
from socialrec_pipeline.stream.inbox import COLLECTION as INBOX
from socialrec_pipeline.stream.inbox import STUCK

TOKEN = "7GCihgDB8fe6KNjn2MYtkzZcRjQy3t9GHdC8uHYmW2hr"


@pytest.fixture
def receiver():
    with FixtureServer() as server:
        server.route("POST", "/hook", Reply.json({"ok": True}))
        yield server


@pytest.fixture
def redis_client(redis_url):
    """Redis, and a list of alert subjects whose throttle keys the test removes when it ends (every
    subject here is unique to its test, so the shared Redis keeps no key of ours)."""
    client = redis_lib.Redis.from_url(redis_url)
    client.subjects = []
    yield client
    keys = AlertSender(AlertSettings(None, ""), client)
    for subject in client.subjects:
        client.delete(keys.throttle_key(subject))
    client.close()


@pytest.fixture
def webhook(receiver, monkeypatch):
    monkeypatch.setenv(WEBHOOK_ENV, f"{receiver.url}/hook")
    return receiver


def texts(server: FixtureServer) -> list[str]:
    return [call.json()["text"] for call in server.calls("/hook")]


# -- the sender -----------------------------------------------------------------------------------


def test_sender_posts_slack_json_once_per_subject_per_hour(receiver, redis_client):
    sender = AlertSender(AlertSettings(f"{receiver.url}/hook", "http://ui"), redis_client)
    subject = f"test:{uuid.uuid4().hex}"
    redis_client.subjects += [subject, f"{subject}:other"]
    assert sender.send(subject, "first")
    assert not sender.send(subject, "second, within the hour")
    assert sender.send(f"{subject}:other", "another subject")
    assert texts(receiver) == ["first", "another subject"]
    assert receiver.calls("/hook")[0].headers["content-type"] == "application/json"


def test_sender_sends_nothing_when_the_webhook_is_unset(redis_client):
    sender = AlertSender(AlertSettings.from_env({}), redis_client)
    assert not sender.enabled
    assert not sender.send(f"test:{uuid.uuid4().hex}", "nobody hears this")


def test_a_failed_delivery_is_tried_again_not_throttled(receiver, redis_client):
    sender = AlertSender(AlertSettings(f"{receiver.url}/hook", "http://ui"), redis_client)
    subject = f"test:{uuid.uuid4().hex}"
    redis_client.subjects.append(subject)
    receiver.fail_with(Reply.json({"error": "down"}, status=503))
    assert not sender.send(subject, "lost to a 503")
    assert sender.send(subject, "delivered on the next try")
    assert texts(receiver)[-1] == "delivered on the next try"


def test_the_webhook_must_be_an_http_url():
    with pytest.raises(ValueError, match=WEBHOOK_ENV):
        AlertSettings.from_env({WEBHOOK_ENV: "file:///etc/passwd"})


# -- failed runs ------------------------------------------------------------------------------------


@dg.op
def explode() -> None:
    raise RuntimeError("SolTracker answered 500 three times")


@dg.job
def failing_job() -> None:
    explode()


def _failed_run_context(instance, redis_url, token):
    result = failing_job.execute_in_process(instance=instance, raise_on_error=False, tags={TOKEN_TAG: token})
    assert not result.success
    run = instance.get_run_by_id(result.run_id)
    failure = next(e for e in result.all_events if e.event_type == dg.DagsterEventType.RUN_FAILURE)
    return dg.build_run_status_sensor_context(
        sensor_name="alert_on_run_failure",
        dagster_instance=instance,
        dagster_run=run,
        dagster_event=failure,
        resources={"redis": RedisResource(url=redis_url)},
    ).for_run_failure()


def test_a_failed_run_is_posted_with_job_token_step_message_and_link(instance, webhook, redis_url, redis_client):
    token = f"{TOKEN[:30]}{uuid.uuid4().hex[:12]}"
    redis_client.subjects.append(f"run-failed:failing_job:{token}")
    context = _failed_run_context(instance, redis_url, token)
    alert_on_run_failure(context)
    [text] = texts(webhook)
    assert "failing_job" in text and token in text and "explode" in text
    assert "SolTracker answered 500 three times" in text
    assert f"/runs/{context.dagster_run.run_id}" in text
    alert_on_run_failure(_failed_run_context(instance, redis_url, token))  # same job and token within the hour
    assert len(texts(webhook)) == 1


def test_no_webhook_no_post_for_a_failed_run(instance, receiver, redis_url, monkeypatch):
    monkeypatch.delenv(WEBHOOK_ENV, raising=False)
    alert_on_run_failure(_failed_run_context(instance, redis_url, TOKEN))
    assert texts(receiver) == []


# -- checks that turn bad, and tokens that gave up -------------------------------------------------------


def _check_defs(outcome: dict) -> dg.Definitions:
    name = f"probe_{uuid.uuid4().hex[:8]}"

    @dg.asset(name=name)
    def probe() -> None:
        return None

    @dg.asset_check(asset=probe, name="keeping_up")
    def keeping_up() -> dg.AssetCheckResult:
        return dg.AssetCheckResult(
            passed=outcome["passed"], severity=dg.AssetCheckSeverity.ERROR, description=outcome["why"]
        )

    return dg.Definitions(assets=[probe], asset_checks=[keeping_up], sensors=[alert_on_check_and_stuck_token])


def _evaluate(defs, instance, resources, cursor=None):
    context = dg.build_sensor_context(
        instance=instance, cursor=cursor, repository_def=defs.get_repository_def(), resources=resources
    )
    reason = alert_on_check_and_stuck_token(context)
    return context.cursor, reason


def test_a_check_turning_bad_is_posted_once(instance, webhook, redis_url, redis_client, mongo_uri, fresh_db):
    outcome = {"passed": True, "why": "nothing waits"}
    defs = _check_defs(outcome)
    [check_key] = defs.get_repository_def().asset_graph.asset_check_keys
    redis_client.subjects.append(f"check:{check_key.to_user_string()}")
    job = defs.resolve_implicit_global_asset_job_def()
    resources = {"redis": RedisResource(url=redis_url), "mongo": MongoResource(uri=mongo_uri, database=fresh_db.name)}

    assert job.execute_in_process(instance=instance).success
    cursor, _ = _evaluate(defs, instance, resources)
    assert texts(webhook) == []  # green: nothing to say

    outcome.update(passed=False, why="no token recorded for 2 h while 3 inbox entries wait")
    job.execute_in_process(instance=instance, raise_on_error=False)
    cursor, reason = _evaluate(defs, instance, resources, cursor)
    [text] = texts(webhook)
    assert "keeping_up" in text and "ERROR" in text and "3 inbox entries wait" in text
    assert "1 alert" in reason.skip_message

    job.execute_in_process(instance=instance, raise_on_error=False)  # still red: no second message
    cursor, _ = _evaluate(defs, instance, resources, cursor)
    assert len(texts(webhook)) == 1


def test_a_token_that_gave_up_is_posted_once(instance, webhook, redis_url, redis_client, mongo_uri, fresh_db):
    address = f"Stuck{uuid.uuid4().hex[:20]}"
    redis_client.subjects.append(f"stuck:{address}:abc123")
    fresh_db[INBOX].insert_one(
        {
            "token_address": address,
            "state": STUCK,
            "generation": 6,
            "failures": 6,
            "symbol": "RUG",
            "last_failed_run_id": "abc123",
            "check_at": datetime.now(UTC),
        }
    )
    defs = dg.Definitions(sensors=[alert_on_check_and_stuck_token])
    resources = {"redis": RedisResource(url=redis_url), "mongo": MongoResource(uri=mongo_uri, database=fresh_db.name)}
    cursor, _ = _evaluate(defs, instance, resources)
    [text] = texts(webhook)
    assert address in text and "RUG" in text and "6 failed run" in text and "/runs/abc123" in text
    _evaluate(defs, instance, resources, cursor)
    assert len(texts(webhook)) == 1


@pytest.mark.bench_self_test  # the full run only (tests/conftest.py, FULL_RUN_ONLY)
@pytest.mark.slow
def test_the_alerts_bench_sees_a_webhook_that_refuses_every_post():
    """bench/alerts.py --self-test: every row must report its alert as not delivered."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "bench/alerts.py", "--self-test"], cwd=root, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "bench_self_test: 4/4 rows detect their breach"
