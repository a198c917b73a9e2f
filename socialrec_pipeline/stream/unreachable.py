"""One line naming the service when a tick fails because RabbitMQ, MongoDB or Redis is unreachable.

A sensor tick that raises shows Dagster's error with every frame of the traceback; a service that
is simply down deserves one line saying which, and what to check. `unreachable_service(exc)` gives
that line for a connection failure (walking `__cause__` / `__context__`), or None for anything
else, which the caller re-raises: a bug keeps its traceback.
"""

from __future__ import annotations

import redis
from pika.exceptions import AMQPConnectionError, ConnectionClosed, StreamLostError
from pymongo.errors import ConnectionFailure

#: (exception types, the line). ConnectionFailure covers ServerSelectionTimeoutError and AutoReconnect.
_SERVICES: tuple[tuple[tuple[type[BaseException], ...], str], ...] = (
    (
        (AMQPConnectionError, ConnectionClosed, StreamLostError),
        "RabbitMQ unreachable: check that the broker runs and RABBITMQ_URL (host, port, user); "
        "nothing was consumed or lost, the next tick tries again",
    ),
    (
        (ConnectionFailure,),
        "MongoDB unreachable: check that it runs and MONGODB_URI (host, port, credentials); "
        "unacknowledged messages stay in token.flow, the next tick tries again",
    ),
    (
        (redis.ConnectionError, redis.TimeoutError),
        "Redis unreachable: check that it runs and REDIS_URL; the next tick tries again",
    ),
)


def unreachable_service(exc: BaseException) -> str | None:
    """The one line for a service that could not be reached, else None."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        for types, line in _SERVICES:
            if isinstance(current, types):
                return f"{line} ({type(current).__name__})"
        current = current.__cause__ or current.__context__
    return None
