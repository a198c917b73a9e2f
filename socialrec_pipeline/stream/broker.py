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
