"""Integrity checks (SPEC §4, §5) as asset checks on the collection assets.

The queries are `store/integrity.py`; each check here only maps a `CheckOutcome` to an
`AssetCheckResult` (counts, up to 20 offending ids, coverage, severity). `integrity_job` runs them
all; `integrity_schedule` runs it daily, and any check can be run on demand from the asset's
Checks tab or by launching the job.
"""

import os
from collections.abc import Callable
from datetime import timedelta

import dagster as dg

from socialrec_pipeline.defs.resources import MongoResource
from socialrec_pipeline.defs.tags import JOB_FAMILY_TAG
from socialrec_pipeline.store import integrity
from socialrec_pipeline.stream.intake import tick_limits_from_env

#: The stream's relaunch cap: every backoff step of a failing token, its relaunch grace, and an hour
#: of margin. An open inbox entry whose last event is older was neither recorded nor given up.
_LIMITS = tick_limits_from_env(os.environ)
INBOX_MAX_AGE = sum(_LIMITS.backoff, _LIMITS.relaunch_grace) + timedelta(hours=1)

ERROR = dg.AssetCheckSeverity.ERROR
WARN = dg.AssetCheckSeverity.WARN

#: name → (asset, severity, description). The query behind each is integrity.ALL_CHECKS[name].
CHECKS: dict[str, tuple[str, dg.AssetCheckSeverity, str]] = {
    "contents_unique_source_url": ("contents", ERROR, "No two contents rows share a source_urls.url."),
    "contents_unique_platform_key": (
        "contents",
        ERROR,
        "No two contents rows share (platform, subtype, platform_key).",
    ),
    "accounts_identity_keys": (
        "accounts",
        ERROR,
        "Every account has platform and platform_key; no duplicate (platform, platform_key).",
    ),
    "venues_identity_keys": (
        "venues",
        ERROR,
        "Every venue has platform and platform_key; no duplicate (platform, platform_key).",
    ),
    "links_point_at_rows": ("token_links", ERROR, "Every token_links.object_id is a row of its object collection."),
    "link_depth": (
        "token_links",
        ERROR,
        "link_depth is 0..2 and every (token, source_url) with links has a depth-0 link "
        "(links store no lineage, SPEC §4).",
    ),
    "links_have_linkable_status": (
        "token_links",
        WARN,
        "Links exist only for URLs whose marker status allows them (ok); links of the last 30 minutes are left out.",
    ),
    "linked_tokens_have_markers": (
        "token_links",
        WARN,
        "Every token with links (older than 30 minutes) has its tokens marker; "
        "reconcile re-records a token without one.",
    ),
    "marker_statuses_valid": ("tokens", ERROR, "Every tokens.social_urls[].status is one of the 9 FetchStatus values."),
    "retry_queue_exact": (
        "tokens",
        ERROR,
        "Every token's retry queue (oldest_attempt) is exactly what its social_urls derive; a missing one is "
        "derived by the next retry run.",
    ),
    "metric_series_points": ("metric_series", ERROR, "metric_series points are time-ordered and at most 200."),
    "inbox_entries_moving": (
        "record_inbox",
        WARN,
        "No open record_inbox entry (pending, launched, retrying) had its last "
        "event longer ago than the relaunch cap (every backoff step + 1 h): such a token is neither "
        "recorded nor surfaced as stuck.",
    ),
}


def check_result(
    outcome: integrity.CheckOutcome, severity: dg.AssetCheckSeverity, check_name: str | None = None
) -> dg.AssetCheckResult:
    """A check that found nothing in only part of what it covers does not pass: WARN, with its coverage."""
    metadata: dict = {name: dg.MetadataValue.int(value) for name, value in outcome.counts.items()}
    metadata["offending_ids"] = dg.MetadataValue.json(outcome.sample_ids)
    metadata["coverage"] = dg.MetadataValue.text(outcome.coverage)
    metadata["complete"] = dg.MetadataValue.bool(outcome.complete)
    if outcome.state == "incomplete":
        return dg.AssetCheckResult(
            check_name=check_name,
            passed=False,
            severity=WARN,
            metadata=metadata,
            description=f"no violation in the part read, but not everything was read: {outcome.coverage}",
        )
    return dg.AssetCheckResult(
        check_name=check_name,
        passed=outcome.passed,
        severity=severity,
        metadata=metadata,
        description=None if outcome.passed else f"{outcome.violations} violation(s); first ids in offending_ids",
    )


def _build(
    name: str, asset: str, severity: dg.AssetCheckSeverity, description: str, query: Callable
) -> dg.AssetChecksDefinition:
    def _check(context: dg.AssetCheckExecutionContext, mongo: MongoResource) -> dg.AssetCheckResult:
        outcome = query(mongo.db())
        context.log.info(outcome.summary())
        return check_result(outcome, severity)

    _check.__doc__ = description  # the check's op shows it too (Runs → the step)
    return dg.asset_check(name=name, asset=asset, description=description, blocking=False)(_check)


_QUERIES = {
    **{name: query for name, (_, query) in integrity.ALL_CHECKS.items()},
    "inbox_entries_moving": lambda db: integrity.check_inbox_entries_moving(db, max_age=INBOX_MAX_AGE),
}

integrity_checks = [
    _build(name, asset, severity, description, _QUERIES[name])
    for name, (asset, severity, description) in CHECKS.items()
]

integrity_job = dg.define_asset_job(
    "integrity_job",
    selection=dg.AssetSelection.checks(*integrity_checks),
    executor_def=dg.in_process_executor,
    tags={JOB_FAMILY_TAG: "integrity"},
    description="Run every integrity check of the stored graph (contents, accounts, venues, token_links, "
    "tokens, metric_series, record_inbox); results appear on each asset's Checks tab.",
)

integrity_schedule = dg.ScheduleDefinition(
    name="integrity_schedule",
    job=integrity_job,
    cron_schedule="30 4 * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Daily at 04:30 UTC: every integrity check (launch integrity_job for an on-demand run).",
)
