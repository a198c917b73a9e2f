"""A test-unique queue pair on the real broker, shared by the stream and the Dagster-shell tests."""

from __future__ import annotations

import json

import pika

from socialrec_pipeline.stream.broker import EXCHANGE, ROUTING_KEY, dead_letter_queue, queue_name_for

QUALIFYING_ADDRESSES = [
    "7GCihgDB8fe6KNjn2MYtkzZcRjQy3t9GHdC8uHYmW2hr",
    "So11111111111111111111111111111111111111112",
    "DezXAZ8z7PnrnRJjz3wXBoRgixCa6xjnB7YaB1pPB263",
]


class Broker:
    """Publishes to the real exchange and inspects one test-unique queue pair."""

    def __init__(self, url: str, env: str) -> None:
        self.url = url
        self.env = env
        self.queue = queue_name_for(env)
        self.dlq = dead_letter_queue(self.queue)
        # An exchange of the test's own: events other publishers send to the producer's exchange
        # on this broker (a sandbox, a benchmark) must not reach the test's queue.
        self.exchange = f"{EXCHANGE}.{env}"
        self._conn = pika.BlockingConnection(pika.URLParameters(url))
        self.channel = self._conn.channel()
        # Declared here too, so messages published before the first tick are routed to it.
        self.channel.exchange_declare(self.exchange, exchange_type="topic", durable=True)
        self.channel.queue_declare(self.queue, durable=True)
        self.channel.queue_bind(self.queue, self.exchange, routing_key=ROUTING_KEY)
        self.channel.queue_declare(self.dlq, durable=True)

    def publish(self, body: bytes | dict) -> None:
        if isinstance(body, dict):
            body = json.dumps(body).encode()
        self.channel.basic_publish(self.exchange, ROUTING_KEY, body)

    def depth(self, queue: str) -> int:
        return self.channel.queue_declare(queue, passive=True).method.message_count

    def dead_letters(self) -> list[tuple[bytes, dict]]:
        out = []
        while True:
            method, props, body = self.channel.basic_get(self.dlq, auto_ack=True)
            if method is None:
                return out
            out.append((body, dict(props.headers or {})))

    def close(self) -> None:
        for queue in (self.queue, self.dlq):
            self.channel.queue_delete(queue)
        self.channel.exchange_delete(self.exchange)
        self._conn.close()


def flow(address: str, af: int, **extra) -> dict:
    return {"tokenAddress": address, "totalInvestedAlphaFinders": af, **extra}
