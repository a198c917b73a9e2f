"""The code location bench/soak.py runs the daemon against: the project's own definitions, with two
deploy-time changes the soak needs to finish in minutes instead of hours, both printed by the bench.

- `SOAK_RELAUNCH_SCALE` (a fraction, e.g. `0.01`): the sensor's relaunch grace and every backoff
  step multiplied by it, so the whole relaunch schedule (and `stuck`) plays out inside the settle
  period. Unset: the project's schedule, unchanged.
- `SOAK_SCHEDULE_MINUTES` (e.g. `1`): the retry and reconcile schedules tick every that many minutes
  instead of hourly (retry: the `error` partition; reconcile: the hour that closed last). Unset:
  the project's hourly schedules.

Everything else — jobs, sensor, resources, limits — is `socialrec_pipeline.defs.definitions.defs`.
"""

from __future__ import annotations

import os
from datetime import UTC, timedelta

import dagster as dg

from socialrec_pipeline.defs import definitions as project
from socialrec_pipeline.defs import token_flow
from socialrec_pipeline.defs.reconcile import reconcile_job
from socialrec_pipeline.defs.retry import retry_job, retry_schedule
from socialrec_pipeline.stream.intake import TickLimits

_scale = float(os.environ.get("SOAK_RELAUNCH_SCALE", "1") or "1")


def _sensors() -> list:
    if _scale == 1:
        return list(project.defs.sensors or [])
    # The project's token_flow_sensor gives way to one built with the scaled schedule; the rest stay.
    limits = TickLimits()
    scaled = token_flow.build_token_flow_sensor(
        TickLimits(
            max_seconds=limits.max_seconds,
            relaunch_grace=limits.relaunch_grace * _scale,
            backoff=tuple(step * _scale for step in limits.backoff),
            sweep_interval=limits.sweep_interval * _scale,
        )
    )
    return [scaled if s.name == scaled.name else s for s in project.defs.sensors or []]


_minutes = int(os.environ.get("SOAK_SCHEDULE_MINUTES", "0") or "0")


def _every(minutes: int) -> str:
    return "* * * * *" if minutes <= 1 else f"*/{minutes} * * * *"


@dg.schedule(job=retry_job, cron_schedule=_every(_minutes), execution_timezone="UTC",
             default_status=dg.DefaultScheduleStatus.RUNNING, name="soak_retry_schedule")  # fmt: skip
def soak_retry_schedule(context: dg.ScheduleEvaluationContext):
    stamp = context.scheduled_execution_time.strftime("%Y-%m-%dT%H:%M")
    return dg.RunRequest(run_key=f"error:{stamp}", partition_key="error")


@dg.schedule(job=reconcile_job, cron_schedule=_every(_minutes), execution_timezone="UTC",
             default_status=dg.DefaultScheduleStatus.RUNNING, name="soak_reconcile_schedule")  # fmt: skip
def soak_reconcile_schedule(context: dg.ScheduleEvaluationContext):
    at = context.scheduled_execution_time.astimezone(UTC)
    hour = (at - timedelta(hours=1)).replace(minute=0, second=0, microsecond=0)
    stamp = at.strftime("%Y-%m-%dT%H:%M")
    return dg.RunRequest(run_key=f"soak:{stamp}", partition_key=hour.strftime("%Y-%m-%d-%H:%M"))


def _schedules() -> list:
    if not _minutes:
        return list(project.defs.schedules or [])
    # The hourly retry and reconcile schedules give way to the frequent ones; the rest stay.
    kept = [s for s in project.defs.schedules or [] if s.name not in (retry_schedule.name, "reconcile_schedule")]
    return [*kept, soak_retry_schedule, soak_reconcile_schedule]


defs = dg.Definitions(
    assets=project.defs.assets,
    asset_checks=project.defs.asset_checks,
    jobs=project.defs.jobs,
    schedules=_schedules(),
    sensors=_sensors(),
    resources=project.defs.resources,
)

