"""`token_flow_sensor`: drains `token.flow` into the record inbox and launches `record_token_job`.

The logic lives in `socialrec_pipeline.stream`; this shell adds what only Dagster knows — which
tokens have an active run — and turns launches into `RunRequest`s keyed `{address}:{inbox entry id}:{generation}`,
so a re-yield after a crash is deduplicated by Dagster.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import UTC, datetime

import dagster as dg

from socialrec_pipeline.defs.record_token import RecordTokenConfig
from socialrec_pipeline.defs.resources import MongoResource, RabbitMQResource, RecordingSettingsParam
from socialrec_pipeline.defs.tags import (  # RUN_KEY_TAG: the only link from an inbox launch to its run
    OUTCOME_TAG,
    RUN_KEY_TAG,
    TOKEN_TAG,
    UPSTREAM_ALL_404,
    WARNING_TAG,
    run_tags,
)
from socialrec_pipeline.recording.settings import SettingError
from socialrec_pipeline.stream.broker import dead_letter_queue
from socialrec_pipeline.stream.inbox import RETRYING, STUCK, RecordInbox
from socialrec_pipeline.stream.intake import (
    EndedRun,
    Launch,
    LaunchPlan,
    TickLimits,
    TokenFlowDrain,
    plan_launches,
    tick_limits_from_env,
)
from socialrec_pipeline.stream.unreachable import unreachable_service

RECORD_TOKEN_JOB = "record_token_job"

#: Queued or running: a token with such a run gets no second one.
ACTIVE_STATUSES = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]

def active_tokens(instance: dg.DagsterInstance) -> set[str]:
    runs = instance.get_runs(filters=dg.RunsFilter(job_name=RECORD_TOKEN_JOB, statuses=ACTIVE_STATUSES))
    return {run.tags[TOKEN_TAG] for run in runs if TOKEN_TAG in run.tags}


def upstream_404_warning(instance: dg.DagsterInstance) -> str | None:
    """The latest finished record_token_job run's "SolTracker answered 404 for every token" warning,
    relayed on the tick (the streak itself is counted by the runs, in Redis)."""
    finished = [dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE]
    latest = instance.get_runs(filters=dg.RunsFilter(job_name=RECORD_TOKEN_JOB, statuses=finished), limit=1)
    if not latest or UPSTREAM_ALL_404 not in latest[0].tags.get(WARNING_TAG, "").split(","):
        return None
    return (
        f"SolTracker answered 404 (unknown token) for every token in a row up to run {latest[0].run_id}: "
        "check SOL_TRACKER_BASE_URL (a wrong base URL looks exactly like unknown tokens)."
    )


#: Ended runs, as `EndedRun.status` names them.
ENDED_STATUSES = {
    dg.DagsterRunStatus.SUCCESS: "SUCCESS",
    dg.DagsterRunStatus.FAILURE: "FAILURE",
    dg.DagsterRunStatus.CANCELED: "CANCELED",
}
#: How many stuck tokens the cursor lists (with the run that last failed); the rest are counted.
STUCK_LISTED = 10


def ended_runs(instance: dg.DagsterInstance, run_keys: Sequence[str]) -> dict[str, EndedRun]:
    """The newest run each key started, once it has ended (one query on the run-key tag)."""
    runs = instance.get_runs(
        filters=dg.RunsFilter(
            job_name=RECORD_TOKEN_JOB, tags={RUN_KEY_TAG: list(run_keys)}, statuses=list(ENDED_STATUSES)
        )
    )
    found: dict[str, EndedRun] = {}
    for run in runs:  # newest first
        key = run.tags.get(RUN_KEY_TAG)
        if key and key not in found:
            found[key] = EndedRun(run.run_id, ENDED_STATUSES[run.status], run.tags.get(OUTCOME_TAG))
    return found


def run_request(launch: Launch, sandbox: bool) -> dg.RunRequest:
    first = launch.first_flow_timestamp
    return dg.RunRequest(
        run_key=launch.run_key,
        run_config=dg.RunConfig(
            ops={
                "prepare": RecordTokenConfig(
                    token_address=launch.token_address,
                    first_flow_timestamp=first.isoformat() if first else None,
                    symbol=launch.symbol,
                )
            }
        ),
        tags=run_tags(launch.token_address, source="stream", sandbox=sandbox),
    )


#: Per-tick gauges (how many entries wait for an active run, how many requests repeat an earlier
#: tick's run key): summing them over ticks means nothing, so they stay out of the totals.
GAUGES = ("waiting", "rerequested", "retrying", "stuck")


def _totals(cursor: str | None, tick: dict[str, int]) -> dict[str, int]:
    try:
        totals = json.loads(cursor)["totals"] if cursor else {}
    except (ValueError, KeyError, TypeError):
        totals = {}
    return {k: int(totals.get(k, 0)) + v for k, v in tick.items() if k not in GAUGES}


def skip_reason(tick: dict[str, int], threshold: int = 5) -> str:
    """Shown on a tick that started no run, so the Ticks tab answers "why did nothing run?". It
    starts with the tick's outcome (`idle`, or every count: `1 dead-letter, 1 below 5`)."""
    if not tick["consumed"]:
        seen = "token.flow queue empty"
    else:
        seen = (
            f"{tick['consumed']} message(s): {tick['queued']} qualifying into the inbox, "
            f"{tick['below_threshold']} below the alpha-finder threshold, {tick['invalid']} dead-lettered"
        )
    parts = [seen]
    if tick["done"]:
        parts.append(f"{tick['done']} token(s) already recorded")
    if tick["waiting"]:
        parts.append(f"{tick['waiting']} token(s) waiting for their active run")
    if tick["retrying"]:
        parts.append(f"{tick['retrying']} token(s) whose run failed waiting for their automatic relaunch")
    if tick["stuck"]:
        parts.append(f"{tick['stuck']} token(s) stuck after every automatic relaunch failed (see the cursor)")
    outcome = tick_outcome(tick, 0, threshold)
    idle = outcome.startswith(IDLE)
    return f"{outcome} — " + "; ".join(parts) + ("; nothing to do" if idle else "; no new run needed")


#: The outcome of a tick that consumed nothing and found no token to launch, record or wait for.
IDLE = "idle"


def tick_outcome(tick: dict[str, int], requested: int, threshold: int = 5) -> str:
    """What the tick did, every count (`2 launched, 1 dead-letter, 1 below 5`), or `idle`; then how many
    tokens are stuck, if any (`idle, 1 stuck`). The tick list shows the start of the cursor, which starts
    with it (`{"why": "idle", …`)."""
    parts = [(requested, "launched")] + [
        (tick.get(key, 0), label)
        for key, label in (
            ("done", "recorded"),
            ("waiting", "waiting"),
            ("invalid", "dead-letter"),
            ("below_threshold", f"below {threshold}"),
        )
    ]
    # `stuck` is a gauge (tokens that gave up earlier), not work of this tick: it follows the outcome.
    stuck = [f"{tick['stuck']} stuck"] if tick.get("stuck") else []
    happened = [f"{n} {label}" for n, label in parts if n]
    if not happened:
        return ", ".join([IDLE if not tick["consumed"] else f"{tick['consumed']} consumed", *stuck])
    return ", ".join(happened + stuck)


def stuck_report(inbox: RecordInbox) -> list[dict]:
    """The first stuck tokens with the run that last failed, for the tick log and the cursor."""
    report = []
    for entry in inbox.stuck_entries(limit=STUCK_LISTED):
        line = {"token_address": entry.token_address, "failures": entry.failures}
        if entry.last_failed_run_id:
            line["last_failed_run_id"] = entry.last_failed_run_id
        if entry.last_failed_at:
            line["last_failed_at"] = entry.last_failed_at.isoformat()
        report.append(line)
    return report


SENSOR_DESCRIPTION = (
    "Evaluated at every pass of the daemon's sensor loop, i.e. every 5 s (the 2 s minimum "
    "interval shown as its frequency is only a floor, so no pass is skipped): drains token.flow (bounded per "
    "tick) into the record inbox and launches one record_token_job run per qualifying token without a marker "
    "or an active run. A tick that starts no run is Skipped with the reason, which starts with every count "
    "(`1 dead-letter, 1 below 5`) or `idle` (queue empty, nothing waiting); so does the cursor's `why`. A tick "
    "that cannot reach RabbitMQ, MongoDB or Redis is Skipped with one line naming it (`FAILED — RabbitMQ "
    "unreachable: …`). Each "
    "tick logs (and the cursor keeps, with running totals): consumed, invalid (dead-lettered to <queue>.dlq "
    "with the reason), below_threshold (acked, no run), queued (into the inbox), launched (new runs), "
    "relaunched (of which automatic relaunches after a failed run, with backoff), rerequested (an earlier "
    "tick's run key again, no new run), done (already recorded, removed from the inbox), waiting (token has an "
    "active run), retrying (tokens waiting for their next automatic relaunch), stuck (tokens whose relaunches "
    "all failed; the cursor lists them with the run that last failed)."
)


def build_token_flow_sensor(limits: TickLimits | None = None) -> dg.SensorDefinition:
    """The `token_flow_sensor` with these per-tick limits and relaunch schedule; by default the
    project's, with the deployment's `SOCIALREC_RELAUNCH_BACKOFF_MINUTES` (read once, here). Tests
    and benches build their own (no grace, no backoff) instead of changing a module global."""
    tick_limits = limits if limits is not None else tick_limits_from_env(os.environ)

    @dg.sensor(
        name="token_flow_sensor",
        job_name=RECORD_TOKEN_JOB,
        # Below the daemon's 5 s sensor loop, so every wake-up ticks; still a bound if the loop gets
        # faster (docs/decisions.md, "The sensor ticks on every daemon wake-up").
        minimum_interval_seconds=2,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=SENSOR_DESCRIPTION,
    )
    def token_flow_sensor(
        context: dg.SensorEvaluationContext,
        mongo: MongoResource,
        rabbitmq: RabbitMQResource,
        recording: RecordingSettingsParam,
    ) -> dg.SensorResult:
        try:
            return evaluate_tick(context, mongo, rabbitmq, recording, tick_limits)
        except Exception as exc:
            line = unreachable_service(exc)
            if line is None:
                raise
            # A service that is down is one line naming it, not a traceback (docs/operations-ui.md).
            context.log.error(line)
            return dg.SensorResult(skip_reason=f"{UNREACHABLE_PREFIX}{line}")

    return token_flow_sensor


#: Starts the skip reason of a tick that could not reach a service (filter the Ticks tab on it).
UNREACHABLE_PREFIX = "FAILED — "


def evaluate_tick(
    context: dg.SensorEvaluationContext,
    mongo: MongoResource,
    rabbitmq: RabbitMQResource,
    recording: RecordingSettingsParam,
    limits: TickLimits,
) -> dg.SensorResult:
    """Drain, plan, log; the result's cursor starts with what the tick did."""
    try:
        threshold = recording.settings().af_threshold  # malformed → raises: nothing is consumed
    except SettingError as exc:
        raise SettingError(str(exc)) from None  # one paragraph naming the variable, no inner frames
    store = mongo.store()
    inbox = RecordInbox(store.db)
    drained = TokenFlowDrain(
        rabbitmq.url, rabbitmq.queue, inbox, threshold, limits, exchange=rabbitmq.exchange
    ).run()
    for reason, count in drained.invalid_reasons.most_common():
        context.log.warning(
            f"dead-lettered {count} token.flow message(s) to {dead_letter_queue(rabbitmq.queue)}: {reason}"
        )
    plan = plan_launches(
        inbox,
        store.tokens.find_existing_addresses,
        active_tokens(context.instance),
        datetime.now(UTC),
        limits,
        ended_runs=lambda keys: ended_runs(context.instance, keys),
        lower_first_transfer=store.tokens.lower_first_transfer_at,
    )
    tick = tick_counts(drained.as_dict(), plan, inbox)
    warning = upstream_404_warning(context.instance)
    stuck = log_tick(context, tick, inbox, warning)
    requests = [run_request(launch, rabbitmq.is_sandbox) for launch in plan.launches]
    return tick_result(context.cursor, tick, requests, stuck, warning, threshold)


def tick_counts(drained: dict[str, int], plan: LaunchPlan, inbox: RecordInbox) -> dict[str, int]:
    return {
        **drained,
        "launched": plan.new_launches,
        "relaunched": plan.relaunched,
        "rerequested": plan.rerequested,
        "done": plan.done,
        "waiting": plan.waiting,
        "retrying": inbox.count_in_state(RETRYING),
        "stuck": inbox.count_in_state(STUCK),
    }


def log_tick(
    context: dg.SensorEvaluationContext, tick: dict[str, int], inbox: RecordInbox, warning: str | None
) -> list[dict]:
    """The tick's log lines (none on an idle tick); returns the stuck tokens for the cursor."""
    if warning:
        context.log.warning(warning)
    stuck = stuck_report(inbox) if tick["stuck"] else []
    for line in stuck:
        context.log.warning(
            f"token {line['token_address']} is stuck after {line['failures']} failed run(s); last failed run "
            f"{line.get('last_failed_run_id', 'unknown')}: fix the cause, then launch record_token_job for it "
            "(or wait for its next event)"
        )
    if any(v for k, v in tick.items() if k not in ("retrying", "stuck")) or stuck:
        # an idle tick says so in the tick list; it does not fill the terminal every 5 s
        context.log.info("token.flow tick " + " ".join(f"{k}={v}" for k, v in tick.items()))
    return stuck


def tick_result(
    cursor: str | None,
    tick: dict[str, int],
    requests: list[dg.RunRequest],
    stuck: list[dict],
    warning: str | None,
    threshold: int,
) -> dg.SensorResult:
    # `why` first: the tick list shows the start of the cursor, so each row says what the tick did
    # (the full reason of a skipped tick is its skip reason, on the status tag and in the tick's page).
    text = json.dumps(
        {
            "why": tick_outcome(tick, len(requests), threshold),
            "last_tick": dict(sorted(tick.items())),
            "totals": dict(sorted(_totals(cursor, tick).items())),
            "stuck_tokens": stuck,
        }
    )
    reason = None if requests else skip_reason(tick, threshold) + (f". WARNING: {warning}" if warning else "")
    return dg.SensorResult(run_requests=requests or None, skip_reason=reason, cursor=text)


#: The code location's sensor (definitions.py): the project's limits and the deployment's backoff.
token_flow_sensor = build_token_flow_sensor()
