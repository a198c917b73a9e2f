"""`retry_job` (URL axis): one run = one status. The hourly schedule retries the retryable three;
`invalid` and `exhausted` are launched only by an operator (runbook), from the UI."""

import dagster as dg

from socialrec_pipeline.defs.resources import GeneratorsResource, MongoResource, RecordingSettingsResource, RedisResource
from socialrec_pipeline.defs.services import TRANSIENT_RETRY, token_recorder, transient_only
from socialrec_pipeline.defs.tags import JOB_FAMILY_TAG
from socialrec_pipeline.domain.enums import RETRY_PARTITIONS, RETRYABLE
from socialrec_pipeline.recording.locks import PaidCreditGuard
from socialrec_pipeline.recording.retry import RetryService

retry_partitions = dg.StaticPartitionsDefinition([status.value for status in RETRY_PARTITIONS])

#: What the schedule launches, in partition order.
SCHEDULED_STATUSES = [status.value for status in RETRY_PARTITIONS if status in RETRYABLE]


class RetryConfig(dg.Config):
    #: URLs per run; None = the recording settings' `retry_limit`.
    limit: int | None = None


#: A retry is safe to repeat: finished URLs have a fresh `attempted_at` and drop out of the selection.
@dg.op(retry_policy=TRANSIENT_RETRY)
def retry_urls(
    context: dg.OpExecutionContext,
    config: RetryConfig,
    mongo: MongoResource,
    redis: RedisResource,
    recording: RecordingSettingsResource,
    generators: GeneratorsResource,
) -> dg.Output:
    """Re-route, gate, regenerate and rewrite the due URLs of the partition's status."""
    status = context.partition_key
    with transient_only():
        recorder = token_recorder(mongo, redis, None, recording, generators)  # retry never asks upstream
        guard = PaidCreditGuard(recorder.locks.redis, scope=f"retry:{context.run_id}")
        result = RetryService(recorder.store, recorder).run(
            [status], config.limit, credit_guard=guard, owner=f"retry-{context.run_id}"
        )
    context.log.info(f"retry {status}: attempted={result.urls_attempted} statuses={dict(result.statuses)}")
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
            "credit_exhausted": result.credit_exhausted,
            "statuses": dg.MetadataValue.json({str(k): v for k, v in result.statuses.items()}),
        },
    )


@dg.job(
    partitions_def=retry_partitions,
    executor_def=dg.in_process_executor,
    tags={JOB_FAMILY_TAG: "retry"},
    description="Retry the URLs of one status (error / unsupported / skipped_paid; invalid / exhausted by hand).",
)
def retry_job():
    retry_urls()


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
