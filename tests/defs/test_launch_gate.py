"""SPEC §10: nothing typed at launch changes the deployment; per-run knobs are bounded.

The gate (`defs/launch_gate.py`) is tried here as plain Python for every job and every resource
field; the in-process path (no run queue) is tried with each job's own resources; the GraphQL path
is in tests/defs/test_launch_graphql.py.
"""

from __future__ import annotations

from datetime import UTC, datetime

import dagster as dg
import pytest

from socialrec_pipeline.defs.definitions import defs
from socialrec_pipeline.defs.launch_gate import (
    KNOBS,
    LAUNCHER_TAG_PREFIXES,
    RESOURCE_SETTINGS,
    LaunchCaps,
    LaunchRefused,
    launch_refusals,
)
from socialrec_pipeline.defs.retry import SCHEDULED_STATUSES, retry_schedule
from socialrec_pipeline.defs.tags import JOB_FAMILY_TAG
from socialrec_pipeline.defs.token_flow import run_request
from socialrec_pipeline.stream.intake import Launch

JOBS = [job.name for job in defs.resolve_all_job_defs() if not job.name.startswith("__")]
FIELDS = [(key, path, variable) for key, paths in RESOURCE_SETTINGS.items() for path, variable in paths.items()]
ADDRESS = "So11111111111111111111111111111111111111112"


def nested(path: str, value: object) -> dict:
    out: object = value
    for part in reversed(path.split(".")):
        out = {part: out}
    assert isinstance(out, dict)
    return out


@pytest.mark.parametrize("job", JOBS)
@pytest.mark.parametrize(("key", "path", "variable"), FIELDS, ids=[f"{k}.{p}" for k, p, _ in FIELDS])
def test_every_resource_field_is_refused_at_launch_naming_its_variable(job, key, path, variable):
    for value in ("http://attacker.example", {"env": "SOL_TRACKER_API_KEY"}, True, 1):
        refusals = launch_refusals({"resources": {key: {"config": nested(path, value)}}}, job_name=job)
        assert len(refusals) == 1, refusals
        assert f"resources.{key}.config.{path}" in refusals[0]
        assert f"set {variable} in the deployment's environment" in refusals[0]


def test_a_resource_that_is_not_ours_is_refused_too():
    (refusal,) = launch_refusals({"resources": {"io_manager": {"config": {"base_dir": "/tmp/x"}}}})
    assert "resources.io_manager.config" in refusal and "not per run" in refusal


def test_an_empty_resource_section_is_not_a_setting():
    assert launch_refusals({"resources": {"mongo": {"config": {}}, "redis": {}, "recording": {"config": None}}}) == []


KNOB_CASES = [(op, field, knob) for op, knobs in KNOBS.items() for field, knob in knobs.items()]


@pytest.mark.parametrize(("op", "field", "knob"), KNOB_CASES, ids=[f"{o}.{f}" for o, f, _ in KNOB_CASES])
def test_per_run_knobs_are_bounded_by_one_and_the_deployment_cap(op, field, knob):
    caps = LaunchCaps.from_env({})
    cap = knob.cap_default

    def refused(value):
        return launch_refusals({"ops": {op: {"config": {field: value}}}}, caps=caps)

    for bad in (0, -5, cap + 1, 10**12, "7", 2.5, True):
        (message,) = refused(bad)
        assert f"ops.{op}.config.{field}" in message
        assert f"from 1 to {cap}" in message and knob.cap_variable in message
    assert refused(1) == [] and refused(cap) == []
    assert (refused(None) == []) is knob.nullable

    lowered = LaunchCaps.from_env({knob.cap_variable: "3"})
    (message,) = launch_refusals({"ops": {op: {"config": {field: 4}}}}, caps=lowered)
    assert "from 1 to 3" in message
    malformed = LaunchCaps.from_env({knob.cap_variable: "x"})
    (message,) = launch_refusals({"ops": {op: {"config": {field: 1}}}}, caps=malformed)
    assert knob.cap_variable in message  # a malformed cap refuses the knob, it never lifts the bound
    assert launch_refusals({"ops": {op: {"config": {}}}}, caps=malformed) == []  # other launches go on


def test_a_field_that_is_no_knob_is_refused():
    (message,) = launch_refusals({"ops": {"retry_urls": {"config": {"enable_paid": True}}}})
    assert "ops.retry_urls.config.enable_paid" in message and "per-run settings here: limit" in message
    (message,) = launch_refusals({"ops": {"prepare": {"config": {"token_address": "not a mint"}}}})
    assert "base58" in message


@pytest.mark.parametrize("prefix", sorted(LAUNCHER_TAG_PREFIXES))
def test_launcher_tags_are_refused(prefix):
    key = prefix + ("config" if prefix.endswith("/") else "")
    (message,) = launch_refusals({}, {key: '{"container_config": {"env": [{"name": "SOCIALREC_ENABLE_PAID"}]}}'})
    assert f"run tag {key}" in message and "cannot be set at launch" in message


def test_the_job_family_tag_cannot_be_changed():
    (message,) = launch_refusals({}, {JOB_FAMILY_TAG: "other"}, job_name="reconcile_job")
    assert "reconcile limits" in message
    (message,) = launch_refusals(
        {}, {JOB_FAMILY_TAG: "other"}, job_name="__ASSET_JOB", asset_names=["reconciled_hours"]
    )
    assert "reconcile limits" in message
    assert launch_refusals({}, {JOB_FAMILY_TAG: "reconcile"}, job_name="reconcile_job") == []


def test_what_our_own_schedules_and_sensor_launch_passes_the_gate():
    schedule_context = dg.build_schedule_context(scheduled_execution_time=datetime(2026, 12, 1, 10, 15, tzinfo=UTC))
    requests = list(retry_schedule(schedule_context))
    assert [r.partition_key for r in requests] == SCHEDULED_STATUSES
    for request in requests:
        assert launch_refusals(request.run_config, request.tags, job_name="retry_job") == []
    stream = run_request(Launch(ADDRESS, "e1", 0, "SYM", datetime(2026, 12, 1, tzinfo=UTC)), sandbox=False)
    assert launch_refusals(stream.run_config, stream.tags, job_name="record_token_job") == []
    naive = run_request(Launch(ADDRESS, "e1", 0, None, datetime(2026, 12, 1)), sandbox=True)
    assert launch_refusals(naive.run_config, naive.tags, job_name="record_token_job") == []


# -- in process (no run queue): the resources and the ops refuse the same way ----------------------

LAUNCH = {
    "record_token_job": {"ops": {"prepare": {"config": {"token_address": ADDRESS}}}},
    "wallets_backfill_job": {},
}
PARTITION = {"reconcile_job": None, "retry_job": "error"}


def in_process(job_name: str, run_config: dict):
    job = defs.resolve_job_def(job_name)
    partition = PARTITION.get(job_name, "")
    if partition is None:
        partition = job.partitions_def.get_partition_keys()[0]
    # Disposed here: an instance left to the garbage collector closes its SQLite connections from
    # whichever thread collects it, and SQLAlchemy prints a traceback for each.
    with dg.DagsterInstance.ephemeral() as instance:
        return job.execute_in_process(run_config=run_config, instance=instance, partition_key=partition or None)


@pytest.fixture
def deployment_env(monkeypatch):
    """Endpoints no step may reach: a refused launch never connects anywhere."""
    monkeypatch.setenv("MONGODB_URI", "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=200")
    monkeypatch.setenv("SOL_TRACKER_BASE_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("SOL_TRACKER_API_KEY", "k")


RESOURCE_CASES = [
    (job, key)
    for job in JOBS
    for key in sorted(defs.resolve_job_def(job).required_resource_keys & set(RESOURCE_SETTINGS))
]


@pytest.mark.parametrize(("job", "key"), RESOURCE_CASES, ids=[f"{j}-{k}" for j, k in RESOURCE_CASES])
def test_in_process_the_resource_itself_refuses_launch_time_config(job, key, deployment_env):
    path, variable = next(iter(RESOURCE_SETTINGS[key].items()))
    run_config = {**LAUNCH.get(job, {}), "resources": {key: {"config": nested(path, "http://attacker.example")}}}
    with pytest.raises(dg.DagsterResourceFunctionError) as refused:
        in_process(job, run_config)
    assert isinstance(refused.value.__cause__, LaunchRefused)
    assert variable in str(refused.value.__cause__)


@pytest.mark.parametrize(("op", "field", "knob"), KNOB_CASES, ids=[f"{o}.{f}" for o, f, _ in KNOB_CASES])
def test_in_process_an_out_of_bounds_knob_fails_the_step_before_any_work(op, field, knob, deployment_env):
    job = next(j for j in JOBS if op in {n.name for n in defs.resolve_job_def(j).graph.node_defs})
    with pytest.raises(dg.Failure) as failed:
        in_process(job, {"ops": {op: {"config": {field: -5}}}})
    assert "out of bounds" in str(failed.value.description) and knob.cap_variable in str(failed.value.description)
