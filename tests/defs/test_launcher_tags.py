"""Launcher tags carry no settings (SPEC §10), checked offline with each launcher library's own code.

dagster-k8s builds a run pod's container from the deployment's `run_k8s_config` merged with the
run's `dagster-k8s/config` tag; dagster-celery picks the run's Celery queue from its
`dagster-celery/queue` tag. The launch gate refuses those tags before a run is queued, so the
launcher only ever sees the deployment's settings.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

import dagster as dg
import pytest
import yaml
from dagster_celery import tags as celery_tags

from socialrec_pipeline.defs.launch_gate import launch_refusals

if TYPE_CHECKING:
    from dagster_k8s.container_context import K8sContainerContext

ROOT = Path(__file__).resolve().parents[2]
PAID_ON = {"container_config": {"env": [{"name": "SOCIALREC_ENABLE_PAID", "value": "true"}]}}


@pytest.fixture(scope="module")
def k8s() -> SimpleNamespace:
    """dagster-k8s's job module and container context: imported by the worker that runs these tests
    (kubernetes' client costs ~0.5 s of CPU), not at collection by every pytest-xdist worker."""
    from dagster_k8s import job
    from dagster_k8s.container_context import K8sContainerContext

    return SimpleNamespace(job=job, Context=K8sContainerContext)


def run_with(tags: dict[str, str]) -> dg.DagsterRun:
    return dg.DagsterRun(job_name="retry_job", run_id="r-1", tags=tags)


def container_env(context: K8sContainerContext) -> list:
    return list((context.run_k8s_config.container_config or {}).get("env", []))


def test_a_k8s_config_tag_would_reach_the_run_pod_and_is_refused_at_launch(k8s):
    run = run_with({k8s.job.USER_DEFINED_K8S_CONFIG_KEY: json.dumps(PAID_ON)})
    # What the launcher would build from the tag (the hazard: the paid gate opened from the Launchpad).
    context = k8s.Context.create_for_run(run, None, include_run_tags=True)
    assert {"name": "SOCIALREC_ENABLE_PAID", "value": "true"} in container_env(context)
    # dagster-k8s's own allowlist, set to nothing, refuses it as well.
    with pytest.raises(Exception, match="env"):
        context.validate_user_k8s_config_for_run({}, [])
    (refusal,) = launch_refusals({}, run.tags, job_name=run.job_name)
    assert f"run tag {k8s.job.USER_DEFINED_K8S_CONFIG_KEY}" in refusal and "helm-values.yaml" in refusal


def test_every_k8s_tag_dagster_k8s_reads_is_refused(k8s):
    for key in (k8s.job.USER_DEFINED_K8S_CONFIG_KEY, k8s.job.K8S_RESOURCE_REQUIREMENTS_KEY):
        assert launch_refusals({}, {key: "{}"}), key


def test_a_run_that_passes_the_gate_gets_only_the_deployments_container(k8s):
    helm = yaml.safe_load((ROOT / "deploy" / "helm-values.yaml").read_text())
    launcher = helm["runLauncher"]["config"]["k8sRunLauncher"]
    deployment = k8s.Context(
        env_secrets=[s["name"] for s in launcher["envSecrets"]],
        run_k8s_config=k8s.job.UserDefinedDagsterK8sConfig.from_dict(
            {"container_config": launcher["runK8sConfig"]["containerConfig"]}
        ),
    )
    run = run_with({"socialrec/job": "retry", "dagster/partition": "error"})
    assert launch_refusals({}, run.tags, job_name=run.job_name) == []
    context = deployment.merge(k8s.Context.create_for_run(run, None, include_run_tags=True))
    assert container_env(context) == []
    assert "socialrec-env" in json.dumps(context.run_k8s_config.container_config.get("env_from"))


@pytest.mark.parametrize(
    "key", [celery_tags.DAGSTER_CELERY_QUEUE_TAG, celery_tags.DAGSTER_CELERY_RUN_PRIORITY_TAG]
)
def test_celery_route_tags_are_refused(key):
    # CeleryRunLauncher.launch_run sends the run to run.tags[DAGSTER_CELERY_QUEUE_TAG] when set: a
    # queue of other workers (another environment) than SOCIALREC_CELERY_RUN_QUEUE.
    (refusal,) = launch_refusals({}, {key: "elsewhere"}, job_name="retry_job")
    assert f"run tag {key}" in refusal


@pytest.mark.parametrize("key", ["dagster-docker/container_context", "docker/image", "ecs/task_overrides"])
def test_container_tags_of_other_launchers_are_refused(key):
    assert launch_refusals({}, {key: "{}"}, job_name="retry_job")


def charts_code_location_context(k8s: SimpleNamespace) -> K8sContainerContext:
    """The container context the official chart gives our code location's runs (its
    `dagsterUserDeployments.k8sContainerContext` helper, `includeConfigInLaunchedRuns` on by default),
    for the user deployment of deploy/helm-values.yaml."""
    helm = yaml.safe_load((ROOT / "deploy" / "helm-values.yaml").read_text())
    (deployment,) = helm["dagster-user-deployments"]["deployments"]
    return k8s.Context.create_from_config({
        "k8s": {
            "image_pull_policy": deployment["image"]["pullPolicy"],
            "env_config_maps": [f"socialrec-dagster-{deployment['name']}-user-env"],
            "env_secrets": [s["name"] for s in deployment["envSecrets"]],
            "resources": deployment["resources"],
            "namespace": "socialrec",
            "service_account_name": "socialrec-dagster-user-deployments",
            "run_k8s_config": {"pod_spec_config": {"automount_service_account_token": True}},
        }
    })


def test_an_empty_k8s_field_allowlist_would_refuse_every_run_of_the_charts_code_location(k8s):
    # Why deploy/helm-values.yaml does not set only_allow_user_defined_k8s_config_fields: {} (beside the
    # chart not passing it, docs/decisions.md): dagster-k8s checks the code location's own container
    # context against the allowlist too, and the chart's sets these fields.
    with pytest.raises(Exception, match="allowed list") as refused:
        charts_code_location_context(k8s).validate_user_k8s_config_for_run({}, None)
    for field in ("namespace", "container_config.env_from", "pod_spec_config.automount_service_account_token"):
        assert field in str(refused.value)


def test_an_empty_env_allowlist_drops_a_tags_env_and_keeps_the_deployments_secrets(k8s):
    tag = k8s.Context(run_k8s_config=k8s.job.UserDefinedDagsterK8sConfig.from_dict(PAID_ON))
    user_defined = charts_code_location_context(k8s).merge(tag)
    assert {"name": "SOCIALREC_ENABLE_PAID", "value": "true"} in container_env(user_defined)  # without the list

    validated = user_defined.validate_user_k8s_config_for_run(None, [])

    assert container_env(validated) == []
    assert "socialrec-env" in json.dumps(validated.run_k8s_config.container_config.get("env_from"))
