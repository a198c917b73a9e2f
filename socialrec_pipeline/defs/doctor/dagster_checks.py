"""Doctor checks of the Dagster instance (storage, daemon, sensors and schedules, the paid pool)
and of the recording gates.
"""

from __future__ import annotations

import time

import dagster as dg

from socialrec_pipeline.defs.doctor.core import (
    REQUIRED_DAEMONS,
    DoctorContext,
    Finding,
    first_line,
)
from socialrec_pipeline.defs.paid_pool import PAID_POOL
from socialrec_pipeline.recording.settings import SettingError

# -- the Dagster instance --------------------------------------------------------------------------


def _instance(ctx: DoctorContext) -> dg.DagsterInstance:
    """One instance for every Dagster check (opened once: a fresh SQLite instance opened by four
    threads at once races on creating its storage)."""
    return ctx.dagster_instance()


def check_dagster_storage(ctx: DoctorContext) -> Finding:
    name = "dagster.storage"
    try:
        instance = _instance(ctx)
        kind = type(instance.run_storage).__name__
        runs = instance.get_run_records(limit=1)
    except Exception as exc:
        return Finding(
            name,
            "fail",
            f"{type(exc).__name__}: {first_line(exc)}",
            "set DAGSTER_HOME to a directory holding dagster.yaml (scripts/run.sh does), and check its storage",
        )
    kind = "PostgreSQL" if "Postgres" in kind else "SQLite" if "Sqlite" in kind or "SqlRun" in kind else kind
    return Finding(name, "ok", f"{kind} storage reachable ({'has runs' if runs else 'no runs yet'})")


def check_dagster_daemon(ctx: DoctorContext) -> Finding:
    name = "dagster.daemon"
    try:
        instance = _instance(ctx)
        beats = instance.get_daemon_heartbeats()
        # The run-queue daemon only with the queued run coordinator (this project's dagster.yaml).
        daemons = [d for d in REQUIRED_DAEMONS if d in instance.get_required_daemon_types()]
    except Exception as exc:
        return Finding(name, "fail", f"not checked: {first_line(exc)}", "set DAGSTER_HOME")
    now = time.time()
    stale = []
    for daemon in daemons:
        beat = beats.get(daemon)
        if beat is None:
            stale.append(f"{daemon} never beat")
        elif now - beat.timestamp > ctx.heartbeat_fresh_s:
            stale.append(f"{daemon} last beat {now - beat.timestamp:.0f} s ago")
    if stale:
        return Finding(
            name,
            "fail",
            "daemon not running: " + "; ".join(stale) + " (no sensor tick, schedule or queued run)",
            "start it: scripts/run.sh (dagster dev), or `dagster-daemon run` with this DAGSTER_HOME",
        )
    return Finding(name, "ok", f"heartbeats fresh ({', '.join(daemons)})")


def check_dagster_instigators(ctx: DoctorContext) -> Finding:
    """The sensor and every schedule of the code location running (stored state, else code default)."""
    name = "dagster.sensor_schedules"
    try:
        instance = _instance(ctx)
        states = {state.name: state.status for state in instance.all_instigator_state()}
        defs = ctx.definitions() if ctx.definitions else _code_location()
        declared = [
            *(("sensor", s.name, s.default_status == dg.DefaultSensorStatus.RUNNING) for s in defs.sensors or []),
            *(("schedule", s.name, s.default_status == dg.DefaultScheduleStatus.RUNNING) for s in defs.schedules or []),
        ]
    except Exception as exc:
        return Finding(name, "fail", f"not checked: {first_line(exc)}", "set DAGSTER_HOME")
    stopped: list[tuple[str, str]] = []
    for kind, instigator, default_running in declared:
        status = states.get(instigator)
        running = default_running if status is None or status.value == "DECLARED_IN_CODE" else status.value == "RUNNING"
        if not running:
            stopped.append((kind, instigator))
    if stopped:
        # A stopped sensor records nothing (token_flow_sensor) or checks nothing; a schedule is catch-up work.
        return Finding(
            name,
            "fail" if any(kind == "sensor" for kind, _ in stopped) else "warn",
            "stopped: " + ", ".join(f"{kind} {n}" for kind, n in stopped),
            "turn them on in the UI (Automation) or `dagster sensor start` / `dagster schedule start`",
        )
    return Finding(name, "ok", f"{len(declared)} running")


def _code_location() -> dg.Definitions:
    from socialrec_pipeline.defs.definitions import defs

    return defs


def check_paid_pool(ctx: DoctorContext) -> Finding:
    name = "dagster.paid_pool"
    try:
        instance = _instance(ctx)
        info = instance.event_log_storage.get_concurrency_info(PAID_POOL)
        limit = info.limit
    except Exception as exc:
        return Finding(
            name,
            "warn",
            f"limit not readable ({first_line(exc)})",
            "set concurrency.pools.default_limit in dagster.yaml (DAGSTER_HOME)",
        )
    if not limit:
        return Finding(
            name,
            "warn",
            f"pool {PAID_POOL!r} has no limit: paid calls are not capped",
            "set concurrency.pools.default_limit in $DAGSTER_HOME/dagster.yaml, or "
            f"`dagster instance concurrency set {PAID_POOL} 2`",
        )
    source = "concurrency.pools.default_limit" if info.using_default_limit else "set on the pool"
    return Finding(name, "ok", f"pool {PAID_POOL!r} limit {limit} ({source})")


# -- the gates -------------------------------------------------------------------------------------


def check_gates(ctx: DoctorContext) -> Finding:
    name = "gates"
    try:
        settings = ctx.settings()
    except SettingError as exc:
        return Finding(name, "fail", f"a setting would fail every run: {exc}".split(". Fix")[0], "fix that variable")
    paid = "on" if settings.enable_paid else "off"
    platforms = ",".join(sorted(p.value for p in settings.paid_platforms))
    return Finding(
        name,
        "ok",
        f"paid {paid} ({platforms}), community {'on' if settings.enable_community else 'off'}, AF threshold "
        f"{settings.af_threshold}; every SOCIALREC_* value valid",
        "" if settings.enable_paid else "SOCIALREC_ENABLE_PAID=true records TikTok/Instagram (billed)",
    )
