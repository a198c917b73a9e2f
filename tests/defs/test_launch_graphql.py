"""A launch over GraphQL (what the Launchpad, Materialize and a check's Execute button send) goes
through the deployment's run coordinator (`GatedRunCoordinator`, dagster.yaml): a launch that sets a
deployment setting is refused before it is queued, in our words; an allowed one is queued with the
job's family tag, also when it comes from the asset's Materialize button.

The code location is loaded the way the webserver loads it (workspace.yaml, a code server process);
no daemon runs, so an accepted run stays QUEUED and nothing is executed.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from socialrec_pipeline.defs.launch_gate import RESOURCE_SETTINGS
from socialrec_pipeline.defs.tags import JOB_FAMILY_TAG

ROOT = Path(__file__).resolve().parents[2]
COORDINATOR = {
    "module": "socialrec_pipeline.defs.run_coordinator",
    "class": "GatedRunCoordinator",
    "config": {"dequeue_interval_seconds": 1},
}
ADDRESS = "So11111111111111111111111111111111111111112"


@pytest.fixture(scope="module")
def graphql():
    # dagster_graphql's test utilities cost ~1.2 s of CPU to import: paid by the worker that runs
    # these tests, not at collection by every pytest-xdist worker.
    from dagster_graphql.test.utils import define_out_of_process_context

    with (
        dg.instance_for_test(overrides={"run_coordinator": COORDINATOR}) as instance,
        define_out_of_process_context(str(ROOT / "workspace.yaml"), None, instance) as context,
    ):
        yield context


def launch(context, job: str, run_config: dict | None = None, tags: dict | None = None, **selection) -> dict:
    from dagster_graphql.client.client_queries import CLIENT_SUBMIT_PIPELINE_RUN_MUTATION
    from dagster_graphql.test.utils import execute_dagster_graphql, infer_job_selector

    params = {
        "selector": infer_job_selector(context, job, **selection),
        "runConfigData": run_config or {},
        "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in (tags or {}).items()]},
    }
    result = execute_dagster_graphql(context, CLIENT_SUBMIT_PIPELINE_RUN_MUTATION, {"executionParams": params})
    assert not result.errors, result.errors
    return result.data["launchPipelineExecution"]


def refused(answer: dict) -> str:
    assert answer["__typename"] == "PythonError", answer
    assert "Launch refused (nothing ran)" in answer["message"]
    return answer["message"]


def test_resource_fields_over_graphql_are_refused_in_our_words(graphql):
    before = len(graphql.instance.get_runs())
    message = refused(
        launch(
            graphql,
            "retry_job",
            {"resources": {"soltracker": {"config": {"base_url": "http://attacker.example"}}}},
            {"dagster/partition": "error"},
        )
    )
    assert "resources.soltracker.config.base_url" in message and "SOL_TRACKER_BASE_URL" in message
    message = refused(launch(graphql, "record_token_job", {
        "ops": {"prepare": {"config": {"token_address": ADDRESS}}},
        "resources": {"recording": {"config": {"enable_paid": True}}, "redis": {"config": {"url": "redis://x"}}},
    }))  # fmt: skip
    assert "SOCIALREC_ENABLE_PAID" in message and "REDIS_URL" in message
    runs = graphql.instance.get_runs()
    assert len(runs) == before + 2
    # Recorded as failed before it started: no worker was launched, the reason is on the run.
    assert all(run.status == dg.DagsterRunStatus.FAILURE for run in runs[:2])
    assert all(run.tags["dagster/max_retries"] == "0" for run in runs[:2])  # run retries leave it alone


def test_knobs_and_launcher_tags_over_graphql_are_refused(graphql):
    message = refused(launch(graphql, "retry_job", {"ops": {"retry_urls": {"config": {"limit": -5}}}},
                             {"dagster/partition": "error"}))  # fmt: skip
    assert "from 1 to 1000" in message and "SOCIALREC_CAP_RETRY_LIMIT" in message
    k8s = '{"container_config": {"env": [{"name": "SOCIALREC_ENABLE_PAID", "value": "true"}]}}'
    message = refused(launch(graphql, "integrity_job", tags={"dagster-k8s/config": k8s}))
    assert "run tag dagster-k8s/config" in message
    message = refused(launch(graphql, "metric_refresh_job", tags={JOB_FAMILY_TAG: "free"}))
    assert "metric_refresh limits" in message


def test_an_allowed_launch_is_queued_with_its_family_tag(graphql):
    config = {"ops": {"retry_urls": {"config": {"limit": 10}}}}
    answer = launch(graphql, "retry_job", config, {"dagster/partition": "error"})
    assert answer["__typename"] == "LaunchRunSuccess", answer
    run = graphql.instance.get_run_by_id(answer["run"]["runId"])
    assert run.status == dg.DagsterRunStatus.QUEUED and run.tags[JOB_FAMILY_TAG] == "retry"


def test_materialize_of_reconciled_hours_is_a_reconcile_run(graphql):
    answer = launch(
        graphql,
        "__ASSET_JOB",
        {"ops": {"reconcile_window": {"config": {"max_minutes": 10}}}},
        {"dagster/partition": "2026-12-01-00:00"},
        asset_selection=[{"path": ["reconciled_hours"]}],
    )
    assert answer["__typename"] == "LaunchRunSuccess", answer
    run = graphql.instance.get_run_by_id(answer["run"]["runId"])
    assert run.tags[JOB_FAMILY_TAG] == "reconcile"  # the queue's reconcile limit and the runs filter see it
    message = refused(launch(
        graphql, "__ASSET_JOB", {"ops": {"reconcile_window": {"config": {"max_minutes": 600}}}},
        {"dagster/partition": "2026-12-01-00:00"}, asset_selection=[{"path": ["reconciled_hours"]}],
    ))  # fmt: skip
    assert "from 1 to 55" in message


def every_resource_field() -> dict:
    resources: dict = {}
    for key, paths in RESOURCE_SETTINGS.items():
        config: dict = {}
        for path in paths:
            *parents, leaf = path.split(".")
            node = config
            for parent in parents:
                node = node.setdefault(parent, {})
            node[leaf] = "http://attacker.example"
        resources[key] = {"config": config}
    return resources


@pytest.mark.parametrize(
    ("job", "extra", "tags"),
    [
        ("record_token_job", {"ops": {"prepare": {"config": {"token_address": ADDRESS}}}}, {}),
        ("reconcile_job", {}, {"dagster/partition": "2026-12-01-00:00"}),
        ("retry_job", {}, {"dagster/partition": "skipped_paid"}),
        ("metric_refresh_job", {}, {}),
        ("wallets_backfill_job", {}, {}),
        ("integrity_job", {}, {}),
        ("recording_health_job", {}, {}),
    ],
)
def test_every_job_over_graphql_refuses_every_resource_field(graphql, job, extra, tags):
    message = refused(launch(graphql, job, {**extra, "resources": every_resource_field()}, tags))
    for key, paths in RESOURCE_SETTINGS.items():
        for path, variable in paths.items():
            assert f"resources.{key}.config.{path}:" in message and f"set {variable} " in message, (key, path)
