"""`record_token_job` end to end, in process, against fixture servers and the real stores."""

from __future__ import annotations

import re

import pytest

from socialrec_pipeline.defs.record_token import mapping_key, mapping_keys, record_token_job
from socialrec_pipeline.recording.locks import TokenLocks, open_redis
from socialrec_pipeline.recording.processor import PlannedUrl
from socialrec_pipeline.routing.route import route

from .jobs_fixtures import (
    SOLTRACKER_KEY,
    X_KEY,
    four_url_token,
    job_resources,
    output_metadata,
    start_fixtures,
    unique_address,
)

FOUR_URL_TOKEN = unique_address()


@pytest.fixture(scope="module")
def fixtures():
    server, soltracker = start_fixtures([four_url_token(FOUR_URL_TOKEN)])
    yield server, soltracker
    server.stop()


def run_config(address: str) -> dict:
    return {
        "ops": {
            "prepare": {
                "config": {"token_address": address, "first_flow_timestamp": "2026-11-29T21:14:03Z", "symbol": "FOUR"}
            }
        }
    }


def test_records_four_urls_and_writes_the_marker_last(fixtures, instance, mongo_uri, fresh_db, redis_url, monkeypatch):
    server, _ = fixtures
    monkeypatch.setenv("SOL_TRACKER_API_KEY", SOLTRACKER_KEY)
    monkeypatch.setenv("TWITTERAPI_API_KEY", X_KEY)
    resources = job_resources(server.url, mongo_uri, fresh_db.name, redis_url, from_env=True)

    result = record_token_job.execute_in_process(
        run_config=run_config(FOUR_URL_TOKEN),
        resources=resources,
        instance=instance,
        tags={"socialrec/token_address": FOUR_URL_TOKEN, "source": "test"},
    )

    assert result.success
    marker = fresh_db["tokens"].find_one({"address": FOUR_URL_TOKEN})
    assert marker is not None and marker["symbol"] == "FOUR"
    statuses = {u["source_field"]: u["status"] for u in marker["social_urls"]}
    assert statuses == {"website": "ok", "twitter": "ok", "telegram": "not_found", "discord": "skipped_paid"}
    assert fresh_db["token_links"].count_documents({"token_address": FOUR_URL_TOKEN}) >= 2
    assert not server.calls("/v2/acts")  # paid is off: zero calls to Apify
    assert TokenLocks(open_redis(redis_url)).owner_of(FOUR_URL_TOKEN) is None  # unlocked

    metadata = result.output_for_node("write_marker")
    assert metadata == {"ok": 2, "not_found": 1, "skipped_paid": 1}
    md = output_metadata(result, "write_marker")
    assert md["status_ok"].value == 2
    assert "https://x.com/kolguy" in [row.data["url"].replace("\n", "") for row in md["urls"].records]

    # Secrets never reach events, tags or run config.
    run = instance.get_run_by_id(result.run_id)
    haystack = " ".join([str(run.tags), str(run.run_config)] + [str(e) for e in instance.all_logs(result.run_id)])
    assert SOLTRACKER_KEY not in haystack and X_KEY not in haystack

    # A second run is idempotent: the marker exists, nothing downstream runs.
    again = record_token_job.execute_in_process(
        run_config=run_config(FOUR_URL_TOKEN), resources=resources, instance=instance
    )
    assert again.success
    assert [e.event_type_value for e in again.all_events if e.step_key == "write_marker"] == ["STEP_SKIPPED"]


def test_locked_token_is_skipped_quietly(fixtures, instance, mongo_uri, fresh_db, redis_url):
    server, soltracker = fixtures
    address = unique_address()
    soltracker.put(four_url_token(address))
    locks = TokenLocks(open_redis(redis_url))
    assert locks.try_acquire(address, "another-worker")
    try:
        result = record_token_job.execute_in_process(
            run_config=run_config(address),
            resources=job_resources(server.url, mongo_uri, fresh_db.name, redis_url),
            instance=instance,
        )
    finally:
        locks.release(address, "another-worker")
    assert result.success
    assert fresh_db["tokens"].find_one({"address": address}) is None
    assert instance.get_run_by_id(result.run_id).tags["socialrec/outcome"] == "locked"


def test_mapping_keys_are_valid_step_key_suffixes():
    key = mapping_key(PlannedUrl(url="https://example.com/a?b=c|d", raw_url="x", source_field=None, routed=None))
    assert key == "none_example_com_a_b_c_d"


def _planned(url: str) -> PlannedUrl:
    routed = route(url)
    return PlannedUrl(url=routed.canonical_url if routed else url, raw_url=url, source_field="website", routed=routed)


def test_step_keys_carry_the_platform_and_a_readable_part_of_the_url():
    keys = mapping_keys([_planned("https://x.com/someone/status/1790000000000000001"), _planned("https://t.me/somegroup")])
    assert sorted(keys.values()) == ["telegram_channel_somegroup", "x_tweet_1790000000000000001"]
    assert all(re.fullmatch(r"[A-Za-z0-9_]+", key) for key in keys.values())  # Dagster's mapping-key rule


def test_step_keys_get_a_hash_only_when_two_urls_would_share_one():
    long_a = _planned("https://example.com/a-very-long-path-that-is-cut-here/one")
    long_b = _planned("https://example.com/a-very-long-path-that-is-cut-here/two")
    alone = _planned("https://github.com/owner/repo")
    keys = mapping_keys([long_a, long_b, alone])
    assert len(set(keys.values())) == 3  # unique in the run
    assert keys[alone.url] == mapping_key(alone)  # no hash where none is needed
    readable = mapping_key(long_a)
    assert keys[long_a.url].startswith(readable + "_") and len(keys[long_a.url]) == len(readable) + 7


def test_a_step_in_another_process_keeps_or_takes_back_the_lock_but_never_steals_it(redis_url):
    from socialrec_pipeline.defs.services import hold_lock
    from socialrec_pipeline.recording.locks import LockNotHeld

    locks = TokenLocks(open_redis(redis_url), ttl_s=60)
    address = unique_address()
    assert locks.try_acquire(address, "run-1")
    hold_lock(locks, address, "run-1")  # still ours: extended
    locks.release(address, "run-1")  # expired while the step waited for a pool slot
    hold_lock(locks, address, "run-1")  # taken back
    assert locks.owner_of(address) == "run-1"
    with pytest.raises(LockNotHeld):
        hold_lock(locks, address, "run-2")
    locks.release(address, "run-1")


def run_tags_of(instance, result) -> dict:
    return instance.get_run_by_id(result.run_id).tags


def step_events(result, step_prefix: str) -> list[str]:
    return [e.event_type_value for e in result.all_events if (e.step_key or "").startswith(step_prefix)]


def test_every_run_says_what_happened_to_its_token(fixtures, instance, mongo_uri, fresh_db, redis_url):
    server, soltracker = fixtures
    resources = job_resources(server.url, mongo_uri, fresh_db.name, redis_url)
    address = unique_address()
    soltracker.put(four_url_token(address))

    recorded = record_token_job.execute_in_process(
        run_config=run_config(address), resources=resources, instance=instance
    )
    again = record_token_job.execute_in_process(run_config=run_config(address), resources=resources, instance=instance)
    unknown = record_token_job.execute_in_process(
        run_config=run_config(unique_address()), resources=resources, instance=instance
    )

    assert recorded.success and again.success and unknown.success
    assert run_tags_of(instance, recorded)["socialrec/outcome"] == "recorded"
    assert run_tags_of(instance, again)["socialrec/outcome"] == "already_recorded"
    assert run_tags_of(instance, unknown)["socialrec/outcome"] == "unknown_token"
    skipped = next(
        e
        for e in unknown.all_events
        if e.step_key == "prepare"
        and e.event_type_value == "STEP_OUTPUT"
        and e.event_specific_data.step_output_handle.output_name == "skipped"
    )
    assert skipped.event_specific_data.metadata["outcome"].value == "unknown_token"


def test_a_transient_upstream_failure_is_retried_by_the_op(fixtures, instance, mongo_uri, fresh_db, redis_url):
    from socialrec_pipeline.sandbox.fixture_server import Reply

    server, soltracker = fixtures
    address = unique_address()
    soltracker.put(four_url_token(address))
    soltracker.fail_with(Reply.json({"message": "overloaded"}, status=503), times=1)

    result = record_token_job.execute_in_process(
        run_config=run_config(address),
        resources=job_resources(server.url, mongo_uri, fresh_db.name, redis_url),
        instance=instance,
    )

    assert result.success
    assert "STEP_UP_FOR_RETRY" in step_events(result, "prepare")
    assert run_tags_of(instance, result)["socialrec/outcome"] == "recorded"


def test_a_bug_in_a_url_step_fails_once_instead_of_being_retried(
    fixtures, instance, mongo_uri, fresh_db, redis_url, monkeypatch
):
    from socialrec_pipeline.recording.processor import TokenRecorder

    server, soltracker = fixtures
    address = unique_address()
    soltracker.put(four_url_token(address))

    def bug(self, prepared, planned, *args, **kwargs):
        raise TypeError("injected: a code bug")

    monkeypatch.setattr(TokenRecorder, "record_one_url", bug)
    result = record_token_job.execute_in_process(
        run_config=run_config(address),
        resources=job_resources(server.url, mongo_uri, fresh_db.name, redis_url),
        instance=instance,
        raise_on_error=False,
    )

    assert not result.success
    events = step_events(result, "record_url")
    assert "STEP_FAILURE" in events and "STEP_UP_FOR_RETRY" not in events
    assert fresh_db["tokens"].find_one({"address": address}) is None


def test_a_redis_hiccup_in_a_url_step_is_retried(fixtures, instance, mongo_uri, fresh_db, redis_url, monkeypatch):
    import redis

    from socialrec_pipeline.recording.processor import TokenRecorder

    server, soltracker = fixtures
    address = unique_address()
    soltracker.put(four_url_token(address))
    real, failed = TokenRecorder.record_one_url, []

    def hiccup(self, prepared, planned, *rest, **kw):
        if not failed:
            failed.append(planned.url)
            raise redis.exceptions.ConnectionError("injected: Redis went away for a moment")
        return real(self, prepared, planned, *rest, **kw)

    monkeypatch.setattr(TokenRecorder, "record_one_url", hiccup)
    result = record_token_job.execute_in_process(
        run_config=run_config(address),
        resources=job_resources(server.url, mongo_uri, fresh_db.name, redis_url),
        instance=instance,
    )

    assert result.success
    assert "STEP_UP_FOR_RETRY" in step_events(result, "record_url")
    assert len(fresh_db["tokens"].find_one({"address": address})["social_urls"]) == 4


def test_a_run_that_fails_on_redis_says_so_and_is_tagged_infra_failed(fixtures, instance, mongo_uri, fresh_db):
    """Issue 9: the failure names the service and the cause, not only "Exceeded max_retries"."""
    server, soltracker = fixtures
    address = unique_address()
    soltracker.put(four_url_token(address))
    resources = job_resources(server.url, mongo_uri, fresh_db.name, "redis://127.0.0.1:22001/0")  # nothing listens

    result = record_token_job.execute_in_process(
        run_config=run_config(address),
        resources=resources,
        instance=instance,
        raise_on_error=False,
    )

    assert not result.success
    assert run_tags_of(instance, result)["socialrec/outcome"] == "infra_failed"
    failure = next(e for e in result.all_events if e.step_key == "prepare" and e.event_type_value == "STEP_FAILURE")
    description = failure.event_specific_data.user_failure_data.description
    assert description.startswith("Redis unavailable: ConnectionError") and "REDIS_URL" in description
    assert "Exceeded max_retries" not in failure.event_specific_data.error.message
    assert step_events(result, "prepare").count("STEP_UP_FOR_RETRY") == 3  # transient: retried first


def test_infra_failures_name_their_service():
    import pymongo.errors
    import redis

    from socialrec_pipeline.defs.services import infra_failure_message

    mongo = infra_failure_message(pymongo.errors.ServerSelectionTimeoutError("127.0.0.1:1: connection refused"))
    assert mongo.startswith("MongoDB unavailable: ServerSelectionTimeoutError: 127.0.0.1:1: connection refused")
    assert "MONGODB_URI" in mongo
    assert infra_failure_message(redis.exceptions.TimeoutError("Timeout reading")).startswith("Redis unavailable")


@pytest.mark.parametrize("fault", ["refused_key", "other_address", "malformed"])
def test_a_soltracker_answer_that_retrying_cannot_fix_fails_without_retries(
    fixtures, instance, mongo_uri, fresh_db, redis_url, fault
):
    """Issue 9: 401/403, a malformed body or an answer for another address are permanent for the run."""
    from socialrec_pipeline.defs.resources import SolTrackerResource
    from socialrec_pipeline.sandbox.fixture_server import Reply
    from socialrec_pipeline.sandbox.soltracker import upstream_token

    server, soltracker = fixtures
    address = unique_address()
    soltracker.put(four_url_token(address))
    resources = job_resources(server.url, mongo_uri, fresh_db.name, redis_url)
    if fault == "refused_key":
        resources["soltracker"] = SolTrackerResource(base_url=server.url, api_key="revoked")
    elif fault == "other_address":
        soltracker.fail_with(Reply.json({**upstream_token(unique_address()), "address": unique_address()}))
    else:
        soltracker.fail_with(Reply.html("<html>maintenance</html>"))

    result = record_token_job.execute_in_process(
        run_config=run_config(address),
        resources=resources,
        instance=instance,
        raise_on_error=False,
    )

    assert not result.success
    events = step_events(result, "prepare")
    assert "STEP_FAILURE" in events and "STEP_UP_FOR_RETRY" not in events
    failure = next(e for e in result.all_events if e.step_key == "prepare" and e.event_type_value == "STEP_FAILURE")
    assert "Not retried" in failure.event_specific_data.user_failure_data.description
    assert run_tags_of(instance, result)["socialrec/outcome"] == "upstream_failed"
    assert fresh_db["tokens"].find_one({"address": address}) is None


def test_soltracker_404_for_every_token_in_a_row_is_a_run_and_tick_warning(
    fixtures, instance, mongo_uri, fresh_db, redis_url, stream_resources
):
    """A wrong base URL answers 404 for every token, exactly like unknown tokens: after a streak the
    run warns (tag + log) and the sensor's next tick relays it; a known token ends the streak."""
    from socialrec_pipeline.recording.locks import UnknownTokenCache
    from socialrec_pipeline.recording.processor import UPSTREAM_404_STREAK_WARNING

    from .test_token_flow_sensor import tick

    server, soltracker = fixtures
    resources = job_resources(server.url, mongo_uri, fresh_db.name, redis_url)
    streak = UnknownTokenCache(open_redis(redis_url), streak_scope=server.url)
    streak.note_known()
    for _ in range(UPSTREAM_404_STREAK_WARNING - 1):  # earlier unknown answers from this upstream
        streak.remember(unique_address())

    unknown = record_token_job.execute_in_process(
        run_config=run_config(unique_address()), resources=resources, instance=instance
    )

    assert unknown.success
    assert run_tags_of(instance, unknown)["socialrec/warning"] == "upstream_all_404"
    logged = [e.user_message for e in instance.all_logs(unknown.run_id) if e.level == 30]
    assert any("SOL_TRACKER_BASE_URL" in m and f"last {UPSTREAM_404_STREAK_WARNING} tokens" in m for m in logged)
    quiet_tick = tick(instance, stream_resources)
    assert "SOL_TRACKER_BASE_URL" in quiet_tick.skip_reason.skip_message

    address = unique_address()
    soltracker.put(four_url_token(address))
    known = record_token_job.execute_in_process(run_config=run_config(address), resources=resources, instance=instance)
    assert known.success and "socialrec/warning" not in run_tags_of(instance, known)
    assert streak.unknown_streak() == 0
    assert "SOL_TRACKER_BASE_URL" not in tick(instance, stream_resources).skip_reason.skip_message
