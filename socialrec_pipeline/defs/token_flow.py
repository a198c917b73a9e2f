"""`token_flow_sensor`: drains `token.flow` into the record inbox and launches `record_token_job`.

The logic lives in `socialrec_pipeline.stream`; this shell adds what only Dagster knows — which
tokens have an active run — and turns launches into `RunRequest`s keyed `{address}:{inbox entry id}:{generation}`,
so a re-yield after a crash is deduplicated by Dagster.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timezone

import dagster as dg
# The tag the daemon puts on every run it starts from a RunRequest (the request's run key); not
# re-exported by `dagster`, and the only link from an inbox entry's launch to the run it became.
from dagster._core.storage.tags import RUN_KEY_TAG

from socialrec_pipeline.defs.resources import MongoResource, RabbitMQResource, RecordingSettingsParam
from socialrec_pipeline.defs.tags import OUTCOME_TAG, TOKEN_TAG, run_tags
from socialrec_pipeline.stream.broker import dead_letter_queue
from socialrec_pipeline.stream.inbox import RETRYING, STUCK, RecordInbox
from socialrec_pipeline.stream.intake import EndedRun, Launch, TickLimits, TokenFlowDrain, plan_launches

RECORD_TOKEN_JOB = "record_token_job"

#: Queued or running: a token with such a run gets no second one.
ACTIVE_STATUSES = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]

TICK_LIMITS = TickLimits()


def active_tokens(instance: dg.DagsterInstance) -> set[str]:
    runs = instance.get_runs(filters=dg.RunsFilter(job_name=RECORD_TOKEN_JOB, statuses=ACTIVE_STATUSES))
    return {run.tags[TOKEN_TAG] for run in runs if TOKEN_TAG in run.tags}


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
        run_config={
            "ops": {
                "prepare": {
                    "config": {
                        "token_address": launch.token_address,
                        "first_flow_timestamp": first.isoformat() if first else None,
                        "symbol": launch.symbol,
                    }
                }
            }
        },
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


def skip_reason(tick: dict[str, int]) -> str:
    """Shown on a tick that started no run, so the Ticks tab answers "why did nothing run?"."""
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
    return "; ".join(parts) + "; no new run needed"


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


@dg.sensor(
    job_name=RECORD_TOKEN_JOB,
    # The daemon's sensor loop wakes every 5 s (fixed in Dagster 1.13) and skips a sensor whose
    # last tick began less than this long ago. At 5 the tick that began just after the previous
    # wake-up often lost that comparison, so many ticks came 10 s apart; 2 lets every wake-up tick
    # (a tick every 5 s) and still bounds ticks if the loop ever gets faster. An empty-queue tick
    # is ~0.13 s wall, ~20 ms CPU in this function (bench/sensor.py; docs/decisions.md, Dagster).
    minimum_interval_seconds=2,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Every 5 s: drains token.flow (bounded per tick) into the record inbox and launches one "
    "record_token_job run per qualifying token without a marker or an active run. Each tick logs (and the "
    "cursor keeps, with running totals): consumed, invalid (dead-lettered to <queue>.dlq with the reason), "
    "below_threshold (acked, no run), queued (into the inbox), launched (new runs), relaunched (of which "
    "automatic relaunches after a failed run, with backoff), rerequested (an earlier tick's run key again, no "
    "new run), done (already recorded, removed from the inbox), waiting (token has an active run), retrying "
    "(tokens waiting for their next automatic relaunch), stuck (tokens whose relaunches all failed; the cursor "
    "lists them with the run that last failed).",
)
def token_flow_sensor(
    context: dg.SensorEvaluationContext,
    mongo: MongoResource,
    rabbitmq: RabbitMQResource,
    recording: RecordingSettingsParam,
) -> dg.SensorResult:
    threshold = recording.settings().af_threshold  # malformed → raises: nothing is consumed
    store = mongo.store()
    inbox = RecordInbox(store.db)
    drained = TokenFlowDrain(
        rabbitmq.url, rabbitmq.queue, inbox, threshold, TICK_LIMITS, exchange=rabbitmq.exchange
    ).run()
    for reason, count in drained.invalid_reasons.most_common():
        context.log.warning(f"dead-lettered {count} token.flow message(s) to {dead_letter_queue(rabbitmq.queue)}: {reason}")

    plan = plan_launches(
        inbox,
        store.tokens.find_existing_addresses,
        active_tokens(context.instance),
        datetime.now(timezone.utc),
        TICK_LIMITS,
        ended_runs=lambda keys: ended_runs(context.instance, keys),
        lower_first_transfer=store.tokens.lower_first_transfer_at,
    )
    tick = {
        **drained.as_dict(),
        "launched": plan.new_launches,
        "relaunched": plan.relaunched,
        "rerequested": plan.rerequested,
        "done": plan.done,
        "waiting": plan.waiting,
        "retrying": inbox.count_in_state(RETRYING),
        "stuck": inbox.count_in_state(STUCK),
    }
    context.log.info("token.flow tick " + " ".join(f"{k}={v}" for k, v in tick.items()))
    stuck = stuck_report(inbox) if tick["stuck"] else []
    for line in stuck:
        context.log.warning(
            f"token {line['token_address']} is stuck after {line['failures']} failed run(s); last failed run "
            f"{line.get('last_failed_run_id', 'unknown')}: fix the cause, then launch record_token_job for it "
            "(or wait for its next event)"
        )
    cursor = json.dumps(
        {"last_tick": tick, "totals": _totals(context.cursor, tick), "stuck_tokens": stuck}, sort_keys=True
    )
    requests = [run_request(launch, rabbitmq.is_sandbox) for launch in plan.launches]
    return dg.SensorResult(
        run_requests=requests or None,
        skip_reason=None if requests else skip_reason(tick),
        cursor=cursor,
    )
