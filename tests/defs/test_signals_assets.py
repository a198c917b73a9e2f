"""The signal assets in Dagster: one day partition materializes the three, with plots, the largest-
clusters table and passing checks; the schedule computes the day that just closed."""

from __future__ import annotations

from datetime import UTC, datetime

import dagster as dg
import pytest

from socialrec_pipeline.defs.resources import MongoResource
from socialrec_pipeline.defs.signals import (
    SIGNAL_ASSETS,
    SIGNALS_GROUP,
    SignalSettingsResource,
    signals_job,
    signals_settings_from_env,
    signals_start,
)
from socialrec_pipeline.recording.settings import SettingError
from socialrec_pipeline.store import Store
from tests.signals.dataset import T, seed

DAY = "2026-11-10"


@pytest.fixture(scope="module")
def instance():
    with dg.DagsterInstance.ephemeral() as inst:
        yield inst


def test_one_partition_materializes_the_three_assets_with_plots_and_checks(mongo_uri, fresh_db, instance):
    Store(fresh_db).ensure_indexes()
    seed(fresh_db)
    resources = {
        "mongo": MongoResource(uri=mongo_uri, database=fresh_db.name),
        "signals": SignalSettingsResource(cluster_hub_limit=3),
    }
    result = dg.materialize(SIGNAL_ASSETS, partition_key=DAY, resources=resources, instance=instance)
    assert result.success
    materializations = [e.event_specific_data.materialization for e in result.get_asset_materialization_events()]
    by_asset = {m.asset_key.to_user_string(): m.metadata for m in materializations}
    assert set(by_asset) == {"content_link_stats", "token_signals", "token_clusters"}
    assert by_asset["content_link_stats"]["contents_linked"].value == 2
    assert by_asset["token_signals"]["tokens_with_reused_content"].value == 2
    assert by_asset["token_signals"]["median_min_account_age_days"].value == pytest.approx(3.021)
    clusters = by_asset["token_clusters"]
    assert (clusters["clusters_size_1"].value, clusters["clusters_size_2"].value) == (2, 1)
    assert clusters["clusters_size_3_5"].value == 1 and clusters["hubs_ignored"].value == 1
    table = clusters["largest_clusters"].value
    assert [r.data["cluster_id"] for r in table.records][:2] == [T, "B1tok"]
    assert table.records[0].data["joined_by"] == "accounts 2, domains 1"
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks == {"link_stats_recount": True, "signals_cover_day": True, "one_cluster_per_token": True}
    assert fresh_db.token_signals.count_documents({}) == 2
    assert DAY in instance.get_materialized_partitions(dg.AssetKey("token_clusters"))


def test_the_assets_are_in_the_signals_group_downstream_of_the_collections():
    specs = {spec.key.to_user_string(): spec for asset in SIGNAL_ASSETS for spec in asset.specs}
    assert {s.group_name for s in specs.values()} == {SIGNALS_GROUP}
    assert {d.asset_key.to_user_string() for d in specs["token_signals"].deps} >= {"tokens", "token_links"}
    from socialrec_pipeline.defs.definitions import defs

    job = defs.resolve_job_def(signals_job.name)
    assert isinstance(job.partitions_def, dg.DailyPartitionsDefinition)
    assert job.partitions_def.timezone == "UTC"


def test_the_schedule_computes_the_day_that_just_closed():
    from socialrec_pipeline.defs.definitions import defs

    repo = defs.get_repository_def()
    schedule = repo.get_schedule_def("signals_schedule")
    context = dg.build_schedule_context(
        scheduled_execution_time=datetime(2026, 11, 11, 0, 20, tzinfo=UTC), repository_def=repo
    )
    assert [r.partition_key for r in schedule.evaluate_tick(context).run_requests] == [DAY]
    assert schedule.execution_timezone == "UTC"


def test_the_start_day_and_hub_limit_are_deploy_time_settings(monkeypatch):
    assert signals_start({"SOCIALREC_SIGNALS_START": "2026-10-01"}) == "2026-10-01"
    with pytest.raises(SettingError, match="SOCIALREC_SIGNALS_START"):
        signals_start({"SOCIALREC_SIGNALS_START": "2026-10"})
    monkeypatch.setenv("SOCIALREC_CLUSTER_HUB_LIMIT", "7")
    resource = signals_settings_from_env()
    with dg.build_resources({"signals": resource}) as built:
        assert built.signals.settings().cluster_hub_limit == 7
    monkeypatch.delenv("SOCIALREC_CLUSTER_HUB_LIMIT")
    with dg.build_resources({"signals": signals_settings_from_env()}) as built:
        assert built.signals.settings().cluster_hub_limit == 50


def test_the_cluster_retention_is_a_deploy_time_setting(monkeypatch):
    monkeypatch.setenv("SOCIALREC_CLUSTER_RETENTION_DAYS", "30")
    with dg.build_resources({"signals": signals_settings_from_env()}) as built:
        assert built.signals.settings().cluster_retention_days == 30
    monkeypatch.delenv("SOCIALREC_CLUSTER_RETENTION_DAYS")
    with dg.build_resources({"signals": signals_settings_from_env()}) as built:
        assert built.signals.settings().cluster_retention_days == 7
    monkeypatch.setenv("SOCIALREC_CLUSTER_RETENTION_DAYS", "0")
    with pytest.raises(Exception, match="cluster_retention_days"), dg.build_resources(
        {"signals": signals_settings_from_env()}
    ) as built:
        built.signals.settings()
