"""Launcher tags carry no settings (SPEC §10), checked offline with each launcher library's own code.

dagster-k8s builds a run pod's container from the deployment's `run_k8s_config` merged with the
run's `dagster-k8s/config` tag; dagster-celery picks the run's Celery queue from its
`dagster-celery/queue` tag. The launch gate refuses those tags before a run is queued, so the
launcher only ever sees the deployment's settings.
"""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster_celery import tags as celery_tags
from dagster_k8s import job as k8s_job
from dagster_k8s.container_context import K8sContainerContext

from socialrec_pipeline.defs.launch_gate import launch_refusals

ROOT = Path(__file__).resolve().parents[2]
PAID_ON = {"container_config": {"env": [{"name": "SOCIALREC_ENABLE_PAID", "value": "true"}]}}


def run_with(tags: dict[str, str]) -> dg.DagsterRun:
    return dg.DagsterRun(job_name="retry_job", run_id="r-1", tags=tags)


def container_env(context: K8sContainerContext) -> list:
    return list((context.run_k8s_config.container_config or {}).get("env", []))


def test_a_k8s_config_tag_would_reach_the_run_pod_and_is_refused_at_launch():
    run = run_with({k8s_job.USER_DEFINED_K8S_CONFIG_KEY: json.dumps(PAID_ON)})
    # What the launcher would build from the tag (the hazard: the paid gate opened from the Launchpad).
    context = K8sContainerContext.create_for_run(run, None, include_run_tags=True)
    assert {"name": "SOCIALREC_ENABLE_PAID", "value": "true"} in container_env(context)
    # dagster-k8s's own allowlist, set to nothing, refuses it as well.
    with pytest.raises(Exception, match="env"):
        context.validate_user_k8s_config_for_run({}, [])
    (refusal,) = launch_refusals({}, run.tags, job_name=run.job_name)
    assert f"run tag {k8s_job.USER_DEFINED_K8S_CONFIG_KEY}" in refusal and "helm-values.yaml" in refusal


def test_every_k8s_tag_dagster_k8s_reads_is_refused():
    for key in (k8s_job.USER_DEFINED_K8S_CONFIG_KEY, k8s_job.K8S_RESOURCE_REQUIREMENTS_KEY):
        assert launch_refusals({}, {key: "{}"}), key


def test_a_run_that_passes_the_gate_gets_only_the_deployments_container():
    helm = yaml.safe_load((ROOT / "deploy" / "helm-values.yaml").read_text())
    launcher = helm["runLauncher"]["config"]["k8sRunLauncher"]
    deployment = K8sContainerContext(
        env_secrets=[s["name"] for s in launcher["envSecrets"]],
        run_k8s_config=k8s_job.UserDefinedDagsterK8sConfig.from_dict(
            {"container_config": launcher["runK8sConfig"]["containerConfig"]}
        ),
    )
    run = run_with({"socialrec/job": "retry", "dagster/partition": "error"})
    assert launch_refusals({}, run.tags, job_name=run.job_name) == []
    context = deployment.merge(K8sContainerContext.create_for_run(run, None, include_run_tags=True))
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
