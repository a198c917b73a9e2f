"""The sensor's limits per tick and the relaunch schedule (a deploy-time setting)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from socialrec_pipeline.recording.settings import SettingError


@dataclass(frozen=True)
class TickLimits:
    #: Dagster kills a tick after 60 s; the drain stops well before, leaving time to plan launches.
    max_seconds: float = 15.0
    max_messages: int = 50_000
    #: How long an empty queue is waited on before the drain ends.
    idle_timeout_s: float = 0.1
    #: A tick that finds the queue empty listens this long for the first message instead of ending
    #: at once: the daemon starts a sensor tick at most every 5 s, so an event otherwise waited
    #: ~2.5 s on average for the next tick; a listening tick takes it within `idle_timeout_s`, and an
    #: idle deployment runs a tick every ~`first_message_wait_s` instead of every 5 s. 0 = no wait.
    first_message_wait_s: float = 0.0
    prefetch: int = 1_000
    ack_every: int = 500
    #: Launches per tick (the rest wait for the next tick; the run queue limits concurrency anyway).
    max_launches: int = 500
    #: A launched entry with neither an active nor an ended run is re-requested (same run key, so
    #: harmless) for this long, covering a tick whose requests were lost after the inbox was
    #: updated; it is also the shortest interval between two launches of one token that events
    #: ask for (same as the unknown-token cache TTL). A run that ended goes to the backoff at once.
    relaunch_grace: timedelta = timedelta(minutes=5)
    #: Automatic relaunches of a token whose run ended without a marker for a reason a later run
    #: can fix, each this long after the tick that saw the previous run end (the grace above is not
    #: added: it only covers a request that never became a run); after the last one the entry is
    #: `stuck` (visible, relaunched only by a new event). A new event resets the count. 7 runs over
    #: 3 h 21 min plus the runs' own time: a Redis, MongoDB or SolTracker outage of that length is an
    #: incident an operator is already looking at.
    backoff: tuple[timedelta, ...] = tuple(timedelta(minutes=m) for m in (1, 5, 15, 60, 60, 60))
    #: How often a resting entry (`idle`, `stuck`) is checked for a marker written elsewhere
    #: (reconcile, a manual run), which removes it.
    sweep_interval: timedelta = timedelta(minutes=10)
    #: An `idle` entry (green run, nothing recorded: unknown upstream) with no event for this long
    #: is removed; a new event creates it again. Keeps `record_inbox` bounded.
    idle_retention: timedelta = timedelta(days=7)


#: Deploy-time setting: the relaunch backoff in minutes, comma-separated (the sandbox shortens it so a
#: token that keeps failing gives up within minutes; production keeps the default).
BACKOFF_VARIABLE = "SOCIALREC_RELAUNCH_BACKOFF_MINUTES"
DEFAULT_BACKOFF_MINUTES = (1, 5, 15, 60, 60, 60)
_MAX_BACKOFF_STEPS = 12
_MAX_BACKOFF_MINUTES = 1440


def relaunch_backoff(environ: Mapping[str, str]) -> tuple[timedelta, ...]:
    """The backoff steps from `SOCIALREC_RELAUNCH_BACKOFF_MINUTES`, or the default when unset.
    A malformed value raises `SettingError` (the code location does not load): never a silent guess."""
    raw = (environ.get(BACKOFF_VARIABLE) or "").strip()
    if not raw:
        return tuple(timedelta(minutes=m) for m in DEFAULT_BACKOFF_MINUTES)
    parts = [part.strip() for part in raw.split(",")]
    try:
        minutes = [float(part) for part in parts]
    except ValueError:
        minutes = []
    if (
        not 1 <= len(parts) <= _MAX_BACKOFF_STEPS
        or len(minutes) != len(parts)
        or not all(0 < m <= _MAX_BACKOFF_MINUTES for m in minutes)
    ):
        raise SettingError(
            f"{BACKOFF_VARIABLE}={raw!r}: 1 to {_MAX_BACKOFF_STEPS} comma-separated minutes, each above 0 and at "
            f"most {_MAX_BACKOFF_MINUTES} (default {','.join(map(str, DEFAULT_BACKOFF_MINUTES))})"
        )
    return tuple(timedelta(minutes=m) for m in minutes)


#: Deploy-time setting: how long a tick on an empty queue listens for the first event (seconds).
LISTEN_VARIABLE = "SOCIALREC_SENSOR_LISTEN_SECONDS"
DEFAULT_LISTEN_SECONDS = 20.0
#: Dagster gives a sensor evaluation 60 s; listening plus a full drain (`max_seconds`) stays under it.
_MAX_LISTEN_SECONDS = 30.0


def sensor_listen_seconds(environ: Mapping[str, str]) -> float:
    """`SOCIALREC_SENSOR_LISTEN_SECONDS`, or the default when unset; malformed raises `SettingError`."""
    raw = (environ.get(LISTEN_VARIABLE) or "").strip()
    if not raw:
        return DEFAULT_LISTEN_SECONDS
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= _MAX_LISTEN_SECONDS:
        raise SettingError(
            f"{LISTEN_VARIABLE}={raw!r}: seconds from 0 to {_MAX_LISTEN_SECONDS:g} (default {DEFAULT_LISTEN_SECONDS:g})"
        )
    return seconds


def tick_limits_from_env(environ: Mapping[str, str]) -> TickLimits:
    """The sensor's limits with the deployment's relaunch backoff and listening time."""
    return TickLimits(backoff=relaunch_backoff(environ), first_message_wait_s=sensor_listen_seconds(environ))
