"""deploy/helm-values.yaml: the instance the official chart renders from it is a valid Dagster instance.

There is no Kubernetes here, so the chart's instance ConfigMap (templates/configmap-instance.yaml
and helpers/instance/*.tpl) is rendered by `chart_instance` for the keys the values file uses, then
loaded by `DagsterInstance.from_config`, which checks the whole file against Dagster's instance
schema and builds the storages — on the test's own PostgreSQL in place of the chart's host — and
each configured class's config is checked against its own schema (dagster-postgres storages,
dagster-k8s's K8sRunLauncher, the run coordinator). Only public Dagster API.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import dagster as dg
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
RELEASE, NAMESPACE = "socialrec", "dagster"


def values() -> dict:
    return yaml.safe_load((ROOT / "deploy" / "helm-values.yaml").read_text())


def storage(module: str, klass: str, config: dict) -> dict:
    return {"module": f"dagster_postgres.{module}", "class": klass, "config": config}


def threads(section: dict) -> dict:
    return {"use_threads": section["useThreads"], "num_workers": section["numWorkers"]}


def chart_instance(v: dict) -> dict:
    """The chart's dagster.yaml for these values (the subset of the templates the values use)."""
    pg = v["postgresql"]
    pg_config = {
        "postgres_db": {
            "username": pg["postgresqlUsername"], "password": {"env": "DAGSTER_PG_PASSWORD"},
            "hostname": pg["postgresqlHost"], "db_name": pg["postgresqlDatabase"], "port": pg["service"]["port"],
            "params": pg.get("postgresqlParams") or {},
            **({"scheme": pg["postgresqlScheme"]} if pg.get("postgresqlScheme") else {}),
        }
    }  # fmt: skip
    launcher = v["runLauncher"]
    assert launcher["type"] == "K8sRunLauncher"
    k8s = launcher["config"]["k8sRunLauncher"]
    daemon = v["dagsterDaemon"]
    coordinator = daemon["runCoordinator"]
    assert coordinator["type"] == "CustomRunCoordinator"
    custom = coordinator["config"]["customRunCoordinator"]
    runs, pools = v["concurrency"]["runs"], v["concurrency"]["pools"]
    monitoring, retries = daemon["runMonitoring"], daemon["runRetries"]
    return {
        "scheduler": {"module": "dagster.core.scheduler", "class": "DagsterDaemonScheduler"},
        "schedule_storage": storage("schedule_storage", "PostgresScheduleStorage", pg_config),
        "run_storage": storage("run_storage", "PostgresRunStorage", pg_config),
        "event_log_storage": storage("event_log", "PostgresEventLogStorage", pg_config),
        "run_launcher": {
            "module": "dagster_k8s", "class": "K8sRunLauncher",
            "config": {
                "load_incluster_config": k8s["loadInclusterConfig"], "job_namespace": NAMESPACE,
                "image_pull_policy": k8s["imagePullPolicy"], "service_account_name": f"{RELEASE}-dagster",
                "dagster_home": "/opt/dagster/dagster_home", "instance_config_map": f"{RELEASE}-dagster-instance",
                "postgres_password_secret": v["global"]["postgresqlSecretName"],
                "env_secrets": [s["name"] for s in k8s.get("envSecrets", [])],
                "run_k8s_config": {"container_config": k8s["runK8sConfig"]["containerConfig"]},
            },
        },
        "run_coordinator": {"module": custom["module"], "class": custom["class"], "config": custom["config"]},
        "concurrency": {
            "pools": {"default_limit": pools["defaultLimit"]},
            "runs": {
                "max_concurrent_runs": runs["maxConcurrentRuns"],
                "tag_concurrency_limits": runs["tagConcurrencyLimits"],
            },
        },
        "run_monitoring": {
            "enabled": monitoring["enabled"], "start_timeout_seconds": monitoring["startTimeoutSeconds"],
            "cancel_timeout_seconds": monitoring["cancelTimeoutSeconds"],
            "poll_interval_seconds": monitoring["pollIntervalSeconds"],
            "free_slots_after_run_end_seconds": monitoring["freeSlotsAfterRunEndSeconds"],
        },
        "run_retries": {"enabled": retries["enabled"], "max_retries": retries["maxRetries"]},
        "sensors": threads(daemon["sensors"]),
        "schedules": threads(daemon["schedules"]),
        "telemetry": {"enabled": v["telemetry"]["enabled"]},
    }  # fmt: skip


def config_errors(schema, value: dict) -> list[str]:
    """Dagster's verdict on `value` against a config `schema` (empty when accepted), through the public
    API: the schema becomes an op's config and `validate_run_config` checks the value as that op's."""

    @dg.op(name="probe", config_schema=schema)
    def probe() -> None: ...

    @dg.job(name="probe_job")
    def probe_job() -> None:
        probe()

    try:
        dg.validate_run_config(probe_job, {"ops": {"probe": {"config": value}}})
    except dg.DagsterInvalidConfigError as exc:
        return [error.message for error in exc.errors]
    return []


def load_instance(home: Path, rendered: dict, postgres_db: dict) -> None:
    """`DagsterInstance.from_config` on the rendered file, its storages on the test's PostgreSQL (the
    chart's host does not exist here); raises on anything the instance schema rejects."""
    for key in ("schedule_storage", "run_storage", "event_log_storage"):
        rendered[key]["config"]["postgres_db"].update(
            hostname=postgres_db["host"], port=postgres_db["port"], username=postgres_db["user"],
            db_name=postgres_db["db"], params={},
        )  # fmt: skip
    (home / "dagster.yaml").write_text(yaml.safe_dump(rendered))
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"  # built, not only parsed


def test_the_charts_instance_for_our_values_loads_with_dagsters_schema(tmp_path, monkeypatch, postgres_db):
    monkeypatch.setenv("DAGSTER_PG_PASSWORD", postgres_db["password"])
    config = chart_instance(values())
    load_instance(tmp_path, config, postgres_db)

    # Each configured class accepts its config (constructing them would need a cluster and a database).
    for key in ("run_storage", "event_log_storage", "schedule_storage", "run_launcher", "run_coordinator"):
        section = config[key]
        klass = getattr(importlib.import_module(section["module"]), section["class"])
        assert config_errors(klass.config_type(), section.get("config") or {}) == [], key


def test_a_class_config_the_schema_rejects_is_reported():
    # The probe must be able to fail: a launcher config with an unknown key and a wrong type.
    from dagster_k8s import K8sRunLauncher

    errors = config_errors(K8sRunLauncher.config_type(), {"job_namespace": 3, "limt": 1})
    assert any("limt" in e for e in errors) and any("job_namespace" in e for e in errors), errors


def test_a_wrong_key_in_the_values_is_caught(tmp_path, monkeypatch, postgres_db):
    monkeypatch.setenv("DAGSTER_PG_PASSWORD", postgres_db["password"])
    broken = values()
    broken["concurrency"]["runs"]["tagConcurrencyLimits"][0]["limt"] = 1
    with pytest.raises(dg.DagsterInvalidConfigError, match="limt"):
        load_instance(tmp_path, chart_instance(broken), postgres_db)


def test_the_cluster_keeps_the_limits_of_deploy_dagster_yaml():
    instance = yaml.safe_load((ROOT / "deploy" / "dagster.yaml").read_text())
    rendered = chart_instance(values())
    assert rendered["concurrency"] == instance["concurrency"]
    assert rendered["run_coordinator"] == instance["run_coordinator"]
    assert (
        rendered["run_storage"]["config"]["postgres_db"]["scheme"]
        == instance["storage"]["postgres"]["postgres_db"]["scheme"]
    )
    for key in ("max_retries", "enabled"):
        assert rendered["run_retries"][key] == instance["run_retries"][key]
    # The daemon is one process per deployment: the chart has no replica count for it, and the
    # values must not try to add one.
    assert "replicaCount" not in values()["dagsterDaemon"]
