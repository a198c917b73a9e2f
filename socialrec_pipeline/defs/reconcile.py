"""`reconcile_job` (token axis): one run = one hour of the upstream's `last_transfer_at`.

Operators launch ranges as backfills from the UI; `reconcile_schedule` reconciles the previous
hour. Concurrent runs are capped by the run queue's limit on the tag `socialrec/job: reconcile`.
"""

import os
from datetime import datetime, timedelta, timezone

import dagster as dg

from socialrec_pipeline.defs.resources import (
    GeneratorsResource,
    MongoResource,
    RecordingSettingsResource,
    RedisResource,
    SolTrackerResource,
)
from socialrec_pipeline.defs.services import token_recorder
from socialrec_pipeline.defs.tags import JOB_FAMILY_TAG
from socialrec_pipeline.recording.reconcile import ReconcileService

#: The first reconcilable hour. Not a secret and it shapes the partition set, so it is read when
#: the code location loads (format `YYYY-MM-DD-HH:MM`, UTC).
RECONCILE_START = os.environ.get("SOCIALREC_RECONCILE_START", "2026-11-01-00:00")

reconcile_partitions = dg.HourlyPartitionsDefinition(start_date=RECONCILE_START, timezone="UTC")


class ReconcileConfig(dg.Config):
    #: The service stops between tokens after this long, so a run never outlives the next one.
    max_minutes: int = 50


@dg.op(retry_policy=dg.RetryPolicy(max_retries=2, delay=30, backoff=dg.Backoff.EXPONENTIAL))
def reconcile_window(
    context: dg.OpExecutionContext,
    config: ReconcileConfig,
    mongo: MongoResource,
    redis: RedisResource,
    soltracker: SolTrackerResource,
    recording: RecordingSettingsResource,
    generators: GeneratorsResource,
) -> dg.Output:
    """Record every qualifying token of the partition's window that has no marker yet."""
    window = context.partition_time_window
    recorder = token_recorder(mongo, redis, soltracker, recording, generators)
    service = ReconcileService(recorder.store, recorder.upstream, recorder)
    deadline = datetime.now(timezone.utc) + timedelta(minutes=config.max_minutes)
    result = service.run_window(
        window.start, window.end, soltracker.group_ids(), deadline, owner=f"reconcile-{context.run_id}"
    )
    summary = {
        "candidates": result.candidates,
        "present": result.present,
        "recorded": result.recorded,
        "skipped": result.skipped_locked,
        "failed": result.failed,
    }
    context.log.info("reconcile " + " ".join(f"{k}={v}" for k, v in summary.items()))
    return dg.Output(
        summary,
        metadata={
            **summary,
            "unknown": result.unknown,
            "below_threshold": result.below_threshold,
            "pages": result.pages,
            "stopped_by": result.stopped_by or "",
            "url_statuses": dg.MetadataValue.json(dict(result.url_statuses)),
        },
    )


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
    default_status=dg.DefaultScheduleStatus.RUNNING,
)
