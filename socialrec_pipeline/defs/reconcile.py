"""`reconcile_job` (token axis): one run = one hour of the upstream's `last_transfer_at`.

Operators launch ranges as backfills from the UI; `reconcile_schedule` reconciles the previous
hour. Concurrent runs are capped by the run queue's limit on the tag `socialrec/job: reconcile`.
"""

import os
from datetime import UTC, datetime, timedelta

import dagster as dg
from pydantic import Field

from socialrec_pipeline.defs.assets import OPS_GROUP, OWNERS
from socialrec_pipeline.defs.launch_gate import refuse_op_config
from socialrec_pipeline.defs.paid_pool import PoolPaidSlots
from socialrec_pipeline.defs.resources import (
    GeneratorsResource,
    MongoResource,
    RecordingSettingsParam,
    RedisResource,
    SolTrackerResource,
)
from socialrec_pipeline.defs.services import (
    credit_guard_metadata,
    status_counts,
    token_recorder,
    transient_only,
    warn_stopped_credentials,
)
from socialrec_pipeline.defs.tags import JOB_FAMILY_TAG
from socialrec_pipeline.recording.reconcile import ReconcileService
from socialrec_pipeline.recording.settings import SettingError
from socialrec_pipeline.recording.soltracker import UpstreamError, UpstreamUnavailable

#: The op pool of the reconcile step: its limit (`concurrency.pools.default_limit`, 2) caps reconcile
#: hours running at once whichever way they are launched (reconcile_job, its schedule, a backfill of the
#: job, or Materialize / a backfill on the reconciled_hours asset, which runs another job).
RECONCILE_POOL = "reconcile"

START_VARIABLE = "SOCIALREC_RECONCILE_START"
START_FORMAT = "%Y-%m-%d-%H:%M"


def reconcile_start(environ=os.environ, now: datetime | None = None) -> str:
    """The first hourly partition of reconcile_job / reconciled_hours (UTC, `YYYY-MM-DD-HH:MM`).

    A deliberate setting: the hours before it are not shown and the schedule covers every hour
    from it on. Set it to the hour the deployment started consuming token.flow (older hours: lower
    it and launch a backfill, on purpose). Unset, it is 00:00 UTC of the day the process loaded
    the code: a trial never shows hundreds of hours nothing will fill (`scripts/run.sh` pins the
    hour before an instance's first start instead, so it does not move between restarts).
    Read when the code location loads: it shapes the partition set, and it is not a secret.
    """
    raw = (environ.get(START_VARIABLE) or "").strip()
    if not raw:
        today = (now or datetime.now(UTC)).replace(hour=0, minute=0, second=0, microsecond=0)
        return today.strftime(START_FORMAT)
    try:
        parsed = datetime.strptime(raw, START_FORMAT)
    except ValueError:
        raise SettingError(
            f"{START_VARIABLE}={raw!r} is not an hour in the form YYYY-MM-DD-HH:MM (UTC), e.g. 2026-12-01-00:00. "
            "It is the first hour reconcile_job covers; fix or unset it and reload the code location."
        ) from None
    if parsed.minute:
        raise SettingError(f"{START_VARIABLE}={raw!r} must be a whole hour (minutes 00): partitions are hours.")
    return parsed.strftime(START_FORMAT)


RECONCILE_START = reconcile_start()

reconcile_partitions = dg.HourlyPartitionsDefinition(start_date=RECONCILE_START, timezone="UTC")


class ReconcileConfig(dg.Config):
    max_minutes: int = Field(
        default=50,
        description="Stop between tokens after this many minutes, 1 to SOCIALREC_CAP_RECONCILE_MINUTES (default 55: "
        "a run never outlives the next hourly one); "
        "an unfinished window fails the run "
        "(launch the partition again to finish it).",
    )


#: What one unit of `max_minutes` is (tests shrink it to stop a window at its deadline at once;
#: `max_minutes` itself is 1 or more, SPEC §10).
DEADLINE_MINUTE = timedelta(minutes=1)

#: Transient faults (upstream, Mongo, Redis) are retried twice after 30 s / 60 s.
RECONCILE_RETRY = dg.RetryPolicy(max_retries=2, delay=30, backoff=dg.Backoff.EXPONENTIAL)

RECONCILED_HOURS = dg.AssetSpec(
    "reconciled_hours",
    description="Reconcile coverage: one partition per hour of the upstream's last_transfer_at. Materialized "
    "(with the window's candidates / present / recorded / skipped / failed) when reconcile_job finished the "
    "hour; failed when a token failed or the deadline cut the window; missing when it never ran. Launch a "
    "backfill of missing or failed hours from this asset's partition bar.",
    owners=OWNERS,
    group_name=OPS_GROUP,
    kinds={"mongodb"},
)


def reconcile_window_body(
    context: dg.AssetExecutionContext,
    config: "ReconcileConfig",
    mongo: MongoResource,
    redis: RedisResource,
    soltracker: SolTrackerResource,
    recording: RecordingSettingsParam,
    generators: GeneratorsResource,
) -> dg.MaterializeResult:
    """Record every qualifying token of the partition's hour that has no marker yet.

    Green when the window converged. Red (after the summary is logged) when a token failed or the
    deadline stopped the window: launch the partition again; recorded tokens drop out.
    """
    window = context.partition_time_window
    step = context.op_execution_context  # the helpers shared with the ops take the op context
    with transient_only(step):  # a malformed setting or a bug fails at once instead of after retries
        refuse_op_config("reconcile_window", config.model_dump())  # the launch gate's bounds, in process too
        # Paid calls claim a slot of the paid_social_api pool one call at a time.
        recorder = token_recorder(mongo, redis, soltracker, recording, generators, paid_slots=PoolPaidSlots(step))
        service = ReconcileService(recorder.store, recorder.upstream, recorder)
        deadline = datetime.now(UTC) + config.max_minutes * DEADLINE_MINUTE
        try:
            result = service.run_window(
                window.start, window.end, soltracker.group_ids(), deadline, owner=f"reconcile-{context.run.run_id}"
            )
        except UpstreamError as exc:
            transient = isinstance(exc, UpstreamUnavailable)
            message = (
                f"SolTracker listing of {window.start:%Y-%m-%d %H:%M}-{window.end:%H:%M} UTC failed "
                f"({type(exc).__name__}: {exc}). Tokens recorded before it stay recorded. Check SolTracker "
                "(SOL_TRACKER_BASE_URL / SOL_TRACKER_API_KEY); "
                + (
                    "the step retries, then launch this partition again."
                    if transient
                    else "not retried (a refused key or an answer outside the contract does not change by asking again "
                    "at once): fix it, then launch this partition again."
                )
            )
            context.log.error(message)
            raise dg.Failure(description=message, allow_retries=transient) from exc
    summary = {
        "candidates": result.candidates,
        "present": result.present,
        "recorded": result.recorded,
        "skipped": result.skipped_locked,
        "failed": result.failed,
    }
    metadata: dict[str, int | str] = {
        **summary,
        "unknown": result.unknown,
        "below_threshold": result.below_threshold,
        "pages": result.pages,
        "stopped_by": result.stopped_by or "window finished",
        **status_counts(result.url_statuses),
        **credit_guard_metadata(step, recorder.credit_guard),
    }
    context.log.info(
        f"reconcile {window.start:%Y-%m-%d %H:%M}-{window.end:%H:%M} UTC "
        + " ".join(f"{k}={v}" for k, v in summary.items())
    )
    warn_stopped_credentials(step, result.stopped_credentials.values())
    problems = []
    if result.failed:
        problems.append(f"{result.failed} token(s) failed to record (their errors are in this run's logs)")
    if result.stopped_by:
        problems.append(f"the window was not finished (stopped by the {config.max_minutes}-minute {result.stopped_by})")
    if problems:
        # Red, so the partition shows as failed in the UI; a new run of it picks up exactly what is missing.
        raise dg.Failure(
            description="; ".join(problems) + ". Launch this partition again: tokens recorded meanwhile drop out.",
            metadata=metadata,
            allow_retries=False,
        )
    if result.skipped_locked:
        context.log.info(
            f"{result.skipped_locked} token(s) were being recorded by another run (locked) and were left to it"
        )
    return dg.MaterializeResult(metadata=metadata)


def reconcile_asset(retry_policy: dg.RetryPolicy | None = RECONCILE_RETRY) -> dg.AssetsDefinition:
    """The step of reconcile_job (op `reconcile_window`), materializing one hour of reconciled_hours."""

    @dg.multi_asset(
        name="reconcile_window",
        specs=[RECONCILED_HOURS],
        partitions_def=reconcile_partitions,
        retry_policy=retry_policy,
        pool=RECONCILE_POOL,
        description="Record every qualifying token of the partition's hour that has no marker yet.",
    )
    def reconcile_window(
        context: dg.AssetExecutionContext,
        config: ReconcileConfig,
        mongo: MongoResource,
        redis: RedisResource,
        soltracker: SolTrackerResource,
        recording: RecordingSettingsParam,
        generators: GeneratorsResource,
    ) -> dg.MaterializeResult:
        return reconcile_window_body(context, config, mongo, redis, soltracker, recording, generators)

    return reconcile_window


reconcile_window = reconcile_asset()


reconcile_job = dg.define_asset_job(
    "reconcile_job",
    selection=dg.AssetSelection.assets(RECONCILED_HOURS.key),
    executor_def=dg.in_process_executor,
    tags={JOB_FAMILY_TAG: "reconcile"},
    description="Record the tokens of one upstream last_transfer_at hour that the stream missed; each run "
    "materializes (or fails) that hour of the reconciled_hours asset.",
)


reconcile_schedule = dg.build_schedule_from_partitioned_job(
    reconcile_job,
    name="reconcile_schedule",
    minute_of_hour=5,  # the previous hour, a few minutes after it closed
    description="Every hour at :05 UTC: reconcile the hour that just closed (one reconcile_job partition).",
    default_status=dg.DefaultScheduleStatus.RUNNING,
)
