"""The proof of SPEC §10: walks the code location and fails when a launch-time field could reach a
resource or a gate, when a per-run field is not bounded, or when a launch path could run a job
without its executor, pool or family tag.

A new resource field, op config field, job or launch path that this module does not know fails
here first: add it to `defs/launch_gate.py` (with its environment variable or its bound).
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import yaml

from socialrec_pipeline.defs.definitions import defs
from socialrec_pipeline.defs.launch_gate import JOB_FAMILY, KNOBS, OP_FAMILY, RESOURCE_SETTINGS, TOKEN_INPUTS
from socialrec_pipeline.defs.paid_pool import PAID_POOL
from socialrec_pipeline.defs.reconcile import RECONCILE_POOL
from socialrec_pipeline.defs.resources import (
    GeneratorsResource,
    MongoResource,
    RabbitMQResource,
    RedisResource,
    SolTrackerResource,
)
from socialrec_pipeline.defs.run_coordinator import GatedRunCoordinator
from socialrec_pipeline.defs.tags import JOB_FAMILY_TAG
from socialrec_pipeline.recording.settings import ENV_NAMES

ROOT = Path(__file__).resolve().parents[2]
CLASSES: dict[str, type[dg.ConfigurableResource]] = {
    "mongo": MongoResource,
    "redis": RedisResource,
    "rabbitmq": RabbitMQResource,
    "soltracker": SolTrackerResource,
    "generators": GeneratorsResource,
}
ALL_JOBS = [*defs.resolve_all_job_defs()]


def field_paths(resource: type[dg.ConfigurableResource], prefix: str = "") -> set[str]:
    paths: set[str] = set()
    for name, info in resource.model_fields.items():
        kind = info.annotation
        if isinstance(kind, type) and issubclass(kind, dg.ConfigurableResource):
            paths |= field_paths(kind, f"{prefix}{name}.")
        else:
            paths.add(prefix + name)
    return paths


def test_every_resource_field_is_a_deployment_setting_with_its_variable():
    for key, resource in CLASSES.items():
        assert set(RESOURCE_SETTINGS[key]) == field_paths(resource), key
    assert RESOURCE_SETTINGS["recording"] == {field: name for name, field in ENV_NAMES.items()}
    variables = [v for paths in RESOURCE_SETTINGS.values() for v in paths.values()]
    assert len(variables) == len(set(variables))  # one variable, one field


def test_no_job_offers_a_resource_field_at_launch():
    for job in ALL_JOBS:
        resources = job.run_config_schema.config_type.fields["resources"].config_type.fields
        for key, field in resources.items():
            if key == "io_manager":
                continue
            assert key in RESOURCE_SETTINGS, (job.name, key)
            config = field.config_type.fields["config"]
            assert not config.is_required and not getattr(config.config_type, "fields", {}), (job.name, key)


def inner_ops(graph: dg.GraphDefinition):
    """(op, the top-level node it runs under) for every op, however deep in graphs."""
    for node_def in graph.node_defs:
        if isinstance(node_def, dg.GraphDefinition):
            yield from ((op, node_def) for op, _ in inner_ops(node_def))
        else:
            yield node_def, node_def


def config_fields(node_def) -> set[str]:
    return set(getattr(node_def.config_schema.config_type, "fields", None) or {}) if node_def.config_schema else set()


def test_every_op_config_field_is_a_bounded_knob_or_a_checked_token_input():
    seen = set()
    for job in ALL_JOBS:
        # A launch sets `ops.<node>.config` of the job's own nodes; a graph node (reconcile_window)
        # takes its config through a mapping, which feeds the ops inside it.
        for op in job.graph.node_defs:
            fields = config_fields(op)
            allowed = set(KNOBS.get(op.name, {})) | set(TOKEN_INPUTS.get(op.name, {}))
            assert fields == allowed or (not fields and not allowed), (job.name, op.name, fields ^ allowed)
            seen |= {op.name} if fields else set()
            if isinstance(op, dg.GraphDefinition):
                # Every op of a graph is covered: no config, or what the graph's mapping passes on.
                assert op.config_mapping is not None or not fields, (job.name, op.name)
                for inner, _top in inner_ops(op):
                    assert config_fields(inner) <= fields, (job.name, op.name, inner.name)
    assert seen == set(KNOBS) | set(TOKEN_INPUTS)  # nothing listed that no op takes


def test_every_launch_path_keeps_the_executor_and_the_family_tag():
    for job in ALL_JOBS:
        assert job.executor_def is dg.in_process_executor, job.name  # __ASSET_JOB: checks and Materialize
        if not job.name.startswith("__"):
            assert job.tags.get(JOB_FAMILY_TAG) == JOB_FAMILY[job.name], job.name
    assert set(JOB_FAMILY) == {job.name for job in ALL_JOBS if not job.name.startswith("__")}
    # An op's runs carry its family whichever job runs it (the coordinator adds the tag if missing).
    for job in ALL_JOBS:
        for op in job.graph.node_defs:
            if op.name in OP_FAMILY and not job.name.startswith("__"):
                assert job.tags[JOB_FAMILY_TAG] == OP_FAMILY[op.name], (job.name, op.name)


def test_the_reconcile_step_is_pooled_on_every_path():
    paths = set()
    for job in ALL_JOBS:
        pools = {op.name: op.pool for op, top in inner_ops(job.graph) if top.name == "reconcile_window"}
        if pools:  # the listing is capped by the reconcile pool, every paid call by the paid pool
            paths.add(job.name)
            assert pools == {
                "reconcile_free_pass": RECONCILE_POOL,
                "reconcile_paid_token": PAID_POOL,
                "reconcile_summary": None,
            }, job.name
    assert {"reconcile_job", "__ASSET_JOB"} <= paths
    for path in ("dagster.yaml", "deploy/dagster.yaml"):
        instance = yaml.safe_load((ROOT / path).read_text())
        assert instance["concurrency"]["pools"]["default_limit"] == 2
        limits = instance["concurrency"]["runs"]["tag_concurrency_limits"]
        assert {"key": JOB_FAMILY_TAG, "value": "reconcile", "limit": 2} in limits
        # A killed run worker's slots (its reconcile and paid_social_api steps') are freed by run monitoring.
        assert instance["run_monitoring"]["free_slots_after_run_end_seconds"] > 0
    helm = yaml.safe_load((ROOT / "deploy" / "helm-values.yaml").read_text())
    assert helm["dagsterDaemon"]["runMonitoring"]["freeSlotsAfterRunEndSeconds"] > 0


def test_every_instance_file_queues_runs_behind_the_gate():
    for path in ("dagster.yaml", "deploy/dagster.yaml"):
        coordinator = yaml.safe_load((ROOT / path).read_text())["run_coordinator"]
        assert (coordinator["module"], coordinator["class"]) == (
            GatedRunCoordinator.__module__,
            GatedRunCoordinator.__name__,
        ), path
    helm = yaml.safe_load((ROOT / "deploy" / "helm-values.yaml").read_text())
    custom = helm["dagsterDaemon"]["runCoordinator"]["config"]["customRunCoordinator"]
    assert (custom["module"], custom["class"]) == (GatedRunCoordinator.__module__, GatedRunCoordinator.__name__)
