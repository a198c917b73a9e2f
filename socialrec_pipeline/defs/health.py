"""`recording_health`: hourly numbers about the recording, plotted by Dagster from its metadata.

Each materialization stores the figures of `store/health.py` plus the token.flow queue and
dead-letter depths. Dagster draws every numeric metadata key as a plot on the asset's page
(Asset → Plots / Insights). The `keeping_up` check turns red when no token was recorded for
`STALL_HOURS` while qualifying work waits (open inbox entries or messages in the queue), and WARN
when a figure it needs could not be read (broker down, a Mongo query failed or timed out): unknown
is not healthy. Unread figures are -1 in the plots and named in `unknown_figures`.
"""

from collections.abc import Iterable
from datetime import UTC, datetime

import dagster as dg

from socialrec_pipeline.defs.assets import OPS_GROUP, OWNERS
from socialrec_pipeline.defs.resources import MongoResource, RabbitMQResource, RecordingSettingsParam
from socialrec_pipeline.defs.tags import JOB_FAMILY_TAG
from socialrec_pipeline.store.health import read_recording_health
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
    description="Hourly figures (plotted): tokens recorded in the last hour, URL status counts, retryable "
    "backlog, exhausted, inbox / queue / dead-letter depth, per-provider attempts, errors and error rate "
    "over the last hour, paid calls. See store/health.py for how each is derived.",
)
def recording_health(
    context: dg.AssetExecutionContext,
    mongo: MongoResource,
    rabbitmq: RabbitMQResource,
    recording: RecordingSettingsParam,
):
    now = datetime.now(UTC)
    reading = read_recording_health(mongo.db(), now, recording.settings().paid_platforms)
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
    verdict, why = keeping_up(figures, unknown)
    context.log.info(
        "recording health "
        + " ".join(f"{k}={v}" for k, v in figures.items() if not k.startswith(("attempts_", "errors_")))
    )
    yield dg.MaterializeResult(
        metadata={
            **{
                k: (dg.MetadataValue.float(v) if isinstance(v, float) else dg.MetadataValue.int(v))
                for k, v in figures.items()
            },
            "figures_unknown": dg.MetadataValue.int(len(unknown)),
            "unknown_figures": dg.MetadataValue.json(unknown),
        }
    )
    yield dg.AssetCheckResult(
        check_name="keeping_up",
        passed=verdict == "ok",
        # Unknown is not healthy: a WARN (yellow), not green and not the red of a real stall.
        severity=dg.AssetCheckSeverity.WARN if verdict == "unknown" else dg.AssetCheckSeverity.ERROR,
        description=why,
        metadata={
            "verdict": verdict,
            "last_recorded_age_min": float(figures["last_recorded_age_min"]),
            "inbox_open": int(figures["inbox_open"]),
            "queue_depth": int(figures["queue_depth"]),
            "unknown_figures": dg.MetadataValue.json(sorted(unknown)),
            "stall_hours": STALL_HOURS,
        },
    )


recording_health_job = dg.define_asset_job(
    "recording_health_job",
    selection=dg.AssetSelection.assets("recording_health"),
    executor_def=dg.in_process_executor,
    tags={JOB_FAMILY_TAG: "health"},
    description="Materialize recording_health (its numbers are plotted on the asset's page).",
)

recording_health_schedule = dg.ScheduleDefinition(
    name="recording_health_schedule",
    job=recording_health_job,
    cron_schedule="0 * * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Every hour at :00 UTC: materialize recording_health.",
)
