"""`reconcile_job` (token axis): one run = one hour of the upstream's `last_transfer_at`.

Operators launch ranges as backfills from the UI; `reconcile_schedule` reconciles the previous
hour. Concurrent runs are capped by the run queue's limit on the tag `socialrec/job: reconcile`.

The asset's graph (`reconcile_window`, config `max_minutes` under `ops.reconcile_window.config`):
`reconcile_free_pass` (the `reconcile` pool) lists the hour and records every token that needs no
paid call; each token that does goes, whole, to a `reconcile_paid_token` step in the
`paid_social_api` pool; `reconcile_summary` adds them up into the `reconciled_hours`
materialization (or fails the partition). See `reconcile_asset` for why.
"""

import os
from datetime import UTC, datetime, timedelta

import dagster as dg
from pydantic import Field

from socialrec_pipeline.defs.assets import OPS_GROUP, OWNERS
from socialrec_pipeline.defs.launch_gate import refuse_op_config
from socialrec_pipeline.defs.metric_refresh import refresh_key
from socialrec_pipeline.defs.paid_pool import PAID_POOL
from socialrec_pipeline.defs.resources import (
    GeneratorsResource,
    MongoResource,
    RecordingSettingsParam,
    RedisResource,
    SolTrackerResource,
)
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
from socialrec_pipeline.recording.paid import DeferPaidCalls, HeldPaidSlot
from socialrec_pipeline.recording.reconcile import ReconcileResult, ReconcileService
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


def reconcile_owner(context: dg.OpExecutionContext) -> str:
    """The token locks' owner: the free pass and every pooled step of the run."""
    return f"reconcile-{context.run_id}"


def reconcile_free_pass_body(
    context: dg.OpExecutionContext,
    config: "ReconcileConfig",
    mongo: MongoResource,
    redis: RedisResource,
    soltracker: SolTrackerResource,
    recording: RecordingSettingsParam,
    generators: GeneratorsResource,
):
    """List the partition's hour; record every qualifying token without a marker whose recording
    makes no paid call; hand each other one to a `reconcile_paid_token` step (paid_social_api pool)."""
    window = context.partition_time_window
    with transient_only(context):  # a malformed setting or a bug fails at once instead of after retries
        refuse_op_config("reconcile_window", config.model_dump())  # the launch gate's bounds, in process too
        # No paid call here: a token that needs one is deferred, whole, to a step of the paid pool.
        recorder = token_recorder(mongo, redis, soltracker, recording, generators, paid_slots=DeferPaidCalls())
        service = ReconcileService(recorder.store, recorder.upstream, recorder)
        deadline = datetime.now(UTC) + config.max_minutes * DEADLINE_MINUTE
        try:
            result = service.run_window(
                window.start,
                window.end,
                soltracker.group_ids(),
                deadline,
                owner=reconcile_owner(context),
                on_token=token_tagger(context),  # each recorded token's history holds this run
                defer_paid=True,
            )
        except UpstreamError as exc:
            raise listing_failure(context, window, exc) from exc
    warn_stopped_credentials(context, result.stopped_credentials.values())
    yield dg.Output((result, config.max_minutes), "free", metadata={"deferred_paid": len(result.deferred)})
    for token in result.deferred:
        context.log.info(f"{token.address}: its recording makes a paid call, in the paid_social_api pool")
        yield dg.DynamicOutput((token, deadline), mapping_key=paid_key(token.address), output_name="paid")


def paid_key(address: str) -> str:
    """A `reconcile_paid_token` step's mapping key: the mint address (base58 is within Dagster's
    `[A-Za-z0-9_]`), else a readable part and a hash."""
    return address if address.isascii() and address.isalnum() else refresh_key(address)


def listing_failure(context: dg.OpExecutionContext, window, exc: UpstreamError) -> dg.Failure:
    """The step's failure when SolTracker's listing of the window failed (logged here); retried only
    when the upstream was unavailable."""
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
    return dg.Failure(description=message, allow_retries=transient)


def window_metadata(
    context: dg.OpExecutionContext, window, result: ReconcileResult, guard: dict
) -> dict[str, int | str]:
    """The window's counts as metadata (the summary line is logged here)."""
    summary = {
        "candidates": result.candidates,
        "present": result.present,
        "recorded": result.recorded,
        "skipped": result.skipped_locked,
        "failed": result.failed,
    }
    context.log.info(
        f"reconcile {window.start:%Y-%m-%d %H:%M}-{window.end:%H:%M} UTC "
        + " ".join(f"{k}={v}" for k, v in summary.items())
    )
    return {
        **summary,
        "unknown": result.unknown,
        "below_threshold": result.below_threshold,
        "pages": result.pages,
        "stopped_by": result.stopped_by or "window finished",
        "deferred_paid": len(result.deferred),
        **status_counts(result.url_statuses),
        **guard,
    }


def window_outcome(
    context: dg.OpExecutionContext, max_minutes: int, result: ReconcileResult, metadata: dict
) -> dg.Output:
    """Green when the window converged; a `Failure` (not retried) when a token failed or the deadline cut it."""
    problems = []
    if result.failed:
        problems.append(f"{result.failed} token(s) failed to record (their errors are in this run's logs)")
    if result.stopped_by:
        problems.append(f"the window was not finished (stopped by the {max_minutes}-minute {result.stopped_by})")
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
    return dg.Output(None, metadata=metadata)


def free_pass_op(retry_policy: dg.RetryPolicy | None) -> dg.OpDefinition:
    """The window's first step, in the `reconcile` pool: the listing and every free token."""

    @dg.op(
        name="reconcile_free_pass",
        pool=RECONCILE_POOL,
        retry_policy=retry_policy,
        out={"free": dg.Out(tuple), "paid": dg.DynamicOut(tuple)},
        description="List the partition's hour and record every qualifying token without a marker that needs no "
        "paid call; each token that does goes to a reconcile_paid_token step (paid_social_api pool).",
    )
    def reconcile_free_pass(
        context: dg.OpExecutionContext,
        config: ReconcileConfig,
        mongo: MongoResource,
        redis: RedisResource,
        soltracker: SolTrackerResource,
        recording: RecordingSettingsParam,
        generators: GeneratorsResource,
    ):
        yield from reconcile_free_pass_body(context, config, mongo, redis, soltracker, recording, generators)

    return reconcile_free_pass


@dg.op(
    pool=PAID_POOL,
    retry_policy=TRANSIENT_RETRY,
    description="Record one token reconcile_free_pass deferred, whole: the step's pool slot covers its paid calls.",
)
def reconcile_paid_token(
    context: dg.OpExecutionContext,
    paid: tuple,
    mongo: MongoResource,
    redis: RedisResource,
    recording: RecordingSettingsParam,
    generators: GeneratorsResource,
) -> ReconcileResult:
    token, deadline = paid
    with transient_only(context):
        recorder = token_recorder(mongo, redis, None, recording, generators, paid_slots=HeldPaidSlot())
        result = ReconcileService(recorder.store, recorder.upstream, recorder).record_deferred(
            token, deadline, owner=reconcile_owner(context), on_token=token_tagger(context)
        )
    outcome = [k for k in ("recorded", "present", "skipped_locked", "failed", "unknown") if getattr(result, k)]
    context.log.info(f"{token.address}: " + (" ".join(outcome) or f"not recorded (stopped by the {result.stopped_by})"))
    warn_stopped_credentials(context, result.stopped_credentials.values())
    return result


@dg.op(
    out=dg.Out(dg.Nothing),
    retry_policy=TRANSIENT_RETRY,
    description="The window's counts (the reconciled_hours materialization): the free pass and every "
    "reconcile_paid_token step. Red when a token failed or the deadline cut the window.",
)
def reconcile_summary(
    context: dg.OpExecutionContext,
    free: tuple,
    paid: list[ReconcileResult],
    redis: RedisResource,
    generators: GeneratorsResource,
) -> dg.Output:
    result, max_minutes = free
    with transient_only(context):
        guard = credit_guard_metadata(context, credit_guard(redis.client(), generators))
    merged = result.merged(paid)
    metadata = window_metadata(context, context.partition_time_window, merged, guard)
    return window_outcome(context, max_minutes, merged, metadata)


@dg.config_mapping
def reconcile_config(config: ReconcileConfig) -> dict:
    """`ops.reconcile_window.config` (the graph's, what a launch sets) is the free pass's config."""
    return {"reconcile_free_pass": {"config": config.model_dump()}}


def reconcile_asset(retry_policy: dg.RetryPolicy | None = RECONCILE_RETRY) -> dg.AssetsDefinition:
    """The graph of reconcile_job (node `reconcile_window`), materializing one hour of reconciled_hours.

    Why a graph and not one op claiming paid slots itself: a step's pool is the only public way to
    cap calls across runs, so a token whose recording makes a paid call is recorded, whole, in a
    step of the paid pool (its slot covers the token's sequential paid calls; the marker is still
    written last, by the same code). Deciding it costs nothing for a URL routed to a paid platform;
    a short link is recorded first in the free pass and, if its target is paid, the token stops
    there unmarked (one free request more, made again by the pooled step). The token's lock is not
    held between steps: the pooled step takes it again and counts what another run did meanwhile.
    `retry_policy` is the free pass's (the listing's 30 s / 60 s retries)."""
    free_pass = free_pass_op(retry_policy)

    @dg.graph_multi_asset(
        name="reconcile_window",
        outs={RECONCILED_HOURS.key.path[-1]: dg.AssetOut.from_spec(RECONCILED_HOURS)},
        group_name=OPS_GROUP,  # AssetOut.from_spec does not carry the spec's group
        partitions_def=reconcile_partitions,
        config=reconcile_config,
    )
    def reconcile_window():
        """Record every qualifying token of the partition's hour that has no marker yet (paid
        calls in reconcile_paid_token steps, paid_social_api pool)."""
        free, paid = free_pass()
        return reconcile_summary(free, paid.map(reconcile_paid_token).collect())

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
