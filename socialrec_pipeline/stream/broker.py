"""RabbitMQ topology for the token.flow stream (SPEC §2.1): names and idempotent declaration."""

from __future__ import annotations

import pika
from pika.adapters.blocking_connection import BlockingChannel
from pika.exceptions import ChannelClosedByBroker

#: Producer-owned; we declare it only if it is missing and never delete it. Configurable only so
#: that tests, benchmarks and the sandbox can use an exchange of their own (see RABBITMQ_EXCHANGE).
EXCHANGE = "solTokenFlowTopicExchange"
EXCHANGE_TYPE = "topic"
ROUTING_KEY = "token.flow"
QUEUE_BASE = "af-social-scanner.token-flow.social-sync"
DLQ_SUFFIX = ".dlq"
#: Header carrying why a message was dead-lettered (safe to log: built from the validator's reason).
REASON_HEADER = "x-socialrec-reason"


def queue_name_for(env: str) -> str:
    """`…social-sync` in production, `…social-sync.{env}` everywhere else."""
    env = (env or "").strip()
    if not env:
        raise ValueError("SOCIALREC_ENV is empty: refusing to guess between production and a test queue")
    return QUEUE_BASE if env in ("prod", "production") else f"{QUEUE_BASE}.{env}"


def dead_letter_queue(queue: str) -> str:
    return queue + DLQ_SUFFIX


def open_connection(url: str) -> pika.BlockingConnection:
    params = pika.URLParameters(url)
    # A tick must never hang on a dead broker.
    params.socket_timeout = 5
    params.blocked_connection_timeout = 10
    params.connection_attempts = 1
    return pika.BlockingConnection(params)


def declare_topology(
    connection: pika.BlockingConnection, queue: str, exchange: str = EXCHANGE
) -> BlockingChannel:
    """Declare (idempotently) exchange, queue, binding and DLQ; return a channel ready to consume.

    The exchange is first checked passively so that a producer's declaration with other arguments
    is respected; only when it does not exist is it declared (topic, durable) like the producer does.
    """
    channel = connection.channel()
    try:
        channel.exchange_declare(exchange, exchange_type=EXCHANGE_TYPE, passive=True)
    except ChannelClosedByBroker as exc:
        if exc.reply_code != 404:
            raise
        channel = connection.channel()
        channel.exchange_declare(exchange, exchange_type=EXCHANGE_TYPE, durable=True)
    channel.queue_declare(queue, durable=True)
    channel.queue_bind(queue, exchange, routing_key=ROUTING_KEY)
    channel.queue_declare(dead_letter_queue(queue), durable=True)
    return channel


def queue_depths(url: str, queue: str) -> dict[str, int | None]:
    """Ready messages in `queue` and its dead-letter queue (None for a queue that does not exist).

    Passive declarations only: nothing is created, consumed or changed.
    """
    depths: dict[str, int | None] = {}
    connection = open_connection(url)
    try:
        for name, key in ((queue, "queue"), (dead_letter_queue(queue), "dead_letter")):
            channel = connection.channel()
            try:
                depths[key] = channel.queue_declare(name, passive=True).method.message_count
            except ChannelClosedByBroker as exc:
                if exc.reply_code != 404:
                    raise
                depths[key] = None
            else:
                channel.close()
    finally:
        connection.close()
    return depths


def release_unused(url: str, queues: list[str], exchanges: list[str]) -> list[str]:
    """Delete each of `queues` that has no consumer and no message, then each of `exchanges` that
    nothing is bound to; returns the names deleted. Anything in use or holding a message is left as
    it is (never a message dropped), as is a name that does not exist. For broker objects a
    deployment of its own declared (a sandbox's queues, its Celery run queue and that queue's
    same-named exchange), never the producer's exchange."""
    if EXCHANGE in exchanges:
        raise ValueError(f"{EXCHANGE} is the producer's: never deleted")
    deleted: list[str] = []
    connection = open_connection(url)
    try:
        for kind, names in (("queue", queues), ("exchange", exchanges)):
            for name in names:
                channel = connection.channel()
                try:
                    if kind == "queue":
                        channel.queue_declare(name, passive=True)  # a queue that is not there stays so
                        channel.queue_delete(name, if_unused=True, if_empty=True)
                    else:
                        channel.exchange_declare(name, passive=True)
                        channel.exchange_delete(name, if_unused=True)
                except ChannelClosedByBroker as exc:
                    if exc.reply_code not in (404, 406):  # 404: not there; 406: in use or not empty
                        raise
                    continue
                deleted.append(name)
                channel.close()
    finally:
        connection.close()
    return deleted
