"""`deployment_ready`: the doctor's checks as an asset check on `recording_health`, in the UI.

It runs at start and every hour: `deployment_ready_sensor` (running by default) requests one run
of `deployment_ready_job` per UTC hour, so the daemon's first tick after a start runs it right away
(unless it already ran this hour) and every new hour runs it again. The check's description is the
doctor's one-line verdict naming the first blocker ("down: soltracker — key refused, set
SOL_TRACKER_API_KEY to a valid key"); its metadata hold every row.

The check reads the deployment's configuration itself (`resources_from_env()`, like the CLI) rather
than through Dagster resource parameters: a resource whose required variable is unset would stop
the check before it could say so.
"""


from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import dagster as dg

from socialrec_pipeline.defs import doctor
from socialrec_pipeline.defs.resources import resources_from_env
from socialrec_pipeline.defs.tags import JOB_FAMILY_TAG

CHECK_NAME = "deployment_ready"
ASSET = "recording_health"
JOB_NAME = "deployment_ready_job"


def doctor_check_result(rows: list[doctor.Finding]) -> dg.AssetCheckResult:
    """The rows as an AssetCheckResult: failed on a `fail` row (ERROR), on a `warn` row (WARN)."""
    blocker = doctor.first_blocker(rows)
    severity = dg.AssetCheckSeverity.ERROR if doctor.exit_code(rows) else dg.AssetCheckSeverity.WARN
    metadata: dict[str, Any] = {
        "first_blocker": dg.MetadataValue.text(
            f"{blocker.check}: {blocker.finding}" + (f" → {blocker.action}" if blocker.action else "")
            if blocker
            else "none"
        ),
        **{f"{s}_checks": dg.MetadataValue.int(sum(r.status == s for r in rows)) for s in doctor.STATUSES},
        "checks": dg.MetadataValue.md(_markdown(rows)),
    }
    return dg.AssetCheckResult(
        check_name=CHECK_NAME,
        asset_key=ASSET,
        passed=blocker is None,
        severity=severity,
        description=doctor.headline(rows),
        metadata=metadata,
    )


def _markdown(rows: list[doctor.Finding]) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = ["| check | status | finding | what to do |", "| --- | --- | --- | --- |"]
    lines += [f"| {r.check} | {r.status} | {cell(r.finding)} | {cell(r.action)} |" for r in rows]
    return "\n".join(lines)


def build_deployment_ready(
    resources_fn: Callable[[], Mapping[str, Any]] = resources_from_env,
    definitions_fn: Callable[[], dg.Definitions] | None = None,
) -> dg.AssetChecksDefinition:
    """The check; tests pass `resources_fn` returning the stand-ins' resources."""

    @dg.asset_check(
        name=CHECK_NAME,
        asset=ASSET,
        blocking=False,
        description="The deployment's dependencies checked for real (`socialrec doctor`): MongoDB, Redis, "
        "RabbitMQ, SolTracker, the platform keys, the Dagster daemon, sensor, schedules and paid pool, the "
        "SOCIALREC_* settings. Fails naming the first blocker; every row is in the metadata.",
    )
    def deployment_ready(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        instance = context.instance
        ctx = doctor.DoctorContext(
            resources=resources_fn(), instance=lambda: instance, definitions=definitions_fn
        )
        rows = doctor.run_checks(ctx)
        context.log.info(doctor.headline(rows))
        return doctor_check_result(rows)

    return deployment_ready


deployment_ready = build_deployment_ready()

deployment_ready_job = dg.define_asset_job(
    JOB_NAME,
    selection=dg.AssetSelection.checks(deployment_ready),
    executor_def=dg.in_process_executor,
    tags={JOB_FAMILY_TAG: "health"},
    description="Run the deployment_ready check (the doctor's checks) on recording_health.",
)


@dg.sensor(
    name="deployment_ready_sensor",
    job=deployment_ready_job,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="At start and every hour: one deployment_ready run per UTC hour (the run key is the hour).",
)
def deployment_ready_sensor(context: dg.SensorEvaluationContext) -> dg.RunRequest:
    return dg.RunRequest(run_key=f"{CHECK_NAME}-{datetime.now(UTC):%Y-%m-%dT%H}")


def deployment_ready_defs() -> dg.Definitions:
    """The check, its job and its sensor; merged into the code location in definitions.py."""
    return dg.Definitions(
        asset_checks=[deployment_ready], jobs=[deployment_ready_job], sensors=[deployment_ready_sensor]
    )
