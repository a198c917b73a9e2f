"""The dead-letter queue, for operators: read it without consuming it, requeue, purge, acknowledge.

Messages the sensor refused (SPEC §2.1: invalid JSON, a wrong schema, an address that is not one)
wait in `<queue>.dlq` with the reason in the `x-socialrec-reason` header and the time they were
dead-lettered in the `timestamp` property. `socialrec dlq list|requeue|purge|ack` is the shell over
these functions; the `dead_letters_reviewed` check reads them too.

"Reviewed" is a time an operator records (`socialrec dlq ack`) in Redis: the check stays WARN while
the queue holds a message dead-lettered after it. Requeue publishes each message back to our own
queue through the default exchange — never to the producer's exchange, whose other consumers must
not see an event twice — with publisher confirms, and acknowledges it in the DLQ only after the
broker confirmed the copy: a crash in between leaves a duplicate, never a loss (the inbox is
idempotent per token).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime

import pika
import redis

from socialrec_pipeline.stream.broker import REASON_HEADER, dead_letter_queue, open_connection

#: What `peek` reads at most: a DLQ is for reading, and a bound keeps a flooded one cheap to inspect.
PEEK_LIMIT = 1000
#: Characters of a payload shown in a table (the rest is cut with an ellipsis).
PAYLOAD_PREVIEW = 160
_REVIEWED_KEY = "socialrec:dlq:reviewed:"


@dataclass(frozen=True, slots=True)
class DeadLetter:
    dead_lettered_at: datetime | None
    reason: str
    payload: bytes

    @property
    def preview(self) -> str:
        text = self.payload.decode("utf-8", errors="replace")
        text = " ".join(text.split())
        return text if len(text) <= PAYLOAD_PREVIEW else text[: PAYLOAD_PREVIEW - 1] + "…"


def _dead_letter(properties: pika.BasicProperties, body: bytes) -> DeadLetter:
    headers = properties.headers or {}
    reason = headers.get(REASON_HEADER)
    if isinstance(reason, bytes):
        reason = reason.decode("utf-8", errors="replace")
    at = datetime.fromtimestamp(properties.timestamp, UTC) if properties.timestamp else None
    return DeadLetter(dead_lettered_at=at, reason=str(reason or "unknown"), payload=body)


def peek(url: str, queue: str, limit: int = PEEK_LIMIT) -> list[DeadLetter]:
    """Up to `limit` dead letters, oldest first, left in the queue (read, then given back unacknowledged)."""
    connection = open_connection(url)
    try:
        channel = connection.channel()
        found: list[DeadLetter] = []
        last_tag = None
        while len(found) < limit:
            method, properties, body = channel.basic_get(dead_letter_queue(queue), auto_ack=False)
            if method is None:
                break
            found.append(_dead_letter(properties, body))
            last_tag = method.delivery_tag
        if last_tag is not None:
            channel.basic_nack(delivery_tag=last_tag, multiple=True, requeue=True)
        return found
    finally:
        connection.close()


def counts_by_reason(letters: list[DeadLetter]) -> dict[str, int]:
    return dict(Counter(letter.reason for letter in letters).most_common())


def requeue(url: str, queue: str, limit: int | None = None) -> int:
    """Move up to `limit` (all when None) dead letters back to `queue`; returns how many moved."""
    connection = open_connection(url)
    try:
        channel = connection.channel()
        channel.confirm_delivery()
        moved = 0
        while limit is None or moved < limit:
            method, properties, body = channel.basic_get(dead_letter_queue(queue), auto_ack=False)
            if method is None:
                break
            # Confirmed publish (raises if the broker refuses it), then the DLQ copy goes.
            channel.basic_publish(
                exchange="", routing_key=queue, body=body, properties=pika.BasicProperties(delivery_mode=2)
            )
            channel.basic_ack(method.delivery_tag)
            moved += 1
        return moved
    finally:
        connection.close()


def purge(url: str, queue: str) -> int:
    """Drop every dead letter; returns how many there were."""
    connection = open_connection(url)
    try:
        return int(connection.channel().queue_purge(dead_letter_queue(queue)).method.message_count)
    finally:
        connection.close()


class ReviewMark:
    """When an operator last reviewed the DLQ of `queue` (`socialrec dlq ack`)."""

    def __init__(self, client: redis.Redis, queue: str) -> None:
        self._redis = client
        self._key = _REVIEWED_KEY + queue

    def get(self) -> datetime | None:
        raw = self._redis.get(self._key)
        return datetime.fromisoformat(raw.decode() if isinstance(raw, bytes) else str(raw)) if raw else None

    def set(self, at: datetime) -> None:
        self._redis.set(self._key, at.astimezone(UTC).isoformat())

    def clear(self) -> None:
        self._redis.delete(self._key)


def unreviewed(letters: list[DeadLetter], reviewed_at: datetime | None) -> list[DeadLetter]:
    """Dead letters an operator has not acknowledged: newer than the mark (all, without one; a letter
    without a time, from before times were recorded, counts as unreviewed until the first mark)."""
    if reviewed_at is None:
        return list(letters)
    return [letter for letter in letters if letter.dead_lettered_at and letter.dead_lettered_at > reviewed_at]
