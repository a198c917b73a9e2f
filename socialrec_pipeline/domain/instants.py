"""Timestamps from outside (events, upstream JSON) into aware UTC datetimes.

Standard library only: the sandbox stand-ins parse upstream timestamps by the event model's rule
without importing pydantic.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

#: Epoch milliseconds are accepted from the epoch up to this bound (year 5138): every one of them
#: is a datetime, so an integer in range always parses.
MAX_EPOCH_MS = 10**14


def parse_instant(value: Any) -> datetime | None:
    """ISO-8601 with an explicit offset, or epoch milliseconds, into an aware UTC datetime."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError("a boolean is not a timestamp")
    if isinstance(value, int):
        if not 0 <= value < MAX_EPOCH_MS:
            raise ValueError("epoch milliseconds out of range")
        return datetime.fromtimestamp(value / 1000, tz=UTC)
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        parsed = datetime.fromisoformat(text)
        if parsed.tzinfo is None:
            raise ValueError("timestamp has no UTC offset")
        return parsed.astimezone(UTC)
    raise ValueError(f"expected ISO-8601 string or epoch milliseconds, got {type(value).__name__}")


def is_instant(value: Any) -> bool:
    """Whether `parse_instant` accepts `value`; an integer is answered without building the
    datetime (the sensor asks this of every message it sees)."""
    if type(value) is int:  # noqa: E721 - exactly int: a bool is refused by parse_instant
        return 0 <= value < MAX_EPOCH_MS
    try:
        parse_instant(value)
    except Exception:  # noqa: BLE001 - whatever it raises, the value is not an instant
        return False
    return True
