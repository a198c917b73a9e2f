"""`metric_refresh_job` (SPEC §9): append metric points for recently linked objects, on a cadence."""

import hashlib
import re
from datetime import timedelta

import dagster as dg
from pydantic import Field

from socialrec_pipeline.defs.launch_gate import refuse_op_config
from socialrec_pipeline.defs.paid_pool import PAID_POOL
from socialrec_pipeline.defs.resources import GeneratorsResource, MongoResource, RecordingSettingsParam, RedisResource
from socialrec_pipeline.defs.services import (
    TRANSIENT_RETRY,
    credit_guard,
    credit_guard_metadata,
    token_recorder,
    transient_only,
    warn_stopped_credentials,
)
from socialrec_pipeline.defs.tags import JOB_FAMILY_TAG
from socialrec_pipeline.recording.metric_refresh import MetricRefreshResult, MetricRefreshService, PaidRefresh
from socialrec_pipeline.recording.paid import DeferPaidCalls, HeldPaidSlot
from socialrec_pipeline.recording.provider_stops import RedisProviderStops


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
    out={"result": dg.Out(dict), "free": dg.Out(MetricRefreshResult), "paid": dg.DynamicOut(PaidRefresh)},
    retry_policy=TRANSIENT_RETRY,
    description="Re-fetch the recently linked objects whose last metric point is oldest, within the budget, and "
    "append points (at most one per object per SOCIALREC_METRIC_MIN_INTERVAL_MINUTES, capped per object). "
    "A paid call is not made here: each goes to a refresh_paid_metric step, in the paid_social_api pool.",
)
def refresh_metrics(
    context: dg.OpExecutionContext,
    config: MetricRefreshConfig,
    mongo: MongoResource,
    redis: RedisResource,
    recording: RecordingSettingsParam,
    generators: GeneratorsResource,
):
    with transient_only(context):
        refuse_op_config("refresh_metrics", config.model_dump())  # the launch gate's bounds, in process too
        # The free pass: paid calls are deferred, each to a step of the paid_social_api pool.
        recorder = token_recorder(mongo, redis, None, recording, generators, paid_slots=DeferPaidCalls())
        result = MetricRefreshService(recorder.store, recorder).run(
            timedelta(hours=config.lookback_hours), config.budget, provider_stops=run_stops(context, recorder)
        )
        guard = credit_guard_metadata(context, recorder.credit_guard)
    summary, metadata = summarize(context, result, recorder.settings.metric_min_interval_minutes, guard)
    log_failures(context, result)
    yield dg.Output(summary, "result", metadata={**metadata, "deferred_paid": len(result.deferred)})
    yield dg.Output(result, "free")
    for paid in result.deferred:
        yield dg.DynamicOutput(paid, mapping_key=refresh_key(paid.url), output_name="paid")


@dg.op(
    pool=PAID_POOL,
    retry_policy=TRANSIENT_RETRY,
    description="One paid re-generation refresh_metrics deferred: the call, then the due points.",
)
def refresh_paid_metric(
    context: dg.OpExecutionContext,
    paid: PaidRefresh,
    mongo: MongoResource,
    redis: RedisResource,
    recording: RecordingSettingsParam,
    generators: GeneratorsResource,
) -> MetricRefreshResult:
    with transient_only(context):
        recorder = token_recorder(mongo, redis, None, recording, generators, paid_slots=HeldPaidSlot())
        result = MetricRefreshService(recorder.store, recorder).refresh_deferred(
            paid, provider_stops=run_stops(context, recorder)
        )
    context.log.info(f"{paid.url}: {result.points_appended} point(s) appended")
    log_failures(context, result)
    return result


@dg.op(
    retry_policy=TRANSIENT_RETRY,
    description="The run's totals: the free pass and every paid step (output metadata).",
)
def metric_refresh_summary(
    context: dg.OpExecutionContext,
    free: MetricRefreshResult,
    paid: list[MetricRefreshResult],
    redis: RedisResource,
    recording: RecordingSettingsParam,
    generators: GeneratorsResource,
) -> dg.Output:
    with transient_only(context):
        guard = credit_guard_metadata(context, credit_guard(redis.client(), generators))
        interval = recording.settings().metric_min_interval_minutes
    summary, metadata = summarize(context, free.merged(paid), interval, guard)
    return dg.Output(summary, metadata={**metadata, "paid_steps": len(paid)})


def run_stops(context: dg.OpExecutionContext, recorder) -> RedisProviderStops:
    """Credentials refused in this run, seen by its free pass and every paid step (retry and
    metric refresh)."""
    return RedisProviderStops(recorder.locks.redis, scope=f"run:{context.run_id}")


def refresh_key(url: str, scope: str = "") -> str:
    """A paid step's mapping key: the URL's readable part and a hash of `scope` and the URL (unique
    in the run: metric refresh fetches a URL once; retry passes the token as the scope)."""
    readable = re.sub(r"[^A-Za-z0-9]+", "_", url.split("://", 1)[-1]).strip("_")[:24].rstrip("_")
    return f"{readable or 'url'}_{hashlib.sha1(f'{scope} {url}'.encode()).hexdigest()[:6]}"


def log_failures(context: dg.OpExecutionContext, result: MetricRefreshResult) -> None:
    for url, reason in result.failures:
        context.log.warning(f"metric refresh of {url} failed: {reason}")
    if result.failed > len(result.failures):
        context.log.warning(f"... and {result.failed - len(result.failures)} more failure(s)")
    warn_stopped_credentials(context, result.stopped_credentials.values())


def result_metadata(result: MetricRefreshResult, min_interval_minutes: int) -> dict:
    return {
        "candidates": result.candidates,
        "urls_considered": result.urls_considered,
        "generator_calls": result.generator_calls,
        "points_appended": result.points_appended,
        "failed": result.failed,
        "metrics_latest_updated": result.metrics_latest_updated,
        "left_window": result.left_window,
        "budget_exhausted": result.budget_exhausted,
        "credit_exhausted": result.credit_exhausted,
        "min_interval_minutes": min_interval_minutes,
        "skipped": dg.MetadataValue.json(dict(result.skipped)),
    }


SUMMARY_KEYS = ("candidates", "urls_considered", "generator_calls", "points_appended", "failed")


def summarize(context: dg.OpExecutionContext, result: MetricRefreshResult, interval: int, guard: dict):
    """The op's output (the counts), its metadata, and the counts as one log line."""
    metadata = {**result_metadata(result, interval), **guard}
    summary = {k: metadata[k] for k in SUMMARY_KEYS}
    context.log.info("metric refresh " + " ".join(f"{k}={v}" for k, v in summary.items()))
    return summary, metadata


@dg.job(
    executor_def=dg.in_process_executor,
    tags={JOB_FAMILY_TAG: "metric_refresh"},
    description="Re-observe recently linked objects and append capped metric points, within a budget; "
    "paid calls in refresh_paid_metric steps (paid_social_api pool).",
)
def metric_refresh_job():
    _summary, free, paid = refresh_metrics()
    metric_refresh_summary(free, paid.map(refresh_paid_metric).collect())


metric_refresh_schedule = dg.ScheduleDefinition(
    name="metric_refresh_schedule",
    job=metric_refresh_job,
    cron_schedule="30 */6 * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Every 6 hours: one metric refresh run (one run at a time by tag limit).",
)
