"""Stuck work as tables and checks, for the operator's first look.

- `record_inbox` / `inbox_not_stuck`: WARN when a token gave up; a table of the tokens waiting for an
  automatic relaunch or given up (address, symbol, failed runs, last failed run, next relaunch).
- `token_flow` / `dead_letters_reviewed`: WARN while the dead-letter queue holds messages newer than
  the last `socialrec dlq ack`; the last 20 dead letters and the counts by reason.
- `reconciled_hours` / `reconcile_coverage`: WARN when a closed hour older than 2 h has no successful
  reconcile (launch a backfill of the missing hours from the asset's partition bar).

A figure that could not be read (broker or database down) is a WARN that says so, never a pass.
They run together in `operator_checks_job`, every 15 minutes, in one process.
"""

from datetime import UTC, datetime, timedelta

import dagster as dg

from socialrec_pipeline.defs.reconcile import reconcile_partitions
from socialrec_pipeline.defs.resources import MongoResource, RabbitMQResource, RedisResource
from socialrec_pipeline.defs.tags import JOB_FAMILY_TAG
from socialrec_pipeline.stream import dead_letters
from socialrec_pipeline.stream.inbox import RETRYING, STUCK, RecordInbox

#: Rows of each table (Dagster shows metadata tables inline; more belongs in the CLI).
TABLE_ROWS = 20
#: A closed hour younger than this may still be reconciled by its schedule: not yet a gap.
COVERAGE_GRACE = timedelta(hours=2)
#: Missing hours listed by name in the check's metadata (the partition bar shows them all).
MISSING_LISTED = 20

_WARN = dg.AssetCheckSeverity.WARN


def _when(at: datetime | None) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if at else "-"


def _text_table(columns: list[str], rows: list[list[str]]) -> dg.MetadataValue:
    schema = dg.TableSchema(columns=[dg.TableColumn(name, "string") for name in columns])
    records = [dg.TableRecord(dict(zip(columns, row, strict=True))) for row in rows]
    return dg.MetadataValue.table(records, schema=schema)


@dg.asset_check(asset="record_inbox", name="inbox_not_stuck")
def inbox_not_stuck(mongo: MongoResource) -> dg.AssetCheckResult:
    """WARN when a token gave up after every automatic relaunch failed. The table lists the tokens
    waiting for their next relaunch and the ones that gave up, with the run that last failed; a new
    token.flow event or a manual record_token_job run relaunches a token that gave up."""
    inbox = RecordInbox(mongo.db())
    entries = inbox.entries_in_states([STUCK, RETRYING], limit=TABLE_ROWS)
    stuck_total = inbox.count_in_state(STUCK)
    retrying_total = inbox.count_in_state(RETRYING)
    rows = [
        [
            entry.token_address,
            entry.symbol or "",
            str(entry.failures),
            entry.last_failed_run_id or "",
            "gave up" if entry.state == STUCK else _when(entry.check_at),
        ]
        for entry in entries
    ]
    description = (
        f"{stuck_total} token(s) gave up, {retrying_total} wait for an automatic relaunch"
        if stuck_total
        else f"no token gave up; {retrying_total} wait for an automatic relaunch"
    )
    return dg.AssetCheckResult(
        passed=stuck_total == 0,
        severity=_WARN,
        description=description,
        metadata={
            "gave_up": stuck_total,
            "waiting_for_relaunch": retrying_total,
            "tokens": _text_table(["address", "symbol", "failed_runs", "last_failed_run", "next_relaunch"], rows),
        },
    )


@dg.asset_check(asset="token_flow", name="dead_letters_reviewed")
def dead_letters_reviewed(rabbitmq: RabbitMQResource, redis: RedisResource) -> dg.AssetCheckResult:
    """WARN while the dead-letter queue holds messages newer than the last review. Read them with
    `socialrec dlq list`; then `socialrec dlq requeue` (after a fix), `socialrec dlq purge --yes`, or
    `socialrec dlq ack` to mark them reviewed."""
    try:
        letters = dead_letters.peek(rabbitmq.url, rabbitmq.queue)
    except Exception as exc:  # unknown is not healthy: say what could not be read
        return dg.AssetCheckResult(
            passed=False,
            severity=_WARN,
            description=f"the dead-letter queue could not be read (RabbitMQ: {type(exc).__name__}); check RABBITMQ_URL",
            metadata={"readable": False},
        )
    reviewed_at = dead_letters.ReviewMark(redis.client(), rabbitmq.queue).get()
    new = dead_letters.unreviewed(letters, reviewed_at)
    latest = letters[-TABLE_ROWS:][::-1]
    rows = [[_when(letter.dead_lettered_at), letter.reason, letter.preview] for letter in latest]
    reasons = dead_letters.counts_by_reason(letters)
    return dg.AssetCheckResult(
        passed=not new,
        severity=_WARN,
        description=(
            f"{len(new)} dead letter(s) not reviewed (of {len(letters)}): `socialrec dlq list`, then requeue, "
            "purge or ack"
            if new
            else f"{len(letters)} dead letter(s), all reviewed"
        ),
        metadata={
            "readable": True,
            "dead_letters": len(letters),
            "not_reviewed": len(new),
            "reviewed_at": _when(reviewed_at),
            "by_reason": _text_table(["reason", "messages"], [[r, str(n)] for r, n in reasons.items()]),
            "latest": _text_table(["dead_lettered_at", "reason", "payload"], rows),
        },
    )


def missing_closed_hours(
    partition_keys: list[str], materialized: set[str], now: datetime, grace: timedelta = COVERAGE_GRACE
) -> list[str]:
    """Hours that ended more than `grace` ago and have no successful reconcile."""
    cutoff = now - grace
    missing = []
    for key in partition_keys:
        hour_end = datetime.strptime(key, "%Y-%m-%d-%H:%M").replace(tzinfo=UTC) + timedelta(hours=1)
        if hour_end <= cutoff and key not in materialized:
            missing.append(key)
    return missing


@dg.asset_check(asset="reconciled_hours", name="reconcile_coverage")
def reconcile_coverage(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
    """WARN when a closed hour older than 2 h has no successful reconcile. Select the missing hours in
    reconciled_hours' partition bar and launch a backfill."""
    now = datetime.now(UTC)
    keys = reconcile_partitions.get_partition_keys(current_time=now)
    materialized = context.instance.get_materialized_partitions(dg.AssetKey("reconciled_hours"))
    missing = missing_closed_hours(list(keys), set(materialized), now)
    return dg.AssetCheckResult(
        passed=not missing,
        severity=_WARN,
        description=(
            f"{len(missing)} closed hour(s) older than 2 h not reconciled, the oldest {missing[0]}: backfill them "
            "from the partition bar"
            if missing
            else "every closed hour older than 2 h is reconciled"
        ),
        metadata={
            "hours_missing": len(missing),
            "hours_total": len(keys),
            "missing": dg.MetadataValue.text(", ".join(missing[:MISSING_LISTED]) or "-"),
        },
    )


operator_checks = [inbox_not_stuck, dead_letters_reviewed, reconcile_coverage]

operator_checks_job = dg.define_asset_job(
    "operator_checks_job",
    selection=dg.AssetSelection.checks(*operator_checks),
    executor_def=dg.in_process_executor,
    tags={JOB_FAMILY_TAG: "health"},
    description="Evaluate the operator checks: stuck tokens, unreviewed dead letters, reconcile coverage.",
)

operator_checks_schedule = dg.ScheduleDefinition(
    name="operator_checks_schedule",
    job=operator_checks_job,
    cron_schedule="*/15 * * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Every 15 minutes: stuck tokens, unreviewed dead letters and reconcile coverage.",
)
