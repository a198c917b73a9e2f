"""`reconcile_job` (token axis): one run = one hour of the upstream's `last_transfer_at`.

Operators launch ranges as backfills from the UI; `reconcile_schedule` reconciles the previous
hour. Concurrent runs are capped by the run queue's limit on the tag `socialrec/job: reconcile`.
"""

import os
from datetime import datetime, timedelta, timezone

import dagster as dg
from pydantic import Field

from socialrec_pipeline.defs.resources import (
    GeneratorsResource,
    MongoResource,
    RecordingSettingsParam,
    RedisResource,
    SolTrackerResource,
)
from socialrec_pipeline.defs.paid_pool import PoolPaidSlots
from socialrec_pipeline.defs.services import credit_guard_metadata, status_counts, token_recorder, transient_only
from socialrec_pipeline.defs.tags import JOB_FAMILY_TAG
from socialrec_pipeline.recording.reconcile import ReconcileService
from socialrec_pipeline.recording.soltracker import UpstreamError

#: The first reconcilable hour. Not a secret and it shapes the partition set, so it is read when
#: the code location loads (format `YYYY-MM-DD-HH:MM`, UTC).
RECONCILE_START = os.environ.get("SOCIALREC_RECONCILE_START", "2026-11-01-00:00")

reconcile_partitions = dg.HourlyPartitionsDefinition(start_date=RECONCILE_START, timezone="UTC")


class ReconcileConfig(dg.Config):
    #: The service stops between tokens after this long, so a run never outlives the next one.
    max_minutes: int = Field(
        default=50,
        description="Stop between tokens after this many minutes; an unfinished window fails the run "
        "(launch the partition again to finish it).",
    )


@dg.op(retry_policy=dg.RetryPolicy(max_retries=2, delay=30, backoff=dg.Backoff.EXPONENTIAL))
def reconcile_window(
    context: dg.OpExecutionContext,
    config: ReconcileConfig,
    mongo: MongoResource,
    redis: RedisResource,
    soltracker: SolTrackerResource,
    recording: RecordingSettingsParam,
    generators: GeneratorsResource,
) -> dg.Output:
    """Record every qualifying token of the partition's hour that has no marker yet.

    Green when the window converged. Red (after the summary is logged) when a token failed or the
    deadline stopped the window: launch the partition again; recorded tokens drop out.
    """
    window = context.partition_time_window
    with transient_only():  # a malformed setting or a bug fails at once instead of after retries
        # Paid calls claim a slot of the paid_social_api pool one call at a time.
        recorder = token_recorder(mongo, redis, soltracker, recording, generators, paid_slots=PoolPaidSlots(context))
        service = ReconcileService(recorder.store, recorder.upstream, recorder)
        deadline = datetime.now(timezone.utc) + timedelta(minutes=config.max_minutes)
        try:
            result = service.run_window(
                window.start, window.end, soltracker.group_ids(), deadline, owner=f"reconcile-{context.run_id}"
            )
        except UpstreamError as exc:
            message = (
                f"SolTracker listing of {window.start:%Y-%m-%d %H:%M}-{window.end:%H:%M} UTC failed "
                f"({type(exc).__name__}: {exc}). Tokens recorded before it stay recorded. Check SolTracker "
                "(SOL_TRACKER_BASE_URL / SOL_TRACKER_API_KEY); the step retries, then launch this partition again."
            )
            context.log.error(message)
            raise dg.Failure(description=message) from exc
    summary = {
        "candidates": result.candidates,
        "present": result.present,
        "recorded": result.recorded,
        "skipped": result.skipped_locked,
        "failed": result.failed,
    }
    metadata = {
        **summary,
        "unknown": result.unknown,
        "below_threshold": result.below_threshold,
        "pages": result.pages,
        "stopped_by": result.stopped_by or "window finished",
        **status_counts(result.url_statuses),
        **credit_guard_metadata(context, recorder.credit_guard),
    }
    context.log.info(f"reconcile {window.start:%Y-%m-%d %H:%M}-{window.end:%H:%M} UTC " + " ".join(f"{k}={v}" for k, v in summary.items()))
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
        context.log.info(f"{result.skipped_locked} token(s) were being recorded by another run (locked) and were left to it")
    return dg.Output(summary, metadata=metadata)


@dg.job(
    partitions_def=reconcile_partitions,
    executor_def=dg.in_process_executor,
    tags={JOB_FAMILY_TAG: "reconcile"},
    description="Record the tokens of one upstream last_transfer_at hour that the stream missed.",
)
def reconcile_job():
    reconcile_window()


reconcile_schedule = dg.build_schedule_from_partitioned_job(
    reconcile_job,
    name="reconcile_schedule",
    minute_of_hour=5,  # the previous hour, a few minutes after it closed
    description="Every hour at :05 UTC: reconcile the hour that just closed (one reconcile_job partition).",
    default_status=dg.DefaultScheduleStatus.RUNNING,
)
