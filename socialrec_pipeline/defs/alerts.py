"""Alert sensors: a failed run, a check that turned WARN/ERROR (`keeping_up` red among them) and a
token whose automatic relaunches gave up are posted to `SOCIALREC_ALERT_WEBHOOK_URL`.

The sending, the throttle (one message per subject per hour) and the texts live in
`recording/alerts.py`; these sensors only find what to say. Both run in the daemon, on by default,
and do nothing while the webhook is unset. The webhook and the UI base URL in the links are
deploy-time settings read from the environment; there is no run config to change them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable

import dagster as dg

from socialrec_pipeline.defs.resources import MongoResource, RedisResource
from socialrec_pipeline.defs.tags import TOKEN_TAG
from socialrec_pipeline.recording.alerts import (
    AlertSender,
    AlertSettings,
    check_text,
    failed_run_text,
    stuck_token_text,
)
from socialrec_pipeline.stream.inbox import RecordInbox

#: Stuck tokens looked at per evaluation (each alerted once per failed run that made it stuck).
STUCK_SCANNED = 50


def _sender(redis: RedisResource) -> tuple[AlertSender, AlertSettings]:
    settings = AlertSettings.from_env(os.environ)
    return AlertSender(settings, redis.client()), settings


def _first_step_failure(context: dg.RunFailureSensorContext) -> tuple[str | None, str | None]:
    for event in context.get_step_failure_events():
        error = event.step_failure_data.error if event.step_failure_data else None
        # Dagster wraps the op's exception: the innermost cause is what the op raised.
        while error is not None and error.cause is not None:
            error = error.cause
        return event.step_key, error.message.strip() if error else event.message
    return None, context.failure_event.message


@dg.run_failure_sensor(
    name="alert_on_run_failure",
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Posts every failed run of this code location (job, token, the failing step's message and a "
    "link to the run) to SOCIALREC_ALERT_WEBHOOK_URL; at most one message per job and token per hour. "
    "Does nothing while the variable is unset.",
)
def alert_on_run_failure(context: dg.RunFailureSensorContext, redis: RedisResource) -> None:
    sender, settings = _sender(redis)
    if not sender.enabled:
        return
    run = context.dagster_run
    token = run.tags.get(TOKEN_TAG)
    step, message = _first_step_failure(context)
    text = failed_run_text(
        job=run.job_name, token=token, step=step, message=message, link=settings.run_link(run.run_id)
    )
    if sender.send(f"run-failed:{run.job_name}:{token or run.run_id}", text):
        context.log.info(f"alert sent for failed run {run.run_id}")


def _check_keys(context: dg.SensorEvaluationContext) -> Iterable[dg.AssetCheckKey]:
    repo = context.repository_def
    assert repo is not None
    # Every check of the code location: separate check definitions and checks declared on an asset.
    return sorted(repo.asset_graph.asset_check_keys, key=lambda key: key.to_user_string())


def _evaluation(record) -> tuple[bool, str, str | None]:
    """(bad?, severity, description) of an execution record's evaluation."""
    evaluation = record.event.asset_check_evaluation if record.event else None
    if evaluation is None:  # planned or still running: nothing to say yet
        return False, "", None
    bad = not evaluation.passed
    return bad, evaluation.severity.value, evaluation.description


@dg.sensor(
    name="alert_on_check_and_stuck_token",
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Every minute: posts a check that turned WARN or ERROR since its last evaluation (keeping_up "
    "among them) and every token whose automatic relaunches gave up, to SOCIALREC_ALERT_WEBHOOK_URL; at most "
    "one message per subject per hour. Does nothing while the variable is unset.",
)
def alert_on_check_and_stuck_token(
    context: dg.SensorEvaluationContext, redis: RedisResource, mongo: MongoResource
) -> dg.SkipReason:
    sender, settings = _sender(redis)
    if not sender.enabled:
        return dg.SkipReason("SOCIALREC_ALERT_WEBHOOK_URL is unset: no alerts are sent")
    cursor = json.loads(context.cursor) if context.cursor else {}
    #: check → whether its latest evaluation was bad when last looked at: only a turn to bad is posted.
    was_bad: dict[str, bool] = cursor.get("checks", {})
    sent = 0
    for key in _check_keys(context):
        record = context.instance.get_latest_asset_check_evaluation_record(key)
        if record is None:
            continue
        name = key.to_user_string()
        bad, severity, description = _evaluation(record)
        turned_bad = bad and not was_bad.get(name, False)
        if turned_bad and sender.send(
            f"check:{name}",
            check_text(
                asset=key.asset_key.to_user_string(),
                check=key.name,
                severity=severity,
                description=description,
                link=settings.run_link(record.run_id) if record.run_id else None,
            ),
        ):
            sent += 1
        elif turned_bad:
            continue  # not delivered (webhook down, or throttled): look again on the next evaluation
        was_bad[name] = bad
    alerted_stuck: dict[str, str] = cursor.get("stuck", {})
    still_stuck: dict[str, str] = {}
    for entry in RecordInbox(mongo.db()).stuck_entries(limit=STUCK_SCANNED):
        marker = entry.last_failed_run_id or entry.entry_id
        if alerted_stuck.get(entry.token_address) != marker:
            text = stuck_token_text(
                token=entry.token_address,
                symbol=entry.symbol,
                failures=entry.failures,
                link=settings.run_link(entry.last_failed_run_id) if entry.last_failed_run_id else None,
            )
            if not sender.send(f"stuck:{entry.token_address}:{marker}", text):
                continue
            sent += 1
        still_stuck[entry.token_address] = marker
    context.update_cursor(json.dumps({"checks": was_bad, "stuck": still_stuck}, sort_keys=True))
    return dg.SkipReason(f"{sent} alert(s) sent" if sent else "nothing new to alert")


alert_sensors = [alert_on_run_failure, alert_on_check_and_stuck_token]
