"""Timestamps from outside (events, upstream JSON) into aware UTC datetimes.

Standard library only: the sandbox stand-ins parse upstream timestamps by the event model's rule
without importing pydantic.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def parse_instant(value: Any) -> datetime | None:
    """ISO-8601 with an explicit offset, or epoch milliseconds, into an aware UTC datetime."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError("a boolean is not a timestamp")
    if isinstance(value, int):
        if not 0 <= value < 10**14:
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
