"""Data health in the UI: the asset catalog, reconcile coverage, integrity checks, recording_health."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import dagster as dg
import pytest
from bson import ObjectId

from socialrec_pipeline.defs import reconcile as reconcile_defs
from socialrec_pipeline.defs.assets import COLLECTION_SPECS, OPS_GROUP
from socialrec_pipeline.defs.definitions import defs
from socialrec_pipeline.defs.health import (
    PLOTTED,
    health_due,
    keeping_up,
    recording_health,
    recording_health_job,
    recording_health_sensor,
    stalled,
)
from socialrec_pipeline.defs.integrity import integrity_checks, integrity_job
from socialrec_pipeline.defs.reconcile import reconcile_partitions, reconcile_start
from socialrec_pipeline.defs.resources import MongoResource, RabbitMQResource, RecordingSettingsResource
from socialrec_pipeline.recording.settings import SettingError
from socialrec_pipeline.stream.inbox import RecordInbox

from .jobs_fixtures import four_url_token, job_resources, reconcile_job_with, unique_address

RECONCILED = dg.AssetKey("reconciled_hours")


# -- the catalog ---------------------------------------------------------------------------------


def test_collections_are_assets_with_owners_schemas_and_lineage():
    graph = defs.get_repository_def().asset_graph
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert {
        "token_flow",
        "record_inbox",
        "tokens",
        "contents",
        "accounts",
        "venues",
        "token_links",
        "metric_series",
        "reconciled_hours",
        "recording_health",
    } <= keys
    for spec in COLLECTION_SPECS:
        assert spec.description and spec.owners == ["team:socialrec"]
        schema = spec.metadata["dagster/column_schema"]
        assert isinstance(schema, dg.TableSchema) and schema.columns
    for name in ("tokens", "contents", "accounts", "venues", "token_links", "metric_series"):
        assert graph.get(dg.AssetKey(name)).parent_keys == {dg.AssetKey("record_inbox")}
    assert graph.get(dg.AssetKey("record_inbox")).parent_keys == {dg.AssetKey("token_flow")}
    # The graph-backed reconcile asset keeps its spec's description, owners, group and kind.
    (reconciled,) = defs.resolve_assets_def("reconciled_hours").specs
    assert (reconciled.owners, reconciled.kinds) == (["team:socialrec"], {"mongodb"}) and reconciled.description
    assert reconciled.group_name == OPS_GROUP


# -- reconcile coverage --------------------------------------------------------------------------


def test_reconcile_partitions_materialize_or_fail_reconciled_hours(
    fixtures, instance, mongo_uri, fresh_db, redis_url, monkeypatch
):
    server, soltracker = fixtures
    soltracker.put(four_url_token(unique_address(), last_transfer="2026-11-29T07:30:00Z"))
    job = reconcile_job_with(job_resources(server.url, mongo_uri, fresh_db.name, redis_url))

    done = job.execute_in_process(partition_key="2026-11-29-07:00", instance=instance)
    assert done.success
    (materialization,) = done.asset_materializations_for_node("reconcile_window")
    assert materialization.partition == "2026-11-29-07:00"
    assert materialization.metadata["recorded"].value == 1
    assert "2026-11-29-07:00" in instance.get_materialized_partitions(RECONCILED)

    soltracker.put(four_url_token(unique_address(), last_transfer="2026-11-29T08:30:00Z"))
    monkeypatch.setattr(reconcile_defs, "DEADLINE_MINUTE", timedelta(0))  # max_minutes=1 is over at once
    cut = job.execute_in_process(
        partition_key="2026-11-29-08:00",
        instance=instance,
        raise_on_error=False,
        run_config={"ops": {"reconcile_window": {"config": {"max_minutes": 1}}}},
    )
    assert not cut.success
    assert "2026-11-29-08:00" not in instance.get_materialized_partitions(RECONCILED)
    # What the partition health bar reads (the instance's partition status cache): done, failed, the rest missing.
    hours = ["2026-11-29-07:00", "2026-11-29-08:00", "2026-11-29-09:00"]
    status = instance.get_status_by_partition(RECONCILED, hours, reconcile_partitions)
    assert status == {
        "2026-11-29-07:00": dg.AssetPartitionStatus.MATERIALIZED,
        "2026-11-29-08:00": dg.AssetPartitionStatus.FAILED,
        "2026-11-29-09:00": None,
    }


def test_the_partition_start_is_a_deliberate_setting():
    now = datetime(2026, 12, 1, 15, 42, tzinfo=UTC)
    assert reconcile_start({}, now) == "2026-12-01-00:00"  # unset: today, never hundreds of old hours
    assert reconcile_start({"SOCIALREC_RECONCILE_START": "2026-11-20-06:00"}, now) == "2026-11-20-06:00"
    for bad in ("2026-11-20", "yesterday", "2026-11-20-06:30"):
        with pytest.raises(SettingError) as err:
            reconcile_start({"SOCIALREC_RECONCILE_START": bad}, now)
        assert "SOCIALREC_RECONCILE_START" in str(err.value) and "\n" not in str(err.value)


# -- integrity checks ----------------------------------------------------------------------------


def _integrity_job(mongo_uri: str, db_name: str):
    resolved = dg.Definitions(
        assets=COLLECTION_SPECS,
        asset_checks=integrity_checks,
        jobs=[integrity_job],
        resources={"mongo": MongoResource(uri=mongo_uri, database=db_name)},
    )
    return resolved.resolve_job_def("integrity_job")


def test_integrity_job_passes_on_a_clean_store_and_fails_on_a_seeded_violation(instance, mongo_uri, fresh_db):
    job = _integrity_job(mongo_uri, fresh_db.name)
    clean = job.execute_in_process(instance=instance)
    evaluations = clean.get_asset_check_evaluations()
    assert len(evaluations) == len(integrity_checks) == 12
    assert all(e.passed for e in evaluations)

    orphan = {
        "_id": ObjectId(),
        "token_address": "TokA",
        "object": "accounts",
        "object_id": ObjectId(),
        "source_url": "https://x.com/kol",
        "platform": "x",
        "link_depth": 0,
        "linked_at": datetime(2026, 11, 1, tzinfo=UTC),
        "observed_at": datetime(2026, 11, 1, tzinfo=UTC),
    }
    fresh_db.token_links.insert_one(orphan)
    dirty = job.execute_in_process(instance=instance, raise_on_error=False)
    by_name = {e.check_name: e for e in dirty.get_asset_check_evaluations()}
    failed = by_name["links_point_at_rows"]
    assert not failed.passed and failed.severity == dg.AssetCheckSeverity.ERROR
    assert failed.metadata["offending_ids"].value == [str(orphan["_id"])]
    assert failed.metadata["dangling"].value == 1 and "coverage" in failed.metadata
    assert not by_name["linked_tokens_have_markers"].passed
    assert by_name["linked_tokens_have_markers"].severity == dg.AssetCheckSeverity.WARN


def test_the_integrity_schedule_runs_daily():
    schedule = defs.get_repository_def().get_schedule_def("integrity_schedule")
    assert schedule.cron_schedule == "30 4 * * *" and schedule.job_name == "integrity_job"


# -- recording_health ----------------------------------------------------------------------------


def _health_job(mongo_uri: str, db_name: str, broker, broker_url: str | None = None):
    resolved = dg.Definitions(
        assets=[*COLLECTION_SPECS, recording_health],
        jobs=[recording_health_job],
        resources={
            "mongo": MongoResource(uri=mongo_uri, database=db_name),
            "rabbitmq": RabbitMQResource(url=broker_url or broker.url, env=broker.env, exchange=broker.exchange),
            "recording": RecordingSettingsResource(),
        },
    )
    return resolved.resolve_job_def("recording_health_job")


def test_recording_health_plots_numbers_and_turns_red_when_work_waits(instance, mongo_uri, fresh_db, broker):
    now = datetime.now(UTC)
    RecordInbox(fresh_db).ensure_indexes()
    fresh_db.tokens.insert_one(
        {
            "address": "TokOld",
            "discovered_at": now - timedelta(hours=5),
            "social_urls": [
                {
                    "url": "https://x.com/a",
                    "platform": "x",
                    "status": "error",
                    "attempted_at": now - timedelta(minutes=10),
                },
                {
                    "url": "https://x.com/b",
                    "platform": "x",
                    "status": "ok",
                    "attempted_at": now - timedelta(minutes=20),
                },
                {
                    "url": "https://tiktok.com/@a/video/1",
                    "platform": "tt",
                    "status": "skipped_paid",
                    "attempted_at": now,
                },
                {"url": "https://instagram.com/p/1", "platform": "ig", "status": "ok", "attempted_at": now},
                {
                    "url": "https://t.me/gone",
                    "platform": "tg",
                    "status": "exhausted",
                    "attempted_at": now - timedelta(hours=9),
                },
            ],
        }
    )
    fresh_db.record_inbox.insert_one(
        {"token_address": "Waiting", "state": "pending", "generation": 0, "received_at": now}
    )
    broker.publish({"tokenAddress": "x", "totalInvestedAlphaFinders": 7})

    result = _health_job(mongo_uri, fresh_db.name, broker).execute_in_process(instance=instance)
    (materialization,) = result.asset_materializations_for_node("recording_health")
    entries = materialization.metadata
    md = {k: v.value for k, v in entries.items()}
    # the verdict first: 5 h without a token while work waits is down
    assert next(iter(entries)) == "verdict" and md["verdict"].startswith("down: nothing is being recorded")
    numeric = [k for k, v in md.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    assert numeric == [k for k in PLOTTED if k in numeric] and len(numeric) <= 8  # the plots, in order
    assert md["tokens_recorded_last_hour"] == 0 and md["retryable_backlog"] == 2
    assert md["error_rate_last_hour"] == 0.3333  # 1 error in 3 calls (x twice, ig once)
    assert md["paid_calls_last_hour"] == 1  # the Instagram call; the skipped TikTok made none
    assert (md["inbox_open"], md["queue_depth"], md["dead_letter_depth"]) == (1, 1, 0)
    figures = md["figures"]
    assert (figures["urls_ok"], figures["urls_error"], figures["urls_skipped_paid"], figures["urls_exhausted"]) == (
        2, 1, 1, 1
    )
    rows = {r.data["platform"]: r.data for r in md["providers_last_hour"].records}
    assert (rows["x"]["attempts"], rows["x"]["errors"], rows["x"]["error_rate"]) == (2, 1, 0.5)
    assert md["providers_last_hour"].records[0].data["platform"] == "x"  # busiest first
    assert md["unknown_figures"] == {}  # every figure was read
    (check,) = result.get_asset_check_evaluations()
    assert check.check_name == "keeping_up" and not check.passed  # 5 h without a token, work waiting

    fresh_db.tokens.insert_one({"address": "TokNew", "discovered_at": now, "social_urls": []})
    again = _health_job(mongo_uri, fresh_db.name, broker).execute_in_process(instance=instance)
    (check,) = again.get_asset_check_evaluations()
    assert check.passed
    assert again.asset_materializations_for_node("recording_health")[0].metadata["tokens_recorded_last_hour"].value == 1


def test_nothing_waiting_is_not_a_stall():
    assert stalled({"inbox_open": 0, "queue_depth": 0, "last_recorded_age_min": 999})[0] is False
    assert stalled({"inbox_open": 0, "queue_depth": 4, "last_recorded_age_min": -1})[0] is True
    assert stalled({"inbox_open": 2, "queue_depth": -1, "last_recorded_age_min": 30})[0] is False


def test_a_figure_that_could_not_be_read_is_not_healthy():
    fine = {"inbox_open": 2, "queue_depth": 0, "last_recorded_age_min": 30}
    assert keeping_up(fine)[0] == "ok"
    assert keeping_up({**fine, "queue_depth": -1})[0] == "unknown"  # the broker could not be read
    verdict, why = keeping_up({**fine, "last_recorded_age_min": -1}, unknown={"last_recorded_age_min": "timeout"})
    assert verdict == "unknown" and "last_recorded_age_min" in why
    # a stall the readable figures already show stays a stall
    assert keeping_up({"inbox_open": 2, "queue_depth": -1, "last_recorded_age_min": 300})[0] == "stalled"
    # nothing waits (both read): no stall, whatever the age of the last marker
    idle = {"inbox_open": 0, "queue_depth": 0, "last_recorded_age_min": -1}
    assert keeping_up(idle, unknown={"last_recorded_age_min": "timeout"})[0] == "ok"
    # a figure keeping_up does not use changes nothing
    assert keeping_up(fine, unknown={"url_figures": "timeout"})[0] == "ok"


def test_broker_down_makes_keeping_up_warn_not_green(instance, mongo_uri, fresh_db, broker):
    now = datetime.now(UTC)
    RecordInbox(fresh_db).ensure_indexes()
    fresh_db.tokens.insert_one({"address": "TokNew", "discovered_at": now, "social_urls": []})
    down = "amqp://guest:guest@127.0.0.1:1/%2F"  # nothing listens on port 1
    result = _health_job(mongo_uri, fresh_db.name, broker, broker_url=down).execute_in_process(instance=instance)
    (materialization,) = result.asset_materializations_for_node("recording_health")
    md = materialization.metadata
    assert md["queue_depth"].value == -1 and md["verdict"].value.startswith("degraded: could not read")
    assert set(md["unknown_figures"].value) == {"queue_depth", "dead_letter_depth"}
    (check,) = result.get_asset_check_evaluations()
    assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
    assert check.metadata["verdict"].value == "unknown"

    up = _health_job(mongo_uri, fresh_db.name, broker).execute_in_process(instance=instance)
    (check,) = up.get_asset_check_evaluations()
    assert check.passed and check.metadata["verdict"].value == "ok"


def test_an_integrity_check_that_read_only_part_is_warn_with_its_coverage_never_passed():
    from socialrec_pipeline.defs.integrity import check_result
    from socialrec_pipeline.store.integrity import CheckOutcome

    partial = CheckOutcome("link_depth", True, 0, [], {"scanned": 2, "total": 5}, "2 of ~5 read", complete=False)
    result = check_result(partial, dg.AssetCheckSeverity.ERROR)
    assert not result.passed and result.severity == dg.AssetCheckSeverity.WARN
    assert "2 of ~5 read" in (result.description or "") and result.metadata["complete"].value is False
    whole = check_result(CheckOutcome("link_depth", True, 0, [], {}, "all read"), dg.AssetCheckSeverity.ERROR)
    assert whole.passed
    found = CheckOutcome("link_depth", False, 3, ["a"], {}, "2 of ~5 read", complete=False)
    failed = check_result(found, dg.AssetCheckSeverity.ERROR)
    assert not failed.passed and failed.severity == dg.AssetCheckSeverity.ERROR  # violations keep their severity


def test_health_is_due_at_start_and_after_a_newer_deployment_check():
    assert health_due(None, None) is not None  # a new deployment: materialize now
    assert health_due(100.0, None) is None
    assert health_due(100.0, 50.0) is None
    assert "deployment_ready" in (health_due(100.0, 150.0) or "")


def test_the_health_sensor_requests_a_run_on_a_fresh_instance_then_skips(mongo_uri, fresh_db, broker):
    RecordInbox(fresh_db).ensure_indexes()
    with dg.instance_for_test() as instance:  # a new deployment: never materialized
        request = recording_health_sensor(dg.build_sensor_context(instance=instance))
        assert isinstance(request, dg.RunRequest)
        _health_job(mongo_uri, fresh_db.name, broker).execute_in_process(instance=instance)
        assert isinstance(recording_health_sensor(dg.build_sensor_context(instance=instance)), dg.SkipReason)


def test_health_runs_every_15_minutes_without_the_doctor():
    schedule = defs.get_repository_def().get_schedule_def("recording_health_schedule")
    assert schedule.cron_schedule == "*/15 * * * *"
    job = defs.get_repository_def().get_job("recording_health_job")
    checks = {key.name for key in job.asset_layer.asset_graph.asset_check_keys}
    assert "keeping_up" in checks and "deployment_ready" not in checks


def test_a_failed_deployment_check_makes_the_health_verdict_down_naming_the_blocker(mongo_uri, fresh_db, broker):
    RecordInbox(fresh_db).ensure_indexes()
    fresh_db.tokens.insert_one({"address": "TokNew", "discovered_at": datetime.now(UTC), "social_urls": []})
    with dg.instance_for_test() as instance:
        instance.report_runless_asset_event(
            dg.AssetCheckEvaluation(
                asset_key=dg.AssetKey("recording_health"),
                check_name="deployment_ready",
                passed=False,
                severity=dg.AssetCheckSeverity.ERROR,
                description="down: soltracker — key refused, set SOL_TRACKER_API_KEY (19 ok, 0 warn, 1 fail)",
            )
        )
        result = _health_job(mongo_uri, fresh_db.name, broker).execute_in_process(instance=instance)
        (materialization,) = result.asset_materializations_for_node("recording_health")
        assert materialization.metadata["verdict"].value == "down: soltracker — key refused, set SOL_TRACKER_API_KEY"
        # the doctor's evaluation is older than this materialization: the sensor waits for the schedule
        assert isinstance(recording_health_sensor(dg.build_sensor_context(instance=instance)), dg.SkipReason)
