"""reconcile_job for one partition, retry_job for one status, and both schedules' partition keys."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import dagster as dg

from socialrec_pipeline.defs.reconcile import reconcile_schedule
from socialrec_pipeline.defs.record_token import record_token_job
from socialrec_pipeline.defs.resources import RecordingSettingsResource
from socialrec_pipeline.defs.retry import retry_job, retry_schedule
from socialrec_pipeline.sandbox.soltracker import upstream_token

from .jobs_fixtures import (
    four_url_token,
    job_resources,
    output_metadata,
    reconcile_job_with,
    reconcile_metadata,
    reconcile_steps,
    unique_address,
)

WINDOW = "2026-11-30-02:00"


def metadata_of(result, step: str) -> dict:
    return {k: v.value for k, v in output_metadata(result, step).items()}


def test_reconcile_records_the_missing_tokens_of_one_hour(fixtures, instance, mongo_uri, fresh_db, redis_url):
    server, soltracker = fixtures
    present, missing, low, outside = (unique_address() for _ in range(4))
    soltracker.put(four_url_token(present, last_transfer="2026-11-30T02:10:00Z"))
    soltracker.put(four_url_token(missing, last_transfer="2026-11-30T02:59:59Z"))
    soltracker.put(upstream_token(low, af=3, last_transfer="2026-11-30T02:30:00Z"))
    soltracker.put(four_url_token(outside, last_transfer="2026-11-30T03:00:00Z"))  # next window
    fresh_db["tokens"].insert_one({"address": present, "social_urls": []})

    result = reconcile_job_with(job_resources(server.url, mongo_uri, fresh_db.name, redis_url)).execute_in_process(
        partition_key=WINDOW,
        instance=instance,
    )

    assert result.success
    md = {k: v.value for k, v in reconcile_metadata(result).items()}
    assert (md["candidates"], md["present"], md["recorded"], md["skipped"], md["failed"]) == (2, 1, 1, 0, 0)
    assert fresh_db["tokens"].find_one({"address": missing}) is not None
    assert fresh_db["tokens"].find_one({"address": outside}) is None
    assert instance.get_run_by_id(result.run_id).tags["socialrec/job"] == "reconcile"


def test_retry_skipped_paid_after_paid_is_enabled(fixtures, instance, mongo_uri, fresh_db, redis_url):
    server, soltracker = fixtures
    address = unique_address()
    soltracker.put(four_url_token(address))
    resources = job_resources(server.url, mongo_uri, fresh_db.name, redis_url)
    config = {"ops": {"prepare": {"config": {"token_address": address}}}}
    assert record_token_job.execute_in_process(run_config=config, resources=resources, instance=instance).success
    server.reset_log()

    paid_on = {**resources, "recording": RecordingSettingsResource(enable_paid="true", retry_min_interval_minutes="0")}
    result = retry_job.execute_in_process(partition_key="skipped_paid", resources=paid_on, instance=instance)

    assert result.success
    assert metadata_of(result, "retry_urls")["deferred_paid"] == 1  # the paid call: in a retry_paid_url step
    md = metadata_of(result, "retry_summary")
    assert md["status"] == "skipped_paid" and md["urls_attempted"] == 1
    tiktok = next(u for u in fresh_db["tokens"].find_one({"address": address})["social_urls"] if u["platform"] == "tt")
    assert tiktok["status"] == "ok" and len(server.calls("/v2/acts")) == 1


def test_malformed_paid_switch_fails_closed(fixtures, instance, mongo_uri, fresh_db, redis_url):
    server, _ = fixtures
    server.reset_log()
    resources = {
        **job_resources(server.url, mongo_uri, fresh_db.name, redis_url),
        "recording": RecordingSettingsResource(enable_paid="yes please"),
    }
    result = retry_job.execute_in_process(
        partition_key="skipped_paid", resources=resources, instance=instance, raise_on_error=False
    )
    assert not result.success
    assert not server.calls("/v2/acts")
    events = [e.event_type_value for e in result.all_events if e.step_key == "retry_urls"]
    assert "STEP_UP_FOR_RETRY" not in events  # a configuration error is not retried


def test_malformed_setting_fails_a_reconcile_run_once_without_calling_upstream(
    fixtures, instance, mongo_uri, fresh_db, redis_url
):
    server, _ = fixtures
    server.reset_log()
    resources = {
        **job_resources(server.url, mongo_uri, fresh_db.name, redis_url),
        "recording": RecordingSettingsResource(af_threshold="five"),
    }
    result = reconcile_job_with(resources).execute_in_process(
        partition_key=WINDOW, instance=instance, raise_on_error=False
    )
    assert not result.success
    assert not server.calls("/api/v1/tokens")
    events = [e.event_type_value for e in reconcile_steps(result)]
    assert "STEP_FAILURE" in events
    assert "STEP_UP_FOR_RETRY" not in events  # a configuration error is not retried (30 s, 60 s delays)


def test_retry_run_outlives_a_redis_hiccup(fixtures, instance, mongo_uri, fresh_db, redis_url, monkeypatch):
    import redis

    from socialrec_pipeline.recording.retry import RetryService

    server, _ = fixtures
    real, calls = RetryService.run, []

    def hiccup(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise redis.exceptions.ConnectionError("injected: Redis went away for a moment")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(RetryService, "run", hiccup)
    result = retry_job.execute_in_process(
        partition_key="error",
        resources=job_resources(server.url, mongo_uri, fresh_db.name, redis_url),
        instance=instance,
    )
    assert result.success and len(calls) == 2


def test_reconcile_schedule_targets_the_previous_hour():
    from socialrec_pipeline.defs.definitions import defs

    repo = defs.get_repository_def()
    schedule = repo.get_schedule_def(reconcile_schedule.name)
    context = dg.build_schedule_context(
        scheduled_execution_time=datetime(2026, 11, 30, 5, 5, tzinfo=UTC), repository_def=repo
    )
    requests = schedule.evaluate_tick(context).run_requests
    assert [r.partition_key for r in requests] == ["2026-11-30-04:00"]
    assert schedule.execution_timezone == "UTC"


def test_retry_schedule_launches_the_three_retryable_statuses():
    from socialrec_pipeline.defs.definitions import defs

    repo = defs.get_repository_def()
    context = dg.build_schedule_context(
        scheduled_execution_time=datetime(2026, 11, 30, 5, 15, tzinfo=UTC), repository_def=repo
    )
    requests = retry_schedule.evaluate_tick(context).run_requests
    assert [r.partition_key for r in requests] == ["error", "unsupported", "skipped_paid"]
    assert len({r.run_key for r in requests}) == 3
    assert retry_schedule.execution_timezone == "UTC"
    assert retry_job.partitions_def.get_partition_keys() == [
        "error",
        "unsupported",
        "skipped_paid",
        "invalid",
        "exhausted",
    ]


def test_metric_refresh_appends_points_for_recent_links(fixtures, instance, mongo_uri, fresh_db, redis_url):
    from socialrec_pipeline.defs.metric_refresh import metric_refresh_job

    server, soltracker = fixtures
    address = unique_address()
    soltracker.put(four_url_token(address))
    resources = job_resources(server.url, mongo_uri, fresh_db.name, redis_url)
    config = {"ops": {"prepare": {"config": {"token_address": address}}}}
    assert record_token_job.execute_in_process(run_config=config, resources=resources, instance=instance).success

    too_soon = metric_refresh_job.execute_in_process(resources=resources, instance=instance)
    assert too_soon.success and metadata_of(too_soon, "refresh_metrics")["points_appended"] == 0  # 1 h between points
    assert metadata_of(too_soon, "refresh_metrics")["min_interval_minutes"] == 60

    two_hours_ago = datetime.now(UTC) - timedelta(hours=2)  # time passes
    fresh_db["metric_series"].update_many({}, {"$set": {"refresh_at": two_hours_ago, "last_point_at": two_hours_ago}})
    result = metric_refresh_job.execute_in_process(resources=resources, instance=instance)

    assert result.success
    md = metadata_of(result, "refresh_metrics")
    assert md["generator_calls"] >= 1 and md["points_appended"] >= 1  # the X profile's follower count
    assert md["failed"] == 0


def test_metric_refresh_failures_are_warnings_and_counted_and_the_op_retries_transient_faults(
    fixtures, instance, mongo_uri, fresh_db, redis_url
):
    from socialrec_pipeline.defs.metric_refresh import metric_refresh_job, refresh_metrics
    from socialrec_pipeline.defs.services import TRANSIENT_RETRY
    from socialrec_pipeline.sandbox.fixture_server import Reply

    assert refresh_metrics.retry_policy == TRANSIENT_RETRY
    server, soltracker = fixtures
    address = unique_address()
    soltracker.put(four_url_token(address))
    resources = job_resources(server.url, mongo_uri, fresh_db.name, redis_url)
    config = {"ops": {"prepare": {"config": {"token_address": address}}}}
    assert record_token_job.execute_in_process(run_config=config, resources=resources, instance=instance).success
    two_hours_ago = datetime.now(UTC) - timedelta(hours=2)
    fresh_db["metric_series"].update_many({}, {"$set": {"refresh_at": two_hours_ago, "last_point_at": two_hours_ago}})
    server.route("GET", "/twitter/user/info", Reply.json({"error": "boom"}, status=503))
    try:
        result = metric_refresh_job.execute_in_process(resources=resources, instance=instance)
    finally:
        from socialrec_pipeline.sandbox.platforms.x import demo_fixtures

        demo_fixtures().register(server)
    assert result.success
    md = metadata_of(result, "refresh_metrics")
    assert md["failed"] >= 1 and md["points_appended"] == 0
    warnings = [e.user_message for e in instance.all_logs(result.run_id) if e.level == 30]
    assert any("metric refresh of https://x.com/kolguy failed" in w and "503" in w for w in warnings)


def test_a_rejected_key_is_a_run_warning_that_names_the_variable(fixtures, instance, mongo_uri, fresh_db, redis_url):
    """Issue 9: a provider refusing our key is a configuration problem: the URLs stay `unsupported`
    without attempts, and the run says which variable to fix (step log, run tag, metadata)."""
    from socialrec_pipeline.defs.resources import GeneratorsResource, XApiResource
    from socialrec_pipeline.domain.enums import FetchStatus
    from socialrec_pipeline.sandbox.fixture_server import FixtureServer, Reply

    server, soltracker = fixtures
    address = unique_address()
    soltracker.put(four_url_token(address))
    resources = job_resources(server.url, mongo_uri, fresh_db.name, redis_url)
    config = {"ops": {"prepare": {"config": {"token_address": address}}}}
    assert record_token_job.execute_in_process(run_config=config, resources=resources, instance=instance).success
    from socialrec_pipeline.store import Store

    store = Store(fresh_db)
    x_record = next(r for r in store.tokens.find_by_address(address).social_urls if r.platform == "x")
    store.tokens.record_social_url_result(
        address, x_record.url, x_record.model_copy(update={"status": FetchStatus.ERROR, "attempts": 4})
    )
    rejecting = FixtureServer().start()  # twitterapi.io refusing a revoked key
    rejecting.route("GET", "/twitter/user/info", Reply.json({"error": "Unauthorized"}, status=401))
    current = resources["generators"]
    generators = GeneratorsResource(
        x=XApiResource(base_url=rejecting.url, api_key="revoked"),
        github=current.github,
        youtube=current.youtube,
        telegram=current.telegram,
        apify=current.apify,
        reddit=current.reddit,
        urlscan=current.urlscan,
    )
    try:
        result = retry_job.execute_in_process(
            partition_key="error",
            resources={**resources, "generators": generators},
            instance=instance,
        )
    finally:
        rejecting.stop()
    assert len(rejecting.calls("/twitter/")) == 1

    assert result.success
    x_url = next(u for u in fresh_db["tokens"].find_one({"address": address})["social_urls"] if u["platform"] == "x")
    assert (x_url["status"], x_url["attempts"]) == ("unsupported", 4)  # never exhausted by a wrong key
    assert instance.get_run_by_id(result.run_id).tags["socialrec/warning"] == "key_rejected:TWITTERAPI_API_KEY"
    assert metadata_of(result, "retry_urls")["credentials_refused"] == "TWITTERAPI_API_KEY"
    warnings = [e for e in instance.all_logs(result.run_id) if e.level == 30 and "TWITTERAPI_API_KEY" in e.user_message]
    assert warnings and "Fix TWITTERAPI_API_KEY" in warnings[0].user_message


def test_wallets_backfill_job_fills_known_wallets(instance, mongo_uri, fresh_db):
    from socialrec_pipeline.defs.resources import MongoResource
    from socialrec_pipeline.defs.wallets import wallets_backfill_job

    wallet = "7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU"
    fresh_db["accounts"].insert_one({"platform": "x", "platform_key": "1", "bio": f"CA: {wallet}", "known_wallets": []})
    result = wallets_backfill_job.execute_in_process(
        instance=instance,
        resources={"mongo": MongoResource(uri=mongo_uri, database=fresh_db.name)},
        run_config={"ops": {"backfill_known_wallets": {"config": {"batch_size": 100}}}},
    )
    assert result.success
    md = metadata_of(result, "backfill_known_wallets")
    assert (md["scanned"], md["updated"], md["complete"]) == (1, 1, True)
    assert fresh_db["accounts"].find_one({"platform_key": "1"})["known_wallets"] == [wallet]
    assert instance.get_run_by_id(result.run_id).tags["socialrec/job"] == "wallets_backfill"
