"""`metric_refresh_job` (SPEC §9): append metric points for recently linked objects, on a cadence."""

from datetime import timedelta

import dagster as dg
from pydantic import Field

from socialrec_pipeline.defs.launch_gate import refuse_op_config
from socialrec_pipeline.defs.paid_pool import PoolPaidSlots
from socialrec_pipeline.defs.resources import GeneratorsResource, MongoResource, RecordingSettingsParam, RedisResource
from socialrec_pipeline.defs.services import (
    TRANSIENT_RETRY,
    credit_guard_metadata,
    token_recorder,
    transient_only,
    warn_stopped_credentials,
)
from socialrec_pipeline.defs.tags import JOB_FAMILY_TAG
from socialrec_pipeline.recording.metric_refresh import MetricRefreshService


class MetricRefreshConfig(dg.Config):
    lookback_hours: int = Field(default=72, description="Re-observe objects linked within this many hours "
        "(1 to SOCIALREC_CAP_METRIC_LOOKBACK_HOURS, default 720).",
    )
    budget: int = Field(
        default=200,
        description="Generator calls per run (the cost bound; 1 to SOCIALREC_CAP_METRIC_BUDGET, default 2000); "
        "paid platforms are skipped while paid is off.",
    )


#: Safe to repeat: a point added before the fault makes its object not due (minimum interval).
@dg.op(
    retry_policy=TRANSIENT_RETRY,
    description="Re-fetch the recently linked objects whose last metric point is oldest, within the budget, and "
    "append points (at most one per object per SOCIALREC_METRIC_MIN_INTERVAL_MINUTES, capped per object).",
)
def refresh_metrics(
    context: dg.OpExecutionContext,
    config: MetricRefreshConfig,
    mongo: MongoResource,
    redis: RedisResource,
    recording: RecordingSettingsParam,
    generators: GeneratorsResource,
) -> dg.Output:
    with transient_only(context):
        refuse_op_config("refresh_metrics", config.model_dump())  # the launch gate's bounds, in process too
        # Paid calls claim a slot of the paid_social_api pool one at a time (like every job's).
        recorder = token_recorder(mongo, redis, None, recording, generators, paid_slots=PoolPaidSlots(context))
        result = MetricRefreshService(recorder.store, recorder).run(
            timedelta(hours=config.lookback_hours), config.budget
        )
        guard = credit_guard_metadata(context, recorder.credit_guard)
    summary = {
        "candidates": result.candidates,
        "urls_considered": result.urls_considered,
        "generator_calls": result.generator_calls,
        "points_appended": result.points_appended,
        "failed": result.failed,
    }
    context.log.info("metric refresh " + " ".join(f"{k}={v}" for k, v in summary.items()))
    for url, reason in result.failures:
        context.log.warning(f"metric refresh of {url} failed: {reason}")
    if result.failed > len(result.failures):
        context.log.warning(f"... and {result.failed - len(result.failures)} more failure(s)")
    warn_stopped_credentials(context, result.stopped_credentials.values())
    return dg.Output(
        summary,
        metadata={
            **summary,
            "metrics_latest_updated": result.metrics_latest_updated,
            "left_window": result.left_window,
            "budget_exhausted": result.budget_exhausted,
            "credit_exhausted": result.credit_exhausted,
            "min_interval_minutes": recorder.settings.metric_min_interval_minutes,
            "skipped": dg.MetadataValue.json(dict(result.skipped)),
            **guard,
        },
    )


@dg.job(
    executor_def=dg.in_process_executor,
    tags={JOB_FAMILY_TAG: "metric_refresh"},
    description="Re-observe recently linked objects and append capped metric points, within a budget.",
)
def metric_refresh_job():
    refresh_metrics()


metric_refresh_schedule = dg.ScheduleDefinition(
    name="metric_refresh_schedule",
    job=metric_refresh_job,
    cron_schedule="30 */6 * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Every 6 hours: one metric refresh run (one run at a time by tag limit).",
)
