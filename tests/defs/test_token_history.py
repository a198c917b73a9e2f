"""The run history of one token (SPEC §10): filtering the Runs page by the token's tag finds its
record_token_job run and every retry / reconcile run that worked on it, and no run that did not."""

from __future__ import annotations

import warnings

import dagster as dg

from socialrec_pipeline.defs.record_token import record_token_job
from socialrec_pipeline.defs.resources import RecordingSettingsResource
from socialrec_pipeline.defs.retry import retry_job
from socialrec_pipeline.defs.tags import TOKEN_TOUCHED_VALUE, run_tags, token_touched_tag
from socialrec_pipeline.recording.processor import TokenRecorder

from .jobs_fixtures import four_url_token, job_resources, reconcile_job_with, unique_address

WINDOW = "2026-11-30-04:00"


def history(instance: dg.DagsterInstance, address: str) -> set[str]:
    """What the Runs page filter `socialrec/token.<address>` = `true` shows (the same storage query)."""
    return {run.run_id for run in instance.get_runs(dg.RunsFilter(tags=token_touched_tag(address)))}


def test_the_tag_key_is_one_dagster_accepts_without_warning():
    address = unique_address()
    tag = token_touched_tag(address)
    assert tag == {f"socialrec/token.{address}": TOKEN_TOUCHED_VALUE}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Dagster warns about a non-compliant tag key (two `/`, > 63 characters)

        @dg.op
        def noop():
            pass

        @dg.job(tags=tag)
        def tagged():
            noop()

    assert dict(tagged.tags) == tag
    assert token_touched_tag("not an address/at all") == {}  # never a key Dagster would reject
    assert run_tags(address, source="stream", sandbox=False).items() >= tag.items()  # stream-launched runs


def test_record_retry_and_reconcile_runs_of_a_token_share_its_tag(fixtures, instance, mongo_uri, fresh_db, redis_url):
    server, soltracker = fixtures
    by_hand, reconciled, present = (unique_address() for _ in range(3))
    for address, minute in ((by_hand, 5), (reconciled, 10), (present, 20)):
        soltracker.put(four_url_token(address, last_transfer=f"2026-11-30T04:{minute:02d}:00Z"))
    resources = job_resources(server.url, mongo_uri, fresh_db.name, redis_url)
    config = {"ops": {"prepare": {"config": {"token_address": by_hand}}}}
    recorded = record_token_job.execute_in_process(run_config=config, resources=resources, instance=instance)
    fresh_db["tokens"].insert_one({"address": present, "social_urls": []})  # the stream's: reconcile skips it

    reconcile = reconcile_job_with(resources).execute_in_process(partition_key=WINDOW, instance=instance)
    # Both recorded tokens have a skipped_paid TikTok URL: the retry run works on each of them.
    paid_on = {**resources, "recording": RecordingSettingsResource(enable_paid="true", retry_min_interval_minutes="0")}
    retry = retry_job.execute_in_process(partition_key="skipped_paid", resources=paid_on, instance=instance)
    nothing_due = retry_job.execute_in_process(partition_key="unsupported", resources=resources, instance=instance)

    assert recorded.success and reconcile.success and retry.success and nothing_due.success
    assert history(instance, by_hand) == {recorded.run_id, retry.run_id}
    assert history(instance, reconciled) == {reconcile.run_id, retry.run_id}
    assert history(instance, present) == set()  # reconcile found it recorded: it did nothing to it
    assert not any(k.startswith("socialrec/token.") for k in instance.get_run_by_id(nothing_due.run_id).tags)


def test_a_token_that_failed_mid_recording_keeps_the_run_in_its_history(
    fixtures, instance, mongo_uri, fresh_db, redis_url, monkeypatch
):
    server, soltracker = fixtures
    good, bad = unique_address(), unique_address()
    soltracker.put(four_url_token(good, last_transfer="2026-11-30T04:30:00Z"))
    soltracker.put(four_url_token(bad, last_transfer="2026-11-30T04:40:00Z"))
    original = TokenRecorder.record_one_url

    def breaks_for_bad(self, prepared, planned, *args, **kwargs):
        if prepared.address == bad:
            raise ValueError("a generator bug")
        return original(self, prepared, planned, *args, **kwargs)

    monkeypatch.setattr(TokenRecorder, "record_one_url", breaks_for_bad)

    result = reconcile_job_with(job_resources(server.url, mongo_uri, fresh_db.name, redis_url)).execute_in_process(
        partition_key=WINDOW, instance=instance, raise_on_error=False
    )

    assert not result.success  # one token failed: the run is red
    assert fresh_db["tokens"].find_one({"address": bad}) is None
    # The tag is set when the run starts writing for the token, so its failed attempt is in its history.
    assert history(instance, bad) == {result.run_id}
    assert history(instance, good) == {result.run_id}
