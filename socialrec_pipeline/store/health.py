"""Recording health figures derived from stored data, runnable without Dagster.

`recording_health(db, now, paid_platforms)` returns plain numbers (the `recording_health` asset
puts them in its metadata, which Dagster plots over time):

- `tokens_recorded_last_hour`: markers whose `discovered_at` (set when the marker is created) is in
  the last hour — a count on `idx_tokens_discovered`.
- `urls_<status>`: URLs per FetchStatus over every marker; `retryable_backlog` is the sum over
  RETRYABLE, `exhausted` the `exhausted` count.
- per platform, over URLs whose last attempt (`attempted_at`) is in the last hour:
  `attempts_last_hour_<p>`, `errors_last_hour_<p>` and `error_rate_<p>` (errors / attempts, 0 when
  nothing was attempted); an *attempt* is a URL whose status is not a gate decision
  (`skipped_paid`, `unsupported`: no call was made).
- `paid_calls_last_hour`: attempts in the last hour on the paid platforms.
- `inbox_open` / `inbox_stuck` / `inbox_total`: `record_inbox` entries waiting for or being
  recorded (pending, launched, retrying) / given up after every relaunch / all (counts on
  `idx_inbox_state`).
- `last_recorded_age_min`: minutes since the newest marker was created (newest first on
  `idx_tokens_discovered`); -1 when there is none.

A figure that could not be read (a query failed or ran past `max_time_ms`) is -1 and named in
`HealthReading.unknown` with the reason, never a 0 that looks healthy; so is the URL group when the
scan stopped at `scan_limit` before the end of `tokens` (its counts would be partial).

Only the last attempt of a URL is stored (a retry overwrites it), so the per-provider figures
count URLs last attempted in the hour, not every call made: a URL retried twice in one hour
counts once. The URL figures come from one bounded batch scan of `tokens` (projection of
`social_urls.status/platform/attempted_at`, `scan_limit` documents at most, `tokens_scanned`
says how many were read).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pymongo import DESCENDING
from pymongo.collection import Collection as MongoCollection
from pymongo.database import Database
from pymongo.errors import PyMongoError

from socialrec_pipeline.domain.enums import RETRYABLE, FetchStatus, Platform
from socialrec_pipeline.store.collections import TOKENS, collection

#: A database handle whose documents are plain dicts.
Db = Database[dict[str, Any]]
Collection = MongoCollection[dict[str, Any]]
Figures = dict[str, float | int]

INBOX = "record_inbox"
OPEN_INBOX_STATES = ("pending", "launched", "retrying")
#: Statuses the gate gives without calling anything.
NO_CALL_STATUSES = frozenset({FetchStatus.SKIPPED_PAID, FetchStatus.UNSUPPORTED})
DEFAULT_SCAN_LIMIT = 1_000_000
#: Each query gives up after this long (the server stops it): its figure is then unknown.
DEFAULT_MAX_TIME_MS = 30_000
#: The value of a figure that could not be read (its name is in `HealthReading.unknown`).
UNKNOWN = -1
#: The figures of the URL group (one scan of `tokens`), named together in `unknown`.
URL_FIGURES = "url_figures"


@dataclass
class HealthReading:
    figures: dict[str, float | int]
    #: figure (or `URL_FIGURES`) → why it could not be read; such a figure holds UNKNOWN.
    unknown: dict[str, str] = field(default_factory=dict)


def recording_health(
    db: Db, now: datetime, paid_platforms: Iterable[Platform | str], *, scan_limit: int = DEFAULT_SCAN_LIMIT
) -> dict[str, float | int]:
    """The figures alone (unknown ones are UNKNOWN); `read_recording_health` also says which."""
    return read_recording_health(db, now, paid_platforms, scan_limit=scan_limit).figures


#: The figures of the URL group (one scan of `tokens`).
URL_GROUP_NAMES = (
    "tokens_scanned",
    *(f"urls_{s}" for s in FetchStatus),
    "retryable_backlog",
    "exhausted",
    *(f"{k}_{p}" for p in Platform for k in ("attempts_last_hour", "errors_last_hour", "error_rate")),
    "paid_calls_last_hour",
)


def read_recording_health(
    db: Db,
    now: datetime,
    paid_platforms: Iterable[Platform | str],
    *,
    scan_limit: int = DEFAULT_SCAN_LIMIT,
    max_time_ms: int = DEFAULT_MAX_TIME_MS,
) -> HealthReading:
    tokens = collection(db, TOKENS)
    hour_ago = now - timedelta(hours=1)
    reading = HealthReading({})
    figures = reading.figures
    _read(reading, ("tokens_recorded_last_hour",), lambda: _recorded_last_hour(tokens, figures, hour_ago, max_time_ms))
    _read(reading, ("last_recorded_age_min",), lambda: _last_recorded(tokens, figures, now, max_time_ms))
    _read(
        reading,
        URL_GROUP_NAMES,
        lambda: _url_figures(db, reading, hour_ago, paid_platforms, scan_limit, max_time_ms),
        URL_FIGURES,
    )
    inbox = db.get_collection(INBOX)
    _read(reading, ("inbox_open", "inbox_stuck", "inbox_total"), lambda: _inbox_figures(inbox, figures, max_time_ms))
    return reading


def _read(reading: HealthReading, names: tuple[str, ...], query: Callable[[], None], label: str | None = None) -> None:
    """Run one query; when MongoDB fails it, its figures are UNKNOWN and named (or `label`) with why."""
    try:
        query()
    except PyMongoError as exc:
        for name in names:
            reading.figures[name] = UNKNOWN
        for name in [label] if label else names:
            reading.unknown[name] = f"{type(exc).__name__}: {str(exc)[:160]}"


def _recorded_last_hour(tokens: Collection, figures: Figures, hour_ago: datetime, max_time_ms: int) -> None:
    figures["tokens_recorded_last_hour"] = tokens.count_documents(
        {"discovered_at": {"$gte": hour_ago}}, hint="idx_tokens_discovered", maxTimeMS=max_time_ms
    )


def _last_recorded(tokens: Collection, figures: Figures, now: datetime, max_time_ms: int) -> None:
    newest = tokens.find_one(
        {}, {"discovered_at": 1}, sort=[("discovered_at", DESCENDING)], hint="idx_tokens_discovered",
        max_time_ms=max_time_ms,
    )
    if newest and isinstance(newest.get("discovered_at"), datetime):
        figures["last_recorded_age_min"] = round((now - newest["discovered_at"]).total_seconds() / 60, 1)
    else:
        figures["last_recorded_age_min"] = -1  # none recorded yet (a known fact, not unknown)


def _inbox_figures(inbox: Collection, figures: Figures, max_time_ms: int) -> None:
    figures["inbox_open"] = inbox.count_documents(
        {"state": {"$in": list(OPEN_INBOX_STATES)}}, hint="idx_inbox_state", maxTimeMS=max_time_ms
    )
    figures["inbox_stuck"] = inbox.count_documents({"state": "stuck"}, hint="idx_inbox_state", maxTimeMS=max_time_ms)
    figures["inbox_total"] = inbox.estimated_document_count(maxTimeMS=max_time_ms)


def _url_figures(
    db: Db,
    reading: HealthReading,
    hour_ago: datetime,
    paid_platforms: Iterable[Platform | str],
    scan_limit: int,
    max_time_ms: int,
) -> None:
    tokens = collection(db, TOKENS)
    figures = reading.figures
    statuses: Counter[str] = Counter()
    attempts: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    scanned = 0
    cursor = tokens.find({}, {"social_urls.status": 1, "social_urls.platform": 1, "social_urls.attempted_at": 1})
    cursor = cursor.hint("_id_").batch_size(5_000).limit(scan_limit).max_time_ms(max_time_ms)
    for doc in cursor:
        scanned += 1
        for url in doc.get("social_urls") or []:
            status = url.get("status")
            statuses[status] += 1
            at = url.get("attempted_at")
            if not isinstance(at, datetime) or at < hour_ago or status in NO_CALL_STATUSES:
                continue
            platform = url.get("platform") or "unrouted"
            attempts[platform] += 1
            if status == FetchStatus.ERROR:
                errors[platform] += 1
    figures["tokens_scanned"] = scanned
    for status in FetchStatus:
        figures[f"urls_{status}"] = statuses.get(str(status), 0)
    figures["retryable_backlog"] = sum(statuses.get(str(s), 0) for s in RETRYABLE)
    figures["exhausted"] = statuses.get(str(FetchStatus.EXHAUSTED), 0)
    paid = {str(p) for p in paid_platforms}
    for platform in Platform:
        p = str(platform)
        figures[f"attempts_last_hour_{p}"] = attempts.get(p, 0)
        figures[f"errors_last_hour_{p}"] = errors.get(p, 0)
        figures[f"error_rate_{p}"] = round(errors.get(p, 0) / attempts[p], 4) if attempts.get(p) else 0.0
    figures["paid_calls_last_hour"] = sum(attempts.get(p, 0) for p in paid)
    if scan_limit and scanned >= scan_limit:
        total = tokens.estimated_document_count(maxTimeMS=max_time_ms)
        if total > scanned:
            reading.unknown[URL_FIGURES] = f"partial: the scan read {scanned} of ~{total} tokens (limit {scan_limit})"
