"""reconcile_job's paid calls run in `reconcile_paid_token` steps of the paid_social_api pool.

The free pass (`reconcile_free_pass`) records every token that needs no paid call and hands each
other one, whole, to a pooled step: a token with a URL of a paid platform at once, a token with a
short link once the link resolves to a paid target. Real services: Redis, MongoDB, loopback
stand-ins for the upstream and the providers (the paid one counts its calls: `MeteredApify`).
"""

from __future__ import annotations

import threading
import time

import dagster as dg
import pytest

from socialrec_pipeline.defs.paid_pool import PAID_POOL
from socialrec_pipeline.recording.processor import TokenRecorder
from socialrec_pipeline.sandbox.soltracker import upstream_token

from .jobs_fixtures import reconcile_job_with, reconcile_metadata, reconcile_steps, unique_address
from .test_cost_control import VIDEO, WINDOW, StandIns, occupy_paid_pool, resources, step_spans, url_entry

PAID_STEP = "reconcile_window.reconcile_paid_token["
COUNTS = ("candidates", "present", "recorded", "skipped", "failed", "deferred_paid")


@pytest.fixture
def stand_ins(redis_url):
    s = StandIns(redis_url)
    yield s
    s.close()


@pytest.fixture
def pooled_instance(tmp_path):
    """A persistent instance whose pools are enforced, with the paid pool limited to one slot."""
    with dg.instance_for_test(
        temp_dir=str(tmp_path), overrides={"concurrency": {"pools": {"default_limit": 1}}}
    ) as inst:
        yield inst


def window_of_three(stand_ins: StandIns) -> tuple[str, str, str]:
    """Three missing tokens of WINDOW: a TikTok video (paid, direct), a t.co short link to a TikTok
    video (paid once resolved) and an X profile (free)."""
    direct, short, free = (unique_address() for _ in range(3))
    stand_ins.soltracker.put(
        upstream_token(direct, discord=VIDEO.format("7350000000000000011"), last_transfer="2026-11-30T02:10:00Z")
    )
    stand_ins.soltracker.put(
        upstream_token(short, twitter="https://t.co/TkVid01", last_transfer="2026-11-30T02:20:00Z")
    )
    stand_ins.soltracker.put(
        upstream_token(free, twitter="https://twitter.com/kolguy", last_transfer="2026-11-30T02:30:00Z")
    )
    return direct, short, free


def counts(result) -> tuple:
    md = reconcile_metadata(result)
    return tuple(md[k].value for k in COUNTS)


def test_paid_calls_of_a_reconcile_run_are_made_in_pooled_steps(
    stand_ins, pooled_instance, mongo_uri, fresh_db, redis_url
):
    stand_ins.apify.ok_delay_s = 0.3
    direct, short, free = window_of_three(stand_ins)
    job = reconcile_job_with(resources(stand_ins, mongo_uri, fresh_db, redis_url, paid=True))

    result = job.execute_in_process(partition_key=WINDOW, instance=pooled_instance)

    assert result.success
    paid_steps = step_spans(pooled_instance, result.run_id, PAID_STEP)
    assert sorted(paid_steps) == sorted(f"{PAID_STEP}{address}]" for address in (direct, short))
    assert len(stand_ins.apify.calls) == 2  # one paid call per paid URL, none in the free pass
    for call_at in stand_ins.apify.calls:
        assert any(start <= call_at <= end for start, end in paid_steps.values())
    (_, first_end), (second_start, _) = sorted(paid_steps.values())
    assert first_end <= second_start  # a pool of one slot: one paid step at a time
    # The free pass resolved the short link, found its target paid and left the token unmarked;
    # the pooled step resolved it again (a free request) before its paid call.
    assert len(stand_ins.server.calls("/TkVid01")) == 2
    for address, field in ((direct, "discord"), (short, "twitter"), (free, "twitter")):
        entry = url_entry(fresh_db, address, field)
        assert (entry["status"], entry["attempts"]) == ("ok", 1), (field, entry)
    tags = pooled_instance.get_run_by_id(result.run_id).tags
    assert all(f"socialrec/token.{address}" in tags for address in (direct, short, free))  # each token's history


def test_the_window_counts_are_the_free_pass_and_the_pooled_steps_added_up(
    stand_ins, pooled_instance, mongo_uri, fresh_db, redis_url
):
    direct, short, _free = window_of_three(stand_ins)
    fresh_db["tokens"].insert_one({"address": unique_address(), "social_urls": []})  # not in the window
    job = reconcile_job_with(resources(stand_ins, mongo_uri, fresh_db, redis_url, paid=True))

    result = job.execute_in_process(partition_key=WINDOW, instance=pooled_instance)

    assert result.success
    free_pass, max_minutes = result.output_for_node("reconcile_window.reconcile_free_pass", "free")
    assert (free_pass.candidates, free_pass.recorded, max_minutes) == (3, 1, 50)
    assert sorted(t.address for t in free_pass.deferred) == sorted([direct, short])
    pooled = result.output_for_node("reconcile_window.reconcile_paid_token")
    assert sorted(pooled) == sorted([direct, short]) and all(r.recorded == 1 for r in pooled.values())
    assert counts(result) == (3, 0, 3, 0, 0, 2)
    md = reconcile_metadata(result)
    assert md["status_ok"].value == 3 and md["stopped_by"].value == "window finished"
    assert md["credit_guard"].value == "clear"
    (materialization,) = result.asset_materializations_for_node("reconcile_window")
    assert materialization.partition == WINDOW


def test_with_paid_off_nothing_goes_to_the_paid_pool(stand_ins, instance, mongo_uri, fresh_db, redis_url):
    direct, short, free = window_of_three(stand_ins)
    job = reconcile_job_with(resources(stand_ins, mongo_uri, fresh_db, redis_url, paid=False))

    result = job.execute_in_process(partition_key=WINDOW, instance=instance)

    assert result.success
    assert not reconcile_steps(result, "reconcile_paid_token")
    assert stand_ins.apify.calls == []
    assert counts(result) == (3, 0, 3, 0, 0, 0)
    for address, field, status in ((direct, "discord", "skipped_paid"), (short, "twitter", "skipped_paid"),
                                   (free, "twitter", "ok")):  # fmt: skip
        entry = url_entry(fresh_db, address, field)
        assert entry["status"] == status, (field, entry)


def test_a_token_failing_in_its_pooled_step_turns_the_window_red(
    stand_ins, pooled_instance, mongo_uri, fresh_db, redis_url, monkeypatch
):
    direct, short, free = window_of_three(stand_ins)
    original = TokenRecorder.record_upstream_token

    def flaky(self, token, owner, on_locked=None, *, defer_paid=False):
        if token.address == direct and not defer_paid:  # only in its pooled step
            raise ValueError("a generator bug")
        return original(self, token, owner, on_locked, defer_paid=defer_paid)

    monkeypatch.setattr(TokenRecorder, "record_upstream_token", flaky)
    job = reconcile_job_with(resources(stand_ins, mongo_uri, fresh_db, redis_url, paid=True))

    result = job.execute_in_process(partition_key=WINDOW, instance=pooled_instance, raise_on_error=False)

    assert not result.success
    (failure,) = [e for e in reconcile_steps(result) if e.event_type_value == "STEP_FAILURE"]
    assert failure.step_key == "reconcile_window.reconcile_summary"
    data = failure.event_specific_data.user_failure_data
    assert "1 token(s) failed" in data.description and "Launch this partition again" in data.description
    assert (data.metadata["recorded"].value, data.metadata["failed"].value) == (2, 1)
    assert WINDOW not in pooled_instance.get_materialized_partitions(dg.AssetKey("reconciled_hours"))
    assert fresh_db["tokens"].find_one({"address": direct}) is None
    assert all(fresh_db["tokens"].find_one({"address": a}) is not None for a in (short, free))


@pytest.mark.slow
def test_a_pooled_step_waits_for_a_slot_of_the_paid_pool(stand_ins, pooled_instance, mongo_uri, fresh_db, redis_url):
    address = unique_address()
    stand_ins.soltracker.put(
        upstream_token(address, discord=VIDEO.format("7350000000000000012"), last_transfer="2026-11-30T02:40:00Z")
    )
    job = reconcile_job_with(resources(stand_ins, mongo_uri, fresh_db, redis_url, paid=True))
    occupy_paid_pool(pooled_instance)  # another run holds the pool's only slot
    results: list = []
    worker = threading.Thread(
        target=lambda: results.append(job.execute_in_process(partition_key=WINDOW, instance=pooled_instance))
    )
    worker.start()
    try:
        deadline = time.monotonic() + 60
        while not free_pass_done(pooled_instance) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(3)
        assert free_pass_done(pooled_instance) and worker.is_alive()
        assert stand_ins.apify.calls == []  # the paid call waits for the slot
    finally:
        pooled_instance.event_log_storage.free_concurrency_slot_for_step("another-run", "record_paid_url[x]")
        worker.join(timeout=120)
    assert not worker.is_alive() and results[0].success
    assert len(stand_ins.apify.calls) == 1
    assert (url_entry(fresh_db, address, "discord")["status"]) == "ok"
    assert pooled_instance.event_log_storage.get_concurrency_info(PAID_POOL).claimed_slots == []


def free_pass_done(instance: dg.DagsterInstance) -> bool:
    return any(
        e.is_dagster_event
        and e.dagster_event_type == dg.DagsterEventType.STEP_SUCCESS
        and e.step_key == "reconcile_window.reconcile_free_pass"
        for run in instance.get_runs()
        for e in instance.all_logs(run.run_id)
    )
