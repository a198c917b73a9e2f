"""`retry_job` (URL axis): one run = one status. The hourly schedule retries the retryable three;
`invalid` and `exhausted` are launched only by an operator (runbook), from the UI."""

import logging

import dagster as dg
from pydantic import Field

from socialrec_pipeline.defs.launch_gate import refuse_op_config
from socialrec_pipeline.defs.metric_refresh import refresh_key, run_stops
from socialrec_pipeline.defs.paid_pool import PAID_POOL
from socialrec_pipeline.defs.resources import GeneratorsResource, MongoResource, RecordingSettingsParam, RedisResource
from socialrec_pipeline.defs.services import (
    TRANSIENT_RETRY,
    credit_guard,
    credit_guard_metadata,
    status_counts,
    token_recorder,
    token_tagger,
    transient_only,
    warn_stopped_credentials,
)
from socialrec_pipeline.defs.tags import JOB_FAMILY_TAG
from socialrec_pipeline.domain.enums import RETRY_PARTITIONS, RETRYABLE, FetchStatus
from socialrec_pipeline.recording.paid import DeferPaidCalls, HeldPaidSlot
from socialrec_pipeline.recording.retry import RetryResult, RetryService

retry_partitions = dg.StaticPartitionsDefinition([status.value for status in RETRY_PARTITIONS])

#: What the schedule launches, in partition order.
SCHEDULED_STATUSES = [status.value for status in RETRY_PARTITIONS if status in RETRYABLE]


class RetryConfig(dg.Config):
    limit: int | None = Field(
        default=None,
        description="URLs to retry in this run, 1 to SOCIALREC_CAP_RETRY_LIMIT (default 1000); "
        "null = SOCIALREC_RETRY_LIMIT (default 50).",
    )


#: A retry is safe to repeat: finished URLs have a fresh `attempted_at` and drop out of the selection.
@dg.op(
    out={"result": dg.Out(dict), "free": dg.Out(tuple), "paid": dg.DynamicOut(tuple)},
    retry_policy=TRANSIENT_RETRY,
)
def retry_urls(
    context: dg.OpExecutionContext,
    config: RetryConfig,
    mongo: MongoResource,
    redis: RedisResource,
    recording: RecordingSettingsParam,
    generators: GeneratorsResource,
):
    """Re-route, gate, regenerate and rewrite the due URLs of the partition's status; a paid call
    goes to a retry_paid_url step (paid_social_api pool)."""
    status = context.partition_key
    with transient_only(context):
        refuse_op_config("retry_urls", config.model_dump())  # the launch gate's bounds, in process too
        # Retry never asks upstream; paid calls are deferred to steps of the paid_social_api pool
        # and stop at the deployment-wide credit guard.
        recorder = token_recorder(mongo, redis, None, recording, generators, paid_slots=DeferPaidCalls())
        result = RetryService(recorder.store, recorder).run(
            [status], config.limit, owner=retry_owner(context), on_token=token_tagger(context),
            provider_stops=run_stops(context, recorder),
        )
        settings = recorder.settings
        guard = credit_guard_metadata(context, recorder.credit_guard)
    limit = config.limit if config.limit is not None else settings.retry_limit
    # With paid steps to come, what was "not due" or "stopped" is said by retry_summary, for the run.
    yield retry_output(context, status, result, settings, limit, guard, hints=not result.deferred, output_name="result")
    yield dg.Output((result, limit), "free")
    for address, url in result.deferred:  # one URL may be due in several tokens: the key holds both
        yield dg.DynamicOutput((address, url), mapping_key=refresh_key(url, address), output_name="paid")


@dg.op(pool=PAID_POOL, retry_policy=TRANSIENT_RETRY, description="One paid retry retry_urls deferred.")
def retry_paid_url(
    context: dg.OpExecutionContext,
    paid: tuple,
    mongo: MongoResource,
    redis: RedisResource,
    recording: RecordingSettingsParam,
    generators: GeneratorsResource,
) -> RetryResult:
    address, url = paid
    with transient_only(context):
        recorder = token_recorder(mongo, redis, None, recording, generators, paid_slots=HeldPaidSlot())
        result = RetryService(recorder.store, recorder).retry_deferred(
            address, url, [context.partition_key], owner=retry_owner(context),
            provider_stops=run_stops(context, recorder), on_token=token_tagger(context),
        )
    context.log.info(f"{url}: " + (" ".join(result.statuses) or "not retried (locked or no longer due)"))
    return result


@dg.op(retry_policy=TRANSIENT_RETRY, description="The run's totals: retry_urls and every retry_paid_url step.")
def retry_summary(
    context: dg.OpExecutionContext,
    free: tuple,
    paid: list[RetryResult],
    redis: RedisResource,
    recording: RecordingSettingsParam,
    generators: GeneratorsResource,
) -> dg.Output:
    with transient_only(context):
        settings = recording.settings()
        guard = credit_guard_metadata(context, credit_guard(redis.client(), generators))
    result, limit = free
    # Without paid steps retry_urls has said it all (its hints included).
    return retry_output(context, context.partition_key, result.merged(paid), settings, limit, guard, hints=bool(paid))


def retry_owner(context: dg.OpExecutionContext) -> str:
    return f"retry-{context.run_id}"


def retry_output(
    context, status: str, result: RetryResult, settings, limit: int, guard: dict, *, hints: bool = True, **kw
) -> dg.Output:
    """The statuses as the output, the counts as metadata, and the hints in the step's log."""
    context.log.info(
        f"retry {status}: attempted={result.urls_attempted} "
        + " ".join(f"{k}={v}" for k, v in sorted(result.statuses.items()))
    )
    for level, line in retry_hints(status, result, settings, limit) if hints else []:
        context.log.log(level, line)
    warn_stopped_credentials(context, result.stopped_credentials.values())
    return dg.Output(
        dict(result.statuses),
        metadata={
            "status": status,
            "tokens_selected": result.tokens_selected,
            "urls_attempted": result.urls_attempted,
            "skipped_locked": result.skipped_locked,
            "external_calls": result.external_calls,
            "exhausted": result.exhausted,
            "rerouted": result.rerouted,
            "same_as_sibling": result.same_as_sibling,
            "queue_backfilled": result.queue_backfilled,
            "credentials_refused": ", ".join(sorted(result.stopped_credentials)) or "none",
            "credit_exhausted": result.credit_exhausted,
            "deferred_paid": len(result.deferred),
            "limit": limit,
            "min_interval_minutes": settings.retry_min_interval_minutes,
            # What the attempted URLs are now, as numbers (the labels record_token_job uses).
            **status_counts(result.statuses),
            **guard,
        },
        **kw,
    )


def retry_hints(status: str, result, settings, limit: int) -> list[tuple[int, str]]:
    """(log level, line): what an operator needs to know when a retry run did less than expected."""
    hints: list[tuple[int, str]] = []
    if status == FetchStatus.SKIPPED_PAID and not settings.enable_paid:
        hints.append((
            logging.WARNING,
            "paid fetching is off (SOCIALREC_ENABLE_PAID is not true): skipped_paid URLs stay skipped_paid. "
            "Set SOCIALREC_ENABLE_PAID=true and restart the code location before retrying them.",
        ))
    if result.urls_attempted == 0:
        hints.append((
            logging.INFO,
            f"no {status} URL was due: only URLs last attempted more than {settings.retry_min_interval_minutes} "
            "min ago are retried (SOCIALREC_RETRY_MIN_INTERVAL_MINUTES).",
        ))
    elif result.urls_attempted >= limit:
        hints.append((
            logging.INFO,
            f"stopped at the limit of {limit} URLs; the next run continues (config `limit` or SOCIALREC_RETRY_LIMIT).",
        ))
    if result.credit_exhausted:
        hints.append((
            logging.WARNING,
            "a paid provider answered out-of-credit (in this run or elsewhere): the remaining paid URLs of this run "
            "stay skipped_paid until the credit guard clears (see the credit_guard metadata).",
        ))
    if result.skipped_locked:
        hints.append((
            logging.INFO,
            f"{result.skipped_locked} URL(s) skipped: another run held their token's lock; the next run retries them.",
        ))
    return hints


@dg.job(
    partitions_def=retry_partitions,
    executor_def=dg.in_process_executor,
    tags={JOB_FAMILY_TAG: "retry"},
    description="Retry the URLs of one status (error / unsupported / skipped_paid; invalid / exhausted by hand).",
)
def retry_job():
    _statuses, free, paid = retry_urls()
    retry_summary(free, paid.map(retry_paid_url).collect())


@dg.schedule(
    job=retry_job,
    cron_schedule="15 * * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Every hour: one retry run per retryable status (error, unsupported, skipped_paid).",
)
def retry_schedule(context: dg.ScheduleEvaluationContext):
    stamp = context.scheduled_execution_time.strftime("%Y-%m-%dT%H:%M")
    for status in SCHEDULED_STATUSES:
        yield dg.RunRequest(run_key=f"{status}:{stamp}", partition_key=status)
