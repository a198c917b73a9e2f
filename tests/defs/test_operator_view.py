"""What an operator sees in the UI: descriptions, metadata shapes, run status, log lines, tick reasons."""

from __future__ import annotations

import json
import logging
from datetime import timedelta

import dagster as dg

from socialrec_pipeline.defs import reconcile as reconcile_defs
from socialrec_pipeline.defs.definitions import defs
from socialrec_pipeline.defs.record_token import record_token_job
from socialrec_pipeline.defs.resources import RecordingSettingsResource
from socialrec_pipeline.defs.retry import retry_job
from socialrec_pipeline.defs.services import TRANSIENT_RETRY
from socialrec_pipeline.defs.tags import TOKEN_TAG
from socialrec_pipeline.sandbox.fixture_server import Reply

from .conftest import QUALIFYING_ADDRESSES, flow
from .jobs_fixtures import (
    four_url_token,
    job_resources,
    output_metadata,
    reconcile_job_with,
    reconcile_metadata,
    reconcile_steps,
    unique_address,
)
from .test_token_flow_sensor import tick

WINDOW = "2026-11-30-01:00"


def log_lines(instance, result, level: str | None = None) -> list[str]:
    return [
        e.user_message
        for e in instance.all_logs(result.run_id)
        if e.dagster_event is None and (level is None or e.level == getattr(logging, level))
    ]


def prepare_config(address: str) -> dict:
    return {"ops": {"prepare": {"config": {"token_address": address}}}}


# -- descriptions ------------------------------------------------------------------------------


def _undescribed_fields(config_type, prefix: str) -> list[str]:
    return [
        f"{prefix}.{name}"
        for name, field in (getattr(config_type, "fields", None) or {}).items()
        if not field.description
    ]


def test_every_definition_and_config_field_is_described():
    repo = defs.get_repository_def()
    missing = []
    for job in repo.get_all_jobs():
        if job.name.startswith("__"):
            continue
        missing += [] if job.description else [f"job {job.name}"]
        for node in job.all_node_defs:
            missing += [] if node.description else [f"op {node.name}"]
            if node.config_schema is not None and node.config_schema.config_type is not None:
                missing += _undescribed_fields(node.config_schema.config_type, f"op {node.name} config")
    missing += [f"schedule {s.name}" for s in repo.schedule_defs if not s.description]
    missing += [f"sensor {s.name}" for s in repo.sensor_defs if not s.description]
    for name, resource in defs.resources.items():
        missing += [] if type(resource).__doc__ else [f"resource {name}"]
        if isinstance(resource, dg.ResourceDefinition):  # no config fields (deploy-time settings)
            missing += [] if resource.description else [f"resource {name} description"]
            continue
        for field_name, info in type(resource).model_fields.items():
            is_nested = isinstance(info.annotation, type) and issubclass(info.annotation, dg.ConfigurableResource)
            if not is_nested and not info.description:
                missing.append(f"resource {name}.{field_name}")
        if name == "generators":
            for provider_name in type(resource).model_fields:
                provider = type(getattr(resource, provider_name))
                missing += [] if provider.__doc__ else [f"resource generators.{provider_name}"]
                missing += [
                    f"resource generators.{provider_name}.{f}"
                    for f, i in provider.model_fields.items()
                    if not i.description
                ]
    assert missing == []


# -- record_token_job ----------------------------------------------------------------------------


def test_url_table_is_a_table_with_status_and_why(fixtures, instance, mongo_uri, fresh_db, redis_url):
    server, soltracker = fixtures
    address = unique_address()
    soltracker.put(four_url_token(address))

    result = record_token_job.execute_in_process(
        run_config=prepare_config(address),
        instance=instance,
        resources=job_resources(server.url, mongo_uri, fresh_db.name, redis_url),
    )

    assert result.success
    table = output_metadata(result, "write_marker")["urls"]
    assert isinstance(table, dg.TableMetadataValue)
    rows = {r.data["source_field"]: r.data for r in table.records}
    assert rows["discord"]["status"] == "skipped_paid" and rows["discord"]["platform"] == "tt"
    assert "paid" in rows["discord"]["detail"]
    assert rows["website"]["status"] == "ok" and rows["website"]["detail"] == ""
    assert [c.name for c in table.schema.columns] == ["status", "platform", "source_field", "api_call", "url", "detail"]
    # long text carries its own line breaks, so the inline table never breaks a status word
    assert rows["discord"]["url"].replace("\n", "") == "https://tiktok.com/@moonkol/video/7350000000000000001"
    assert all(len(line) <= 26 for line in rows["discord"]["url"].split("\n"))
    assert all(len(line) <= 18 for r in rows.values() for line in r["detail"].split("\n"))


def test_a_run_launched_by_hand_is_tagged_with_its_token(fixtures, instance, mongo_uri, fresh_db, redis_url):
    server, _ = fixtures
    address = unique_address()  # unknown upstream: a quick, green run

    result = record_token_job.execute_in_process(
        run_config=prepare_config(address),
        instance=instance,
        resources=job_resources(server.url, mongo_uri, fresh_db.name, redis_url),
    )

    assert result.success
    assert instance.get_run_by_id(result.run_id).tags[TOKEN_TAG] == address


def test_an_upstream_outage_fails_with_a_message_that_says_what_to_do(
    fixtures, instance, mongo_uri, fresh_db, redis_url
):
    server, soltracker = fixtures
    address = unique_address()
    soltracker.put(four_url_token(address))
    with soltracker.failing(Reply.json({"message": "down"}, status=503), times=10):
        result = record_token_job.execute_in_process(
            run_config=prepare_config(address),
            instance=instance,
            raise_on_error=False,
            resources=job_resources(server.url, mongo_uri, fresh_db.name, redis_url),
        )

    assert not result.success
    retries = [e for e in result.all_events if e.event_type_value == "STEP_UP_FOR_RETRY" and e.step_key == "prepare"]
    assert len(retries) == TRANSIENT_RETRY.max_retries == 3  # every retry happened (tests wait 0 s between them)
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    description = failure.event_specific_data.user_failure_data.description
    assert "SolTracker" in description and "SOL_TRACKER_BASE_URL" in description
    # Issue 19: the sensor relaunches it on its schedule (no event needed), a manual run is re-executed.
    assert "next token.flow event" not in description and "re-execute" in description
    assert "relaunched automatically after 1, 5, 15, 60, 60, 60 minutes" in description
    errors = log_lines(instance, result, "ERROR")
    assert errors and all(address in line for line in errors)  # each attempt says why, in the run's logs
    assert instance.get_run_by_id(result.run_id).tags["socialrec/outcome"] == "upstream_failed"


# -- reconcile_job -------------------------------------------------------------------------------


def test_reconcile_with_a_failed_token_is_red_and_keeps_its_counts(
    fixtures, instance, mongo_uri, fresh_db, redis_url, monkeypatch
):
    from socialrec_pipeline.recording.processor import TokenRecorder

    server, soltracker = fixtures
    good, bad = unique_address(), unique_address()
    soltracker.put(four_url_token(good, last_transfer="2026-11-30T01:10:00Z"))
    soltracker.put(four_url_token(bad, last_transfer="2026-11-30T01:20:00Z"))
    original = TokenRecorder.record_upstream_token

    def flaky(self, token, owner, **kwargs):
        if token.address == bad:
            raise ValueError("a generator bug")
        return original(self, token, owner, **kwargs)

    monkeypatch.setattr(TokenRecorder, "record_upstream_token", flaky)

    result = reconcile_job_with(job_resources(server.url, mongo_uri, fresh_db.name, redis_url)).execute_in_process(
        partition_key=WINDOW,
        instance=instance,
        raise_on_error=False,
    )

    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    data = failure.event_specific_data.user_failure_data
    assert "1 token(s) failed" in data.description and "Launch this partition again" in data.description
    assert data.metadata["recorded"].value == 1 and data.metadata["failed"].value == 1
    assert data.metadata["status_ok"].value == 2  # URL statuses as numbers
    assert fresh_db["tokens"].find_one({"address": good}) is not None
    events = [e.event_type_value for e in reconcile_steps(result)]
    assert "STEP_FAILURE" in events and "STEP_UP_FOR_RETRY" not in events  # the operator relaunches; no blind retries


def test_reconcile_stopped_by_its_deadline_is_red(fixtures, instance, mongo_uri, fresh_db, redis_url, monkeypatch):
    server, soltracker = fixtures
    monkeypatch.setattr(reconcile_defs, "DEADLINE_MINUTE", timedelta(0))  # max_minutes=1 is over at once
    soltracker.put(four_url_token(unique_address(), last_transfer="2026-11-30T01:30:00Z"))

    result = reconcile_job_with(job_resources(server.url, mongo_uri, fresh_db.name, redis_url)).execute_in_process(
        partition_key=WINDOW,
        instance=instance,
        raise_on_error=False,
        run_config={"ops": {"reconcile_window": {"config": {"max_minutes": 1}}}},
    )

    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert "not finished" in failure.event_specific_data.user_failure_data.description


def test_a_converged_window_says_so(fixtures, instance, mongo_uri, fresh_db, redis_url):
    server, _ = fixtures
    result = reconcile_job_with(job_resources(server.url, mongo_uri, fresh_db.name, redis_url)).execute_in_process(
        partition_key="2026-11-30-00:00",
        instance=instance,
    )
    assert result.success
    assert reconcile_metadata(result)["stopped_by"].value == "window finished"


# -- retry_job -----------------------------------------------------------------------------------


def test_retry_counts_are_numbers_and_paid_off_is_explained(fixtures, instance, mongo_uri, fresh_db, redis_url):
    server, soltracker = fixtures
    address = unique_address()
    soltracker.put(four_url_token(address))
    resources = job_resources(server.url, mongo_uri, fresh_db.name, redis_url)
    assert record_token_job.execute_in_process(
        run_config=prepare_config(address), resources=resources, instance=instance
    ).success

    result = retry_job.execute_in_process(partition_key="skipped_paid", resources=resources, instance=instance)

    assert result.success
    md = output_metadata(result, "retry_urls")
    assert md["status_skipped_paid"].value == 1 and "statuses" not in md
    assert md["limit"].value == 50 and md["min_interval_minutes"].value == 0
    warnings = log_lines(instance, result, "WARNING")
    assert any("SOCIALREC_ENABLE_PAID" in line for line in warnings)


def test_a_retry_with_nothing_due_says_why(fixtures, instance, mongo_uri, fresh_db, redis_url):
    server, _ = fixtures
    resources = {
        **job_resources(server.url, mongo_uri, fresh_db.name, redis_url),
        "recording": RecordingSettingsResource(retry_min_interval_minutes="60"),
    }
    result = retry_job.execute_in_process(partition_key="error", resources=resources, instance=instance)
    assert result.success
    assert any("no error URL was due" in line and "60 min" in line for line in log_lines(instance, result, "INFO"))


# -- token_flow_sensor ---------------------------------------------------------------------------


def test_a_repeated_request_is_not_counted_as_a_new_launch(instance, broker, stream_resources):
    a = QUALIFYING_ADDRESSES[0]
    broker.publish(flow(a, 6))
    first = tick(instance, stream_resources)
    second = tick(instance, stream_resources, cursor=first.cursor)  # no run was started: same key again

    assert json.loads(first.cursor)["last_tick"]["launched"] == 1
    last = json.loads(second.cursor)["last_tick"]
    assert (last["launched"], last["rerequested"]) == (0, 1)
    assert [r.run_key for r in second.run_requests] == [r.run_key for r in first.run_requests]
    totals = json.loads(second.cursor)["totals"]
    assert totals["launched"] == 1 and "waiting" not in totals and "rerequested" not in totals


def test_a_tick_that_starts_no_run_says_why(instance, broker, stream_resources):
    broker.publish(flow(QUALIFYING_ADDRESSES[1], 2))
    broker.publish(b"not json")

    result = tick(instance, stream_resources)

    assert not result.run_requests
    reason = result.skip_reason.skip_message if hasattr(result.skip_reason, "skip_message") else result.skip_reason
    assert "1 below the alpha-finder threshold" in reason and "1 dead-lettered" in reason

    empty = tick(instance, stream_resources, cursor=result.cursor)
    empty_reason = getattr(empty.skip_reason, "skip_message", empty.skip_reason)
    assert "queue empty" in empty_reason


def test_an_upstream_outage_during_reconcile_says_what_to_do(fixtures, instance, mongo_uri, fresh_db, redis_url):
    from socialrec_pipeline.defs.reconcile import reconcile_asset

    resources = job_resources(fixtures[0].url, mongo_uri, fresh_db.name, redis_url)
    # the real step, without the 30 s / 60 s retry delays
    reconcile_without_retries = reconcile_job_with(resources, reconcile_asset(retry_policy=None))
    server, soltracker = fixtures
    with soltracker.failing(Reply.json({"message": "down"}, status=503), times=1):
        result = reconcile_without_retries.execute_in_process(
            partition_key=WINDOW,
            instance=instance,
            raise_on_error=False,
        )

    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    description = failure.event_specific_data.user_failure_data.description
    assert "SolTracker listing of 2026-11-30 01:00-02:00 UTC failed" in description
    assert "SOL_TRACKER_BASE_URL" in description and "launch this partition again" in description
