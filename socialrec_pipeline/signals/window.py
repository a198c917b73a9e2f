"""The as-of window of one daily partition (SPEC §11, no look-ahead).

A day D (UTC) covers [D 00:00, D 23:59:59.999]. Its cutoff is the last millisecond of the day (the
precision MongoDB stores), so "≤ cutoff" takes exactly the data of the day and before, and a row
stamped at the next midnight belongs to the next partition. Every derived value uses only links
with `linked_at` ≤ cutoff, metric points with `at` ≤ cutoff and tokens with `discovered_at` ≤ cutoff.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

_LAST_MS = timedelta(milliseconds=1)


@dataclass(frozen=True)
class DayWindow:
    day: date
    start: datetime
    cutoff: datetime

    @classmethod
    def of(cls, day: date | str) -> DayWindow:
        if isinstance(day, str):
            day = date.fromisoformat(day[:10])
        start = datetime.combine(day, time(0), tzinfo=UTC)
        return cls(day=day, start=start, cutoff=start + timedelta(days=1) - _LAST_MS)

    @classmethod
    def containing(cls, moment: datetime) -> DayWindow:
        if moment.tzinfo is None:
            raise ValueError(f"a naive datetime has no UTC day: {moment!r}")
        return cls.of(moment.astimezone(UTC).date())
