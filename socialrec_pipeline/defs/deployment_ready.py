"""`deployment_ready`: the doctor's checks as an asset check on `recording_health`, in the UI.

It runs at start and every hour: `deployment_ready_sensor` (running by default, a tick every 5 minutes)
requests a run of `deployment_ready_job` when the check was never evaluated in this instance or not
for an hour, so the first tick after the daemon starts runs it on a new instance and an hour after
the last evaluation it runs again. The check's description is the
doctor's one-line verdict naming the first blocker ("down: soltracker — key refused, set
SOL_TRACKER_API_KEY to a valid key"); its metadata hold every row.

`recording_health_job` leaves it out (its selection subtracts this check): the doctor's calls stay
hourly while recording_health runs every 15 minutes and reads the latest evaluation for its verdict.

The check reads the deployment's configuration itself (`bound_resources_from_env()`, like the CLI) rather
than through Dagster resource parameters: a resource whose required variable is unset would stop
the check before it could say so.
"""

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import dagster as dg

from socialrec_pipeline.defs import doctor
from socialrec_pipeline.defs.resources import bound_resources_from_env
from socialrec_pipeline.defs.tags import JOB_FAMILY_TAG

CHECK_NAME = "deployment_ready"
ASSET = "recording_health"
JOB_NAME = "deployment_ready_job"
#: Between two evaluations, whoever ran it (this sensor, or a Materialize of the asset with its checks).
INTERVAL_S = 3600
DESCRIPTION = (
    "The deployment's dependencies checked for real (`socialrec doctor`): MongoDB, Redis, RabbitMQ, SolTracker, "
    "the platform keys, the Dagster daemon, sensor, schedules and paid pool, the SOCIALREC_* settings. Fails "
    "naming the first blocker; every row is in the metadata."
)
#: Each doctor check's limit inside the asset check: longer than the CLI's 10 s, because the check shares the
#: daemon's machine with the runs it watches, and a slow answer under load must not read as a broken key.
CHECK_TIMEOUT_S = 30.0


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
    resources_fn: Callable[[], Mapping[str, Any]] = bound_resources_from_env,
    definitions_fn: Callable[[], dg.Definitions] | None = None,
) -> dg.AssetChecksDefinition:
    """The check; tests pass `resources_fn` returning the stand-ins' resources."""

    @dg.asset_check(name=CHECK_NAME, asset=ASSET, blocking=False, description=DESCRIPTION)
    def deployment_ready(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        """The deployment's dependencies checked for real (`socialrec doctor`); fails naming the first blocker."""
        instance = context.instance
        ctx = doctor.DoctorContext(
            resources=resources_fn(), instance=lambda: instance, definitions=definitions_fn, timeout_s=CHECK_TIMEOUT_S
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


def due(last_evaluated: float | None, now: float, interval_s: float = INTERVAL_S) -> bool:
    """Never evaluated in this instance, or not for `interval_s`."""
    return last_evaluated is None or now - last_evaluated >= interval_s


@dg.sensor(
    name="deployment_ready_sensor",
    job=deployment_ready_job,
    # What it waits for is due once an hour (the first tick, at start, finds it due at once): a
    # tick every 5 minutes starts that run at most 5 minutes late and spares the idle daemon ticks.
    minimum_interval_seconds=300,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="At start and every hour: runs deployment_ready when it was never evaluated or not for an hour "
    "(at most one run per UTC hour: the run key is the hour).",
)
def deployment_ready_sensor(context: dg.SensorEvaluationContext) -> dg.RunRequest | dg.SkipReason:
    key = dg.AssetCheckKey(dg.AssetKey(ASSET), CHECK_NAME)
    record = context.instance.get_latest_asset_check_evaluation_record(key)
    last = record.create_timestamp if record is not None else None
    now = datetime.now(UTC)
    if not due(last, now.timestamp()):
        return dg.SkipReason(f"{CHECK_NAME} was evaluated less than {INTERVAL_S // 60} min ago")
    return dg.RunRequest(run_key=f"{CHECK_NAME}-{now:%Y-%m-%dT%H}")


def deployment_ready_defs() -> dg.Definitions:
    """The check, its job and its sensor; merged into the code location in definitions.py."""
    return dg.Definitions(
        asset_checks=[deployment_ready], jobs=[deployment_ready_job], sensors=[deployment_ready_sensor]
    )
