"""Drain rate of the token_flow sensor's tick logic vs a bare prefetching pika consumer.

Publishes N below-threshold `token.flow` messages to a throw-away queue, drains them with a bare
consumer loop (connect, prefetch 1000, one multiple-ack per 500, no parsing, stops at exactly N),
publishes them again and drains them with `TokenFlowDrain` exactly as one tick runs it (topology declaration, parsing,
threshold, batched acks, the idle wait at the end). Prints both rates; the last line is
`sensor_drain_ratio: <sensor rate / bare rate>`. Before that, what one empty-queue tick of
`token_flow_sensor` costs (the function the code server evaluates every tick: broker connection,
topology declaration, one inbox query, the active-runs lookup): wall time and this thread's CPU.

    .venv/bin/python bench/sensor.py [--messages 20000] [--empty-ticks 20]

Needs RabbitMQ (RABBITMQ_URL) and MongoDB (MONGODB_URI, else an embedded SecantusDB).
"""

from __future__ import annotations

import argparse
import json
import os
import time
import uuid

from socialrec_pipeline.store.client import open_client, open_database
from socialrec_pipeline.stream.broker import (
    EXCHANGE,
    ROUTING_KEY,
    dead_letter_queue,
    declare_topology,
    open_connection,
    queue_name_for,
)
from socialrec_pipeline.stream.inbox import RecordInbox
from socialrec_pipeline.stream.intake import TickLimits, TokenFlowDrain

RABBITMQ_URL = os.environ.get("RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/%2F")
BODY = json.dumps(
    {
        "tokenAddress": "7GCihgDB8fe6KNjn2MYtkzZcRjQy3t9GHdC8uHYmW2hr",
        "totalInvestedAlphaFinders": 2,
        "firstFlowTimestamp": "2026-11-29T21:14:03.512Z",
        "symbol": "POPCAT",
        "afGroupId": "g-main",
        "flowAt": 1796245200000,
    }
).encode()


def publish(channel, exchange: str, n: int) -> None:
    for _ in range(n):
        channel.basic_publish(exchange, ROUTING_KEY, BODY)


def wait_depth(channel, queue: str, n: int) -> None:
    deadline = time.monotonic() + 60
    while channel.queue_declare(queue, passive=True).method.message_count < n:
        if time.monotonic() > deadline:
            raise RuntimeError("messages did not arrive in the queue")
        time.sleep(0.05)


def bare_drain(queue: str, n: int) -> float:
    started = time.perf_counter()  # both sides pay for their connection
    connection = open_connection(RABBITMQ_URL)
    channel = connection.channel()
    channel.basic_qos(prefetch_count=1000)
    count, last, unacked = 0, None, 0
    deadline = time.monotonic() + 60
    for method, _props, _body in channel.consume(queue, inactivity_timeout=0.2):
        if method is None:
            # It knows how many to expect: a slow delivery on a busy machine is not the end.
            if time.monotonic() > deadline:
                break
            continue
        count += 1
        unacked += 1
        last = method.delivery_tag
        if unacked >= 500:
            channel.basic_ack(last, multiple=True)
            unacked = 0
        if count >= n:
            break
    if unacked:
        channel.basic_ack(last, multiple=True)
    elapsed = time.perf_counter() - started
    channel.cancel()
    connection.close()
    assert count == n, count
    return elapsed


def mongo():
    from socialrec_pipeline.store.embedded import configured_or_embedded_mongo

    return configured_or_embedded_mongo(os.environ.get("MONGODB_URI"))


def empty_ticks(uri: str, db_name: str, env_name: str, exchange: str, ticks: int) -> tuple[float, float]:
    """Median wall seconds and mean CPU seconds (this thread: the embedded Mongo server's threads
    are not counted) of one `token_flow_sensor` tick on an empty queue."""
    import dagster as dg

    from socialrec_pipeline.defs.resources import MongoResource, RabbitMQResource, RecordingSettingsResource
    from socialrec_pipeline.defs.token_flow import token_flow_sensor

    resources = {
        "mongo": MongoResource(uri=uri, database=db_name),
        "rabbitmq": RabbitMQResource(url=RABBITMQ_URL, env=env_name, exchange=exchange),
        "recording": RecordingSettingsResource(),
    }
    walls, cpu = [], 0.0
    with dg.DagsterInstance.ephemeral() as instance:
        token_flow_sensor(dg.build_sensor_context(instance=instance, resources=resources))  # warm
        for _ in range(ticks):
            context = dg.build_sensor_context(instance=instance, resources=resources)
            wall, cpu0 = time.perf_counter(), time.thread_time()
            token_flow_sensor(context)
            cpu += time.thread_time() - cpu0
            walls.append(time.perf_counter() - wall)
    return sorted(walls)[len(walls) // 2], cpu / ticks


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--empty-ticks", type=int, default=20)
    args = parser.parse_args()
    n = args.messages
    env_name = f"bench{uuid.uuid4().hex[:8]}"
    queue = queue_name_for(env_name)
    # An exchange of the bench's own: nobody else's events reach its queue, its events reach no one.
    exchange = f"{EXCHANGE}.{env_name}"
    connection = open_connection(RABBITMQ_URL)
    channel = declare_topology(connection, queue, exchange)
    with mongo() as uri:
        client = open_client(uri)
        db = open_database(client, f"bench_sensor_{uuid.uuid4().hex[:6]}")
        inbox = RecordInbox(db)
        inbox.ensure_indexes()
        try:
            if args.empty_ticks:
                tick_wall, tick_cpu = empty_ticks(uri, db.name, env_name, exchange, args.empty_ticks)
                print(
                    f"empty-queue sensor tick: {tick_wall * 1000:.0f} ms wall (median), "
                    f"{tick_cpu * 1000:.0f} ms CPU (mean of {args.empty_ticks})",
                    flush=True,
                )
            publish(channel, exchange, n)
            wait_depth(channel, queue, n)
            bare_s = bare_drain(queue, n)

            publish(channel, exchange, n)
            wait_depth(channel, queue, n)
            drain = TokenFlowDrain(RABBITMQ_URL, queue, inbox, 5, TickLimits(), exchange=exchange)
            started = time.perf_counter()
            ticks, below = 0, 0
            while below < n and ticks < 10:
                counts = drain.run()
                ticks += 1
                below += counts.below_threshold
            sensor_s = time.perf_counter() - started
            assert below == n, below
        finally:
            channel.queue_delete(queue)
            channel.queue_delete(dead_letter_queue(queue))
            channel.exchange_delete(exchange)
            connection.close()
            client.drop_database(db.name)
            client.close()
    bare_rate, sensor_rate = n / bare_s, n / sensor_s
    print(f"messages: {n}")
    print(f"bare pika consumer: {bare_s:.2f} s, {bare_rate:,.0f} msg/s")
    print(
        f"sensor tick logic: {sensor_s:.2f} s in {ticks} tick(s), {sensor_rate:,.0f} msg/s "
        f"(includes connect, topology declaration, parsing and the {TickLimits().idle_timeout_s} s idle wait)"
    )
    print(f"sensor_drain_ratio: {sensor_rate / bare_rate:.2f}")


if __name__ == "__main__":
    main()
