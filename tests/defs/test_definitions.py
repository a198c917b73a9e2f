"""The code location loads the way the webserver loads it, and every definition resolves by name."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
NAMES = {
    "jobs": [
        "record_token_job",
        "reconcile_job",
        "retry_job",
        "metric_refresh_job",
        "wallets_backfill_job",
        "integrity_job",
        "recording_health_job",
        "operator_checks_job",
        "deployment_ready_job",
        "signals_job",
    ],
    "schedules": [
        "reconcile_schedule",
        "retry_schedule",
        "metric_refresh_schedule",
        "integrity_schedule",
        "recording_health_schedule",
        "operator_checks_schedule",
        "signals_schedule",
    ],
    "sensors": [
        "alert_on_check_and_stuck_token",
        "alert_on_run_failure",
        "deployment_ready_sensor",
        "recording_health_sensor",
        "token_flow_sensor",
    ],
}


def _workspace_entry() -> dict:
    workspace = yaml.safe_load((ROOT / "workspace.yaml").read_text())
    return workspace["load_from"][0]["python_module"]


@pytest.mark.slow
def test_workspace_validates_like_the_webserver_loads_it(tmp_path):
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path), "MONGODB_URI": "mongodb://127.0.0.1:1"}
    dagster = Path(sys.executable).with_name("dagster")
    proc = subprocess.run(
        [str(dagster), "definitions", "validate", "-w", str(ROOT / "workspace.yaml")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "Validation successful for code location socialrec_pipeline" in output


def test_every_definition_resolves_by_name():
    entry = _workspace_entry()
    assert entry["location_name"] == "socialrec_pipeline"
    defs = importlib.import_module(entry["module_name"]).defs
    repo = defs.get_repository_def()
    assert sorted(j for j in repo.job_names if not j.startswith("__")) == sorted(NAMES["jobs"])
    for name in NAMES["jobs"]:
        assert repo.get_job(name).name == name
    assert sorted(s.name for s in repo.schedule_defs) == sorted(NAMES["schedules"])
    assert sorted(s.name for s in repo.sensor_defs) == sorted(NAMES["sensors"])
    assert repo.get_sensor_def("token_flow_sensor").job_name == "record_token_job"


def test_no_automation_condition_or_freshness_policy_while_their_daemons_are_off():
    """dagster.yaml (and deploy/dagster.yaml) turn the daemon's asset and freshness loops off; an
    asset or check given a condition or policy would then silently never be evaluated."""
    from socialrec_pipeline.defs.definitions import defs

    for path in ("dagster.yaml", "deploy/dagster.yaml"):
        instance = yaml.safe_load((ROOT / path).read_text())
        assert instance["auto_materialize"] == {"enabled": False, "use_sensors": False}, path
        assert instance["freshness"] == {"enabled": False}, path
    specs = defs.resolve_all_asset_specs()
    assert specs  # the walk below looks at something
    governed = [s.key for s in specs if s.automation_condition or s.freshness_policy or s.legacy_freshness_policy]
    graph = defs.resolve_asset_graph()
    governed += [k for k in graph.asset_check_keys if graph.get_check_spec(k).automation_condition]
    assert governed == [], f"turn auto_materialize / freshness back on in dagster.yaml for {governed}"
