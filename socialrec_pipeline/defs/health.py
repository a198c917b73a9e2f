"""`recording_health`: the deployment at a glance — a verdict, eight plots, a per-provider table.

It is materialized when the deployment starts (`recording_health_sensor`, when never materialized)
and every 15 minutes (`recording_health_schedule`). Its first metadata entry is the verdict
(`healthy` / `degraded` / `down: <reason>`, domain/health_verdict.py); then the eight figures of
`PLOTTED`, which Dagster draws as plots (Asset → Plots), the per-provider table and every figure of
`store/health.py` as one JSON entry. The `keeping_up` check turns red when no token was recorded for
`STALL_HOURS` while qualifying work waits (open inbox entries or messages in the queue), and WARN
when a figure it needs could not be read (broker down, a Mongo query failed or timed out): unknown
is not healthy. Unread figures are -1 in the plots and named in `unknown_figures`.
"""

from collections.abc import Iterable
from datetime import UTC, datetime

import dagster as dg

from socialrec_pipeline.defs.assets import OPS_GROUP, OWNERS
from socialrec_pipeline.defs.deployment_ready import CHECK_NAME as READY_CHECK
from socialrec_pipeline.defs.resources import MongoResource, RabbitMQResource, RecordingSettingsParam
from socialrec_pipeline.defs.tags import JOB_FAMILY_TAG
from socialrec_pipeline.domain.enums import Platform
from socialrec_pipeline.domain.health_verdict import ProviderFigures, Readiness, health_verdict
from socialrec_pipeline.store.health import URL_FIGURES, read_recording_health
from socialrec_pipeline.stream.broker import queue_depths

#: Hours without a recorded token, while work waits, after which `keeping_up` fails.
STALL_HOURS = 2


def stalled(figures: dict, stall_hours: float = STALL_HOURS) -> tuple[bool, str]:
    """(stalled?, why). Work waits when the inbox has open entries or the queue holds messages."""
    waiting = int(figures.get("inbox_open", 0)) + max(int(figures.get("queue_depth", 0)), 0)
    age = float(figures.get("last_recorded_age_min", -1))
    quiet = age < 0 or age >= stall_hours * 60
    if waiting and quiet:
        since = "no token has ever been recorded" if age < 0 else f"the last token was recorded {age:.0f} min ago"
        return True, (
            f"{since} while {figures.get('inbox_open', 0)} inbox entr(ies) and {figures.get('queue_depth', 0)} "
            "queued message(s) wait: check the token_flow_sensor ticks and the record_token_job runs"
        )
    if not waiting:
        return False, "nothing waits to be recorded"
    return False, f"last token recorded {age:.0f} min ago; {waiting} waiting"


#: The figures `keeping_up` decides on.
KEEPING_UP_FIGURES = ("inbox_open", "queue_depth", "last_recorded_age_min")


def keeping_up(figures: dict, unknown: Iterable[str] = (), stall_hours: float = STALL_HOURS) -> tuple[str, str]:
    """("ok" | "stalled" | "unknown", why). A stall the readable figures already show is reported as
    such; otherwise a figure it needs that could not be read (named in `unknown`, or a queue depth
    of -1) makes the answer "unknown", never "ok"."""
    unread = {name for name in unknown if name in KEEPING_UP_FIGURES}
    if float(figures.get("queue_depth", 0)) < 0:  # the broker could not be read
        unread.add("queue_depth")
    waiting_read = not unread & {"inbox_open", "queue_depth"}
    if waiting_read and not int(figures.get("inbox_open", 0)) + int(figures.get("queue_depth", 0)):
        unread.discard("last_recorded_age_min")  # nothing waits: no stall, however old the last marker
    # Unread figures are taken as the values that cannot show a stall.
    known = {**figures, **{name: 0 for name in unread}}
    is_stalled, why = stalled(known, stall_hours)
    if is_stalled:
        return "stalled", why
    if unread:
        names = ", ".join(sorted(unread))
        return "unknown", f"could not read {names}: whether the recording keeps up is unknown ({why})"
    return "ok", why


#: The plotted figures, in the order an operator asks: is it recording, how much waits, what is
#: stuck, what failed, what it costs. Every other figure is in `figures` (one JSON entry).
PLOTTED = (
    "tokens_recorded_last_hour",
    "retryable_backlog",
    "queue_depth",
    "inbox_open",
    "inbox_stuck",
    "dead_letter_depth",
    "error_rate_last_hour",
    "paid_calls_last_hour",
)

PROVIDER_TABLE_SCHEMA = dg.TableSchema(
    columns=[
        dg.TableColumn("platform", "string", description="platform code"),
        dg.TableColumn("attempts", "int", description="URLs last attempted in the last hour (an API call)"),
        dg.TableColumn("errors", "int", description="of which ended in error"),
        dg.TableColumn("error_rate", "float", description="errors / attempts (0 when nothing was attempted)"),
    ]
)


def provider_figures(figures: dict) -> tuple[ProviderFigures, ...]:
    """Per platform, busiest first (ties by code), from the `*_last_hour_<p>` figures."""
    rows = [
        ProviderFigures(
            str(p), int(figures.get(f"attempts_last_hour_{p}", 0)), int(figures.get(f"errors_last_hour_{p}", 0))
        )
        for p in Platform
    ]
    return tuple(sorted(rows, key=lambda r: (-r.attempts, r.platform)))


def error_rate_last_hour(providers: tuple[ProviderFigures, ...]) -> float:
    attempts = sum(max(p.attempts, 0) for p in providers)
    return round(sum(max(p.errors, 0) for p in providers) / attempts, 4) if attempts else 0.0


def provider_table(providers: tuple[ProviderFigures, ...]) -> dg.TableMetadataValue:
    return dg.MetadataValue.table(
        records=[
            dg.TableRecord(
                {
                    "platform": p.platform,
                    "attempts": p.attempts,
                    "errors": p.errors,
                    "error_rate": round(p.errors / p.attempts, 4) if p.attempts > 0 else 0.0,
                }
            )
            for p in providers
        ],
        schema=PROVIDER_TABLE_SCHEMA,
    )


def latest_readiness(instance: dg.DagsterInstance) -> Readiness | None:
    """The latest completed `deployment_ready` evaluation in this instance, if any."""
    key = dg.AssetCheckKey(dg.AssetKey("recording_health"), READY_CHECK)
    record = instance.get_latest_asset_check_evaluation_record(key)
    evaluation = record.event.asset_check_evaluation if record is not None and record.event else None
    if evaluation is None:
        return None
    blocking = evaluation.severity == dg.AssetCheckSeverity.ERROR
    return Readiness(evaluation.passed, blocking, evaluation.description or "")


def read_figures(context: dg.AssetExecutionContext, mongo, rabbitmq, recording) -> tuple[dict, dict]:
    """(figures, unknown): the store's figures plus the token.flow queue and dead-letter depths."""
    reading = read_recording_health(mongo.db(), datetime.now(UTC), recording.settings().paid_platforms)
    figures: dict = dict(reading.figures)
    unknown = dict(reading.unknown)
    try:
        depths = queue_depths(rabbitmq.url, rabbitmq.queue)
    except Exception as exc:  # the broker being down is itself worth a point, not a failed asset
        context.log.warning(f"token.flow queue depth unavailable ({type(exc).__name__}: {exc})")
        depths = {"queue": None, "dead_letter": None}
    for name, key in (("queue_depth", "queue"), ("dead_letter_depth", "dead_letter")):
        figures[name] = depths[key] if depths[key] is not None else -1
        if depths[key] is None:
            unknown[name] = "the broker could not be read"
    for name, why_unknown in unknown.items():
        context.log.warning(f"recording health: {name} unknown ({why_unknown})")
    return figures, unknown


def health_metadata(figures: dict, unknown: dict, verdict: str, reason: str) -> dict:
    """`verdict` first, then the plots in PLOTTED order, the provider table, every figure as JSON."""
    providers = provider_figures(figures)
    plotted = {**figures, "error_rate_last_hour": error_rate_last_hour(providers)}
    if URL_FIGURES in unknown:
        plotted["error_rate_last_hour"] = -1.0
    return {
        "verdict": dg.MetadataValue.text(f"{verdict}: {reason}"),
        **{
            k: dg.MetadataValue.float(float(plotted[k]))
            if k.startswith("error_rate")
            else dg.MetadataValue.int(int(plotted[k]))
            for k in PLOTTED
            if k in plotted
        },
        "providers_last_hour": provider_table(providers),
        "unknown_figures": dg.MetadataValue.json(unknown),
        "figures": dg.MetadataValue.json(dict(sorted(figures.items()))),
    }


@dg.asset(
    name="recording_health",
    group_name=OPS_GROUP,
    owners=OWNERS,
    kinds={"mongodb", "rabbitmq"},
    deps=["tokens", "record_inbox", "token_flow"],
    check_specs=[
        dg.AssetCheckSpec(
            "keeping_up",
            asset="recording_health",
            description=f"Red when no token was recorded for {STALL_HOURS} h while the inbox or the token.flow "
            "queue holds work.",
        )
    ],
    description="The deployment at a glance, materialized at start and every 15 minutes. The first metadata "
    "entry, `verdict`, is healthy / degraded / down with the reason (domain/health_verdict.py). Plotted, in "
    "this order: tokens recorded in the last hour, retryable backlog, token.flow queue depth, inbox open / "
    "stuck, dead-letter depth, error rate and paid calls over the last hour; `providers_last_hour` is the "
    "per-provider table, `figures` every figure (store/health.py says how each is derived).",
)
def recording_health(
    context: dg.AssetExecutionContext,
    mongo: MongoResource,
    rabbitmq: RabbitMQResource,
    recording: RecordingSettingsParam,
):
    figures, unknown = read_figures(context, mongo, rabbitmq, recording)
    state, why = keeping_up(figures, unknown)
    verdict, reason = health_verdict(
        (state, why),
        unknown,
        latest_readiness(context.instance),
        inbox_stuck=max(int(figures.get("inbox_stuck", 0)), 0),
        providers=provider_figures(figures),
    )
    context.log.info(f"recording health: {verdict}: {reason}")
    yield dg.MaterializeResult(metadata=health_metadata(figures, unknown, verdict, reason))
    yield dg.AssetCheckResult(
        check_name="keeping_up",
        passed=state == "ok",
        # Unknown is not healthy: a WARN (yellow), not green and not the red of a real stall.
        severity=dg.AssetCheckSeverity.WARN if state == "unknown" else dg.AssetCheckSeverity.ERROR,
        description=why,
        metadata={
            "verdict": state,
            "last_recorded_age_min": float(figures["last_recorded_age_min"]),
            "inbox_open": int(figures["inbox_open"]),
            "queue_depth": int(figures["queue_depth"]),
            "unknown_figures": dg.MetadataValue.json(sorted(unknown)),
            "stall_hours": STALL_HOURS,
        },
    )


#: How often recording_health is materialized (the schedule), and the sensor's tick.
HEALTH_CRON = "*/15 * * * *"

recording_health_job = dg.define_asset_job(
    "recording_health_job",
    # Its own check, not deployment_ready: the doctor's calls run hourly on their own sensor; the verdict reads
    # its latest evaluation, and recording_health_sensor re-materializes when a newer one exists.
    selection=dg.AssetSelection.assets("recording_health").without_checks()
    | dg.AssetSelection.checks(dg.AssetCheckKey(dg.AssetKey("recording_health"), "keeping_up")),
    executor_def=dg.in_process_executor,
    tags={JOB_FAMILY_TAG: "health"},
    description="Materialize recording_health: the verdict, the plots and the per-provider table.",
)

recording_health_schedule = dg.ScheduleDefinition(
    name="recording_health_schedule",
    job=recording_health_job,
    cron_schedule=HEALTH_CRON,
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Every 15 minutes: materialize recording_health (the verdict and the plots).",
)


def health_due(last_materialized: float | None, last_ready_evaluated: float | None) -> str | None:
    """Why recording_health should be materialized now (None: the schedule's next tick will do).
    Never materialized (a new deployment: the page must answer from minute one), or deployment_ready
    evaluated after the last materialization (the verdict would otherwise lag up to 15 minutes)."""
    if last_materialized is None:
        return "recording_health was never materialized in this instance"
    if last_ready_evaluated is not None and last_ready_evaluated > last_materialized:
        return "deployment_ready was evaluated after the last materialization"
    return None


@dg.sensor(
    name="recording_health_sensor",
    job=recording_health_job,
    # Its conditions change at start and after deployment_ready's hourly run: a tick a minute is
    # soon enough, and each tick costs the idle daemon and code server ~0.1 s of CPU.
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Materializes recording_health when it was never materialized (so a new deployment has its "
    "verdict in its first minute) and when deployment_ready was evaluated after the last materialization; "
    "recording_health_schedule does it every 15 minutes.",
)
def recording_health_sensor(context: dg.SensorEvaluationContext) -> dg.RunRequest | dg.SkipReason:
    instance = context.instance
    latest = instance.get_latest_materialization_event(dg.AssetKey("recording_health"))
    ready = instance.get_latest_asset_check_evaluation_record(
        dg.AssetCheckKey(dg.AssetKey("recording_health"), READY_CHECK)
    )
    last_ready = ready.create_timestamp if ready is not None and ready.event is not None else None
    why = health_due(latest.timestamp if latest else None, last_ready)
    if why is None:
        return dg.SkipReason("recording_health is current (the schedule refreshes it every 15 minutes)")
    # One run per reason and moment: a tick that repeats while the run is queued is deduplicated.
    return dg.RunRequest(run_key=f"health:{latest.timestamp if latest else 0}:{last_ready or 0}")
