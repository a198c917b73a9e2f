"""`record_token_job`: prepare → one step per URL (fan-out) → write_marker (marker last, unlock).

The ops are thin shells over `TokenRecorder`. The token lock is owned by the run's root id, a plain
string in Redis, so any step in any process can extend it; `record_url` keeps it alive while it
works and takes it back if it expired while the step waited for a pool slot.

Paid-platform URLs go through `record_paid_url`, the same op in the `paid_social_api` pool, so
Dagster's op concurrency caps simultaneous paid calls across all runs (limit in dagster.yaml). A
short link is routed to `record_url`: its target is known only once resolved (a free request), and
when it is paid `record_url` makes no call and returns the URL as deferred; `defer_paid_urls` then
fans the deferred URLs out to `record_paid_url_resolved` (the same pooled op), and `write_marker`
takes that step's result for the URL.
"""

import hashlib
import os
import re
import textwrap
from collections import Counter
from collections.abc import Sequence

import dagster as dg
from pydantic import Field

from socialrec_pipeline.defs.launch_gate import LaunchRefused, refuse_op_config
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
    credit_guard_metadata,
    hold_lock,
    lock_owner,
    status_counts,
    token_recorder,
    token_tagger,
    transient_only,
    warn_run,
    warn_stopped_credentials,
)
from socialrec_pipeline.defs.tags import FORCED_TAG, JOB_FAMILY_TAG, OUTCOME_TAG, TOKEN_TAG, UPSTREAM_ALL_404
from socialrec_pipeline.domain.instants import parse_instant
from socialrec_pipeline.recording.locks import LockNotHeld
from socialrec_pipeline.recording.paid import DeferPaidCalls, HeldPaidSlot
from socialrec_pipeline.recording.processor import PlannedUrl, PreparedToken, RecordOutcome, SkippedToken, UrlResult
from socialrec_pipeline.recording.provider_stops import RedisProviderStops
from socialrec_pipeline.recording.settings import RecordingSettings
from socialrec_pipeline.stream.intake import tick_limits_from_env


class RecordTokenConfig(dg.Config):
    token_address: str = Field(description="Mint address of the token to record (base58).")
    first_flow_timestamp: str | None = Field(
        default=None,
        description="The event's firstFlowTimestamp, ISO-8601 with offset; becomes tokens.first_transfer_at "
        "(null: the upstream's value).",
    )
    symbol: str | None = Field(default=None, description="Token symbol from the event (null: the upstream's value).")
    force_below_threshold: bool = Field(
        default=False,
        description="Record the token even when the upstream counts fewer alpha finders than "
        "SOCIALREC_AF_THRESHOLD. Without it such a run is refused. A forced run is tagged "
        "socialrec/forced_below_threshold=true and the marker step's metadata says so.",
    )


#: Characters of the URL kept in a step key after the source type: the Gantt chart cuts longer names.
KEY_READABLE = 24
_NOT_KEY_CHARS = re.compile(r"[^A-Za-z0-9]+")


def _key_part(text: str, limit: int) -> str:
    return _NOT_KEY_CHARS.sub("_", text).strip("_")[:limit].rstrip("_")


def mapping_key(planned: PlannedUrl) -> str:
    """A readable step key suffix, within Dagster's rule (only `[A-Za-z0-9_]`): the source type and
    what the URL identifies (`x_tweet_1790000000000000001`, `website_example_com_about`), else the
    URL without its scheme (`none_…` for text that did not route). Not unique on its own: see
    `mapping_keys`."""
    routed = planned.routed
    if routed is None:
        return "none_" + (_key_part(planned.url.split("://", 1)[-1], KEY_READABLE) or "url")
    what = routed.source_key or routed.canonical_url.split("://", 1)[-1].removeprefix("www.")
    return f"{routed.source_type.value}_{_key_part(what, KEY_READABLE) or 'url'}"


def mapping_keys(planned: Sequence[PlannedUrl]) -> dict[str, str]:
    """URL → its step key suffix, unique in the run: keys that two URLs share get a 6-character hash
    of their URL appended (`x_profile_somebody_3f2a1c`); the others stay as `mapping_key` gives them."""
    readable = {p.url: mapping_key(p) for p in planned}
    shared = {key for key, n in Counter(readable.values()).items() if n > 1}
    return {
        url: f"{key}_{hashlib.sha1(url.encode()).hexdigest()[:6]}" if key in shared else key
        for url, key in readable.items()
    }


@dg.op(
    out={
        "token": dg.Out(is_required=False),
        # Required even when empty: an empty fan-out collects to [], a skipped one skips the marker.
        "urls": dg.DynamicOut(),
        "paid_urls": dg.DynamicOut(),
        # Only when the token is skipped: why, as output metadata (the marker step shows "skipped").
        "skipped": dg.Out(str, is_required=False),
    },
    retry_policy=TRANSIENT_RETRY,
)
def prepare(
    context: dg.OpExecutionContext,
    config: RecordTokenConfig,
    mongo: MongoResource,
    redis: RedisResource,
    soltracker: SolTrackerResource,
    recording: RecordingSettingsParam,
    generators: GeneratorsResource,
):
    """Lock, idempotency, upstream lookup, routing; a skipped token yields nothing downstream.

    Every run ends with the run tag `socialrec/outcome` (recorded, locked, already_recorded,
    unknown_token, upstream_failed) so the Runs page can be filtered by what happened. A lock held
    elsewhere, an existing marker and a token the upstream does not know are normal: the run is
    green and says why in the `skipped` output. An upstream failure is not: it raises a `Failure`,
    retried by the op's `RetryPolicy`, then the run is red (the sensor relaunches a stream token with
    backoff, `RELAUNCH_SCHEDULE`).
    """
    prepared, settings = _lock_and_prepare(context, config, mongo, redis, soltracker, recording, generators)
    if isinstance(prepared, SkippedToken):
        yield _skipped(context, config.token_address, prepared)
        return
    yield from _planned_outputs(context, prepared, settings)


def _lock_and_prepare(
    context: dg.OpExecutionContext,
    config: RecordTokenConfig,
    mongo: MongoResource,
    redis: RedisResource,
    soltracker: SolTrackerResource,
    recording: RecordingSettingsParam,
    generators: GeneratorsResource,
) -> tuple[PreparedToken | SkippedToken, RecordingSettings]:
    """The launch gate's checks, the token tag, then the recorder's lock / marker / upstream / routing."""
    try:
        refuse_op_config("prepare", config.model_dump())  # the launch gate's checks, in process too
    except LaunchRefused as exc:
        raise dg.Failure(description=str(exc), allow_retries=False) from None
    address = config.token_address
    if context.run.tags.get(TOKEN_TAG) != address:  # launched by hand: make it findable like the stream's
        context.instance.add_run_tags(context.run_id, {TOKEN_TAG: address})
    token_tagger(context)(address)  # the tag retry / reconcile runs of this token carry too
    with transient_only(context):
        recorder = token_recorder(mongo, redis, soltracker, recording, generators)
        owner = lock_owner(context.run)
        if recorder.locks.owner_of(address) == owner:  # a re-execution inherits its parent's lock
            recorder.locks.release(address, owner)
        prepared = recorder.prepare(
            address,
            parse_instant(config.first_flow_timestamp),
            config.symbol,
            owner,
            check_threshold=True,
            force_below_threshold=config.force_below_threshold,
        )
    return prepared, recorder.settings


def _skipped(context: dg.OpExecutionContext, address: str, prepared: SkippedToken) -> dg.Output:
    """The `skipped` output of a normal skip; a refused or failed upstream lookup raises a Failure."""
    tag_outcome(context, prepared.outcome)
    metadata = {"outcome": str(prepared.outcome), "reason": prepared.reason, "token_address": address}
    if prepared.outcome is RecordOutcome.BELOW_THRESHOLD:
        message = (
            f"refused: {prepared.reason}. Nothing was written and the token lock is released. To record "
            "it anyway, launch the run again with `force_below_threshold: true` in the prepare op's config."
        )
        context.log.error(message)
        raise dg.Failure(description=message, metadata=metadata, allow_retries=False)
    if prepared.outcome is RecordOutcome.UPSTREAM_FAILED:
        message = upstream_failure_message(address, prepared.reason, retryable=prepared.retryable)
        attempt = (
            f" (attempt {context.retry_number + 1} of {TRANSIENT_RETRY.max_retries + 1})" if prepared.retryable else ""
        )
        context.log.error(message + attempt)
        raise dg.Failure(description=message, metadata=metadata, allow_retries=prepared.retryable)
    if prepared.upstream_404_suspicious:
        warn_run(context, upstream_404_streak_message(prepared.upstream_404_streak), UPSTREAM_ALL_404)
    context.log.info(f"token {address} skipped: {prepared.outcome} {prepared.reason}".strip())
    return dg.Output(
        str(prepared.outcome),
        "skipped",
        metadata={
            "outcome": str(prepared.outcome),
            "reason": prepared.reason,
            "upstream_calls": prepared.upstream_calls,
        },
    )


def _planned_outputs(context: dg.OpExecutionContext, prepared: PreparedToken, settings: RecordingSettings):
    """The `token` output, then one dynamic output per URL (paid ones to `paid_urls`)."""
    if prepared.forced_below_threshold:
        context.instance.add_run_tags(context.run_id, {FORCED_TAG: "true"})
        context.log.warning(
            f"token {prepared.address} has {prepared.alpha_finders} alpha finders upstream, below the threshold "
            f"of {settings.af_threshold}: recorded because the run config says force_below_threshold: true"
        )
    gate_settings = settings.gate_settings()
    yield dg.Output(
        prepared,
        "token",
        metadata={
            "urls": len(prepared.planned),
            "upstream_calls": prepared.upstream_calls,
            "alpha_finders": prepared.alpha_finders if prepared.alpha_finders is not None else -1,
            "forced_below_threshold": prepared.forced_below_threshold,
        },
    )
    keys = mapping_keys(prepared.planned)
    for planned in prepared.planned:
        # Only URLs that will really call a paid provider take a slot of the paid pool.
        paid = (
            planned.routed is not None and gate_settings.enable_paid and gate_settings.is_paid(planned.routed.platform)
        )
        yield dg.DynamicOutput(planned, mapping_key=keys[planned.url], output_name="paid_urls" if paid else "urls")


def upstream_failure_message(address: str, reason: str, *, retryable: bool = True) -> str:
    if not retryable:
        return (
            f"SolTracker lookup of {address} failed ({reason}). Not retried: a refused key or an answer "
            "outside the contract does not change by asking again at once. Nothing was written and the "
            "token lock is released. Check SOL_TRACKER_API_KEY and SOL_TRACKER_BASE_URL, then re-execute this run."
        )
    return (
        f"SolTracker lookup of {address} failed ({reason}). Nothing was written and the token lock is "
        "released. Check SolTracker (SOL_TRACKER_BASE_URL / SOL_TRACKER_API_KEY). A run the token_flow_sensor "
        f"started is relaunched automatically {RELAUNCH_SCHEDULE}, then the token is reported stuck; "
        "a run launched by hand is not: re-execute it once SolTracker answers."
    )


def _minutes(delay) -> str:
    return f"{int(delay.total_seconds() // 60)}"


#: The sensor's automatic relaunch schedule, in words (stream/intake.py `TickLimits.backoff`).
RELAUNCH_SCHEDULE = (
    "after "
    + ", ".join(_minutes(d) for d in tick_limits_from_env(os.environ).backoff)
    + " minutes (each counted from the end of the "
    "run before)"
)


def upstream_404_streak_message(streak: int) -> str:
    return (
        f"SolTracker answered 404 (unknown token) for the last {streak} tokens in a row. Tokens that qualified "
        "on the stream are normally known upstream: check SOL_TRACKER_BASE_URL (a wrong base URL answers 404 "
        "for every token). Unknown tokens are not recorded; reconcile their hours once the URL is fixed."
    )


def tag_outcome(context: dg.OpExecutionContext, outcome: RecordOutcome) -> None:
    context.instance.add_run_tags(context.run_id, {OUTCOME_TAG: str(outcome)})


def url_op(name: str, *, pool: str | None, description: str) -> dg.OpDefinition:
    """`record_url` and `record_paid_url` are one op body; only the pool (and the name) differ."""

    @dg.op(name=name, retry_policy=TRANSIENT_RETRY, pool=pool, description=description)
    def _record(
        context: dg.OpExecutionContext,
        token: PreparedToken,
        planned: PlannedUrl,
        mongo: MongoResource,
        redis: RedisResource,
        recording: RecordingSettingsParam,
        generators: GeneratorsResource,
    ) -> UrlResult:
        with transient_only(context):
            # In the pool the step's own slot covers its call; outside it a short link whose target
            # is paid is not called but deferred to a step of the pool (`defer_paid_urls`).
            slots = HeldPaidSlot() if pool == PAID_POOL else DeferPaidCalls()
            recorder = token_recorder(mongo, redis, None, recording, generators, paid_slots=slots)
            try:
                hold_lock(recorder.locks, token.address, token.owner)
            except LockNotHeld as exc:
                raise dg.Failure(description=str(exc), allow_retries=False) from None
            # The deployment-wide credit guard: one out-of-credit answer anywhere stops this call.
            # A rejected key or a spent quota stops that credential for the token's other steps too.
            stops = RedisProviderStops(recorder.locks.redis, scope=f"{token.owner}:{token.address}")
            with recorder.keep_alive(token):
                result = recorder.record_one_url(token, planned, provider_stops=stops)
        status = "deferred" if result.deferred else str(result.status)
        context.log.info(f"{planned.url}: {status}" + (f" ({result.error})" if result.error else ""))
        if result.stopped_credential is not None:
            warn_stopped_credentials(context, [result.stopped_credential])
        return result

    return _record


record_url = url_op("record_url", pool=None, description="Gate → generate → write for one free-platform URL.")
record_paid_url = url_op(
    "record_paid_url",
    pool=PAID_POOL,
    description="The same as record_url, for a paid platform, inside the paid_social_api pool.",
)


@dg.op(
    out=dg.DynamicOut(PlannedUrl),
    retry_policy=TRANSIENT_RETRY,
    description="The short links record_url resolved to a paid platform, one output each for "
    "record_paid_url_resolved (in the paid_social_api pool): record_url makes no paid call.",
)
def defer_paid_urls(context: dg.OpExecutionContext, token: PreparedToken, results: list[UrlResult]):
    deferred = [r.planned for r in results if r.deferred]
    keys = mapping_keys(token.planned)
    for planned in deferred:
        context.log.info(f"{planned.url}: resolves to a paid platform, recorded in the paid_social_api pool")
        yield dg.DynamicOutput(planned, mapping_key=keys[planned.url])


def merged_results(
    token: PreparedToken, results: list[UrlResult], paid_results: list[UrlResult], resolved: list[UrlResult]
) -> list[UrlResult]:
    """Every URL's result in the token's order: a deferred one replaced by its pooled step's result
    (still `deferred` only if that step did not run, then an `error` without an attempt)."""
    decided = {r.planned.url: r for r in resolved}
    merged = [decided.get(r.planned.url, r) if r.deferred else r for r in results] + paid_results
    order = {planned.url: i for i, planned in enumerate(token.planned)}
    return sorted(merged, key=lambda r: order.get(r.planned.url, len(order)))


#: Shown inline in the run's event log, the table gets the width of the log's info column (~760 px
#: on a 1500 px screen). Cells wrap anywhere when the row is wider than that, and the browser takes
#: the room from every column, so a long URL used to break `skipped_paid` into two lines. The long
#: text columns therefore carry their own line breaks (cells keep newlines): a URL every
#: URL_LINE characters (after a `/` where it can), the detail every DETAIL_LINE, so a row always
#: fits and no status word is broken (scripts/ui_check.sh checks it in a browser). The marker holds
#: each URL in one piece; `url` here is for reading.
URL_LINE = 26
DETAIL_LINE = 18

URL_TABLE_SCHEMA = dg.TableSchema(
    columns=[
        dg.TableColumn("status", "string", description="what happened to the URL (social_urls[].status)"),
        dg.TableColumn("platform", "string", description="platform code; empty when the URL did not route"),
        dg.TableColumn("source_field", "string", description="the upstream field it was written in"),
        dg.TableColumn("api_call", "bool", description="an API was called (counts as an attempt)"),
        dg.TableColumn(
            "url", "string", description=f"canonical URL (social_urls[].url), a line per {URL_LINE} characters"
        ),
        dg.TableColumn("detail", "string", description="why, for a status other than ok"),
    ]
)


def _lines_of(text: str, width: int, after: str = "") -> str:
    """`text` with a newline at least every `width` characters, preferably after one of `after`
    (a URL) or between words (prose)."""
    if not after:
        return textwrap.fill(text, width, break_long_words=True, break_on_hyphens=False)
    lines, rest = [], text
    while len(rest) > width:
        cut = max(rest.rfind(c, 0, width) for c in after) + 1
        cut = cut if cut > width // 2 else width
        lines.append(rest[:cut])
        rest = rest[cut:]
    return "\n".join([*lines, rest])


def credential_warnings(results: list[UrlResult]) -> dict[str, str]:
    """`warnings`: the credentials a provider refused while recording this token (what to fix)."""
    stopped = {r.stopped_credential.setting: r.stopped_credential for r in results if r.stopped_credential}
    if not stopped:
        return {}
    return {"warnings": "\n".join(credential.advice() for _, credential in sorted(stopped.items()))}


def url_table(results: list[UrlResult]) -> dg.TableMetadataValue:
    """One row per URL: what an operator checks first when a token looks incomplete."""
    return dg.MetadataValue.table(
        records=[
            dg.TableRecord(
                {
                    "status": str(r.status),
                    "platform": str(r.planned.routed.platform) if r.planned.routed else "",
                    "source_field": r.planned.source_field or "",
                    "api_call": bool(r.external_call),
                    "url": _lines_of(r.planned.url, URL_LINE, after="/?&=."),
                    "detail": _lines_of(r.error or "", DETAIL_LINE),
                }
            )
            for r in results
        ],
        schema=URL_TABLE_SCHEMA,
    )


@dg.op(
    retry_policy=TRANSIENT_RETRY,
    description="Write the token's `tokens` document (the marker, last) with every URL's status, then "
    "release the lock. Output metadata: the URL table and per-status counts.",
)
def write_marker(
    context: dg.OpExecutionContext,
    token: PreparedToken,
    results: list[UrlResult],
    paid_results: list[UrlResult],
    resolved_paid_results: list[UrlResult],
    mongo: MongoResource,
    redis: RedisResource,
    recording: RecordingSettingsParam,
    generators: GeneratorsResource,
) -> dg.Output:
    """The `tokens` document, written last (it is the marker), then the lock is released."""
    ordered = merged_results(token, results, paid_results, resolved_paid_results)
    with transient_only(context):
        recorder = token_recorder(mongo, redis, None, recording, generators)
        hold_lock(recorder.locks, token.address, token.owner)
        outcome = recorder.finish(token, ordered)
        guard = credit_guard_metadata(context, recorder.credit_guard)
    tag_outcome(context, outcome.outcome)
    return dg.Output(
        outcome.statuses,
        metadata={
            "token_address": token.address,
            "urls": url_table(ordered),
            "url_count": len(ordered),
            **status_counts(outcome.statuses),
            "links_appended": outcome.links_appended,
            "marker_created": outcome.marker_created,
            "forced_below_threshold": token.forced_below_threshold,
            **({"alpha_finders": token.alpha_finders} if token.alpha_finders is not None else {}),
            **guard,
            **credential_warnings(ordered),
        },
    )


#: Executor chosen by measurement: a 4-URL token (website, X, Telegram, TikTok) against loopback
#: fixtures on 2 shared cores, `dg.execute_job` on a persistent instance, 2 runs each:
#:   in_process    0.68-0.84 s wall, 0.57-0.72 s CPU
#:   multiprocess  12.2-15.8 s wall, 13.1-14.2 s CPU (6 step processes, ~2 s CPU each)
#: The per-URL work is a few milliseconds of IO, so step processes cost ~20x what they could save.
#: Parallelism comes from several tokens' runs at once (run queue `max_concurrent_runs`); the lock
#: still works across processes should a run be re-executed with another executor.
RECORD_TOKEN_EXECUTOR = dg.in_process_executor


@dg.job(
    executor_def=RECORD_TOKEN_EXECUTOR,
    tags={JOB_FAMILY_TAG: "record_token"},
    description="Record one token's social footprint: lock, upstream, route, one step per URL, marker last.",
)
def record_token_job():
    token, urls, paid_urls, _skipped = prepare()
    results = urls.map(lambda planned: record_url(token, planned)).collect()
    paid_results = paid_urls.map(lambda planned: record_paid_url(token, planned)).collect()
    resolved_paid = defer_paid_urls(token, results).map(
        lambda planned: record_paid_url.alias("record_paid_url_resolved")(token, planned)
    )
    write_marker(token, results, paid_results, resolved_paid.collect())
