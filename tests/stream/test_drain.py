"""The drain ends on an empty queue, not on a slow delivery."""

from __future__ import annotations

import json
import threading
import time

import pika
import pytest

from socialrec_pipeline.recording.settings import SettingError
from socialrec_pipeline.stream.broker import ROUTING_KEY
from socialrec_pipeline.stream.inbox import RecordInbox
from socialrec_pipeline.stream.intake import TickLimits, TokenFlowDrain
from socialrec_pipeline.stream.limits import (
    DEFAULT_LISTEN_SECONDS,
    LISTEN_VARIABLE,
    sensor_listen_seconds,
    tick_limits_from_env,
)
from tests.broker import QUALIFYING_ADDRESSES, flow


def test_a_delivery_slower_than_the_idle_wait_does_not_end_the_drain(broker, fresh_db):
    for _ in range(40):
        broker.publish(flow(QUALIFYING_ADDRESSES[0], 1))
    # One message in flight at a time and an idle wait far shorter than a broker round trip:
    # every next delivery arrives "late", yet the queue is not empty.
    limits = TickLimits(idle_timeout_s=0.00001, prefetch=1, ack_every=1)
    inbox = RecordInbox(fresh_db)
    inbox.ensure_indexes()
    counts = TokenFlowDrain(broker.url, broker.queue, inbox, threshold=5, limits=limits, exchange=broker.exchange).run()
    assert counts.consumed == 40
    assert counts.below_threshold == 40
    assert broker.depth(broker.queue) == 0


def test_an_empty_queue_ends_the_drain_at_once(broker, fresh_db):
    inbox = RecordInbox(fresh_db)
    inbox.ensure_indexes()
    counts = TokenFlowDrain(broker.url, broker.queue, inbox, threshold=5, exchange=broker.exchange).run()
    assert counts.consumed == 0


def _publish_later(broker_url: str, exchange: str, bodies: list[bytes], delay_s: float) -> threading.Thread:
    """Publish `bodies` after `delay_s` on a connection of its own (the drain holds the test's)."""

    def publish() -> None:
        time.sleep(delay_s)
        conn = pika.BlockingConnection(pika.URLParameters(broker_url))
        try:
            channel = conn.channel()
            for raw in bodies:
                channel.basic_publish(exchange, ROUTING_KEY, raw)
        finally:
            conn.close()

    thread = threading.Thread(target=publish)
    thread.start()
    return thread


def test_a_listening_tick_takes_an_event_published_while_it_waits_and_then_ends(broker, fresh_db):
    inbox = RecordInbox(fresh_db)
    inbox.ensure_indexes()
    limits = TickLimits(first_message_wait_s=10)
    event = json.dumps(flow(QUALIFYING_ADDRESSES[0], 6)).encode()
    publisher = _publish_later(broker.url, broker.exchange, [event], 1.0)
    started = time.monotonic()
    counts = TokenFlowDrain(broker.url, broker.queue, inbox, threshold=5, limits=limits, exchange=broker.exchange).run()
    took = time.monotonic() - started
    publisher.join()
    # Taken in the same tick (journaled), and the tick ended soon after instead of listening 10 s.
    assert (counts.consumed, counts.queued) == (1, 1)
    assert fresh_db["record_inbox"].count_documents({"token_address": QUALIFYING_ADDRESSES[0]}) == 1
    assert 1.0 <= took < 5.0, took


def test_a_burst_arriving_while_a_tick_listens_is_drained_in_that_tick_and_all_acknowledged(broker, fresh_db):
    """The listening wait takes one message (prefetch 1) before the drain consumes the rest: the one
    it took is settled with them, and nothing is left delivered but unacknowledged (closing the
    connection would requeue it), redelivered or dead-lettered for nothing."""
    inbox = RecordInbox(fresh_db)
    inbox.ensure_indexes()
    bodies = [json.dumps(flow(QUALIFYING_ADDRESSES[0], 6)).encode()]  # the one the wait takes
    bodies += [json.dumps(flow(QUALIFYING_ADDRESSES[1], 1)).encode() for _ in range(1500)]
    bodies += [b"not json", json.dumps(flow(QUALIFYING_ADDRESSES[2], 7)).encode()]
    publisher = _publish_later(broker.url, broker.exchange, bodies, 0.5)
    limits = TickLimits(first_message_wait_s=10, prefetch=200, ack_every=100)
    counts = TokenFlowDrain(broker.url, broker.queue, inbox, threshold=5, limits=limits, exchange=broker.exchange).run()
    publisher.join()
    if counts.consumed < len(bodies):  # the publisher was slower than the drain: the next tick's
        counts2 = TokenFlowDrain(
            broker.url, broker.queue, inbox, threshold=5, limits=limits, exchange=broker.exchange
        ).run()
        counts.consumed += counts2.consumed
    assert counts.consumed == len(bodies)  # each exactly once: a requeued message would count twice
    assert broker.depth(broker.queue) == 0
    assert broker.depth(broker.dlq) == 1
    stored = {d["token_address"] for d in fresh_db["record_inbox"].find({}, {"token_address": 1})}
    assert stored == {QUALIFYING_ADDRESSES[0], QUALIFYING_ADDRESSES[2]}


def test_a_listening_tick_on_a_queue_that_stays_empty_ends_after_its_wait(broker, fresh_db):
    inbox = RecordInbox(fresh_db)
    inbox.ensure_indexes()
    started = time.monotonic()
    counts = TokenFlowDrain(
        broker.url, broker.queue, inbox, threshold=5, limits=TickLimits(first_message_wait_s=1.0),
        exchange=broker.exchange,
    ).run()  # fmt: skip
    took = time.monotonic() - started
    assert counts.consumed == 0
    assert 1.0 <= took < 4.0, took


def test_the_listening_time_is_a_strict_deploy_time_setting():
    assert sensor_listen_seconds({}) == DEFAULT_LISTEN_SECONDS
    assert sensor_listen_seconds({LISTEN_VARIABLE: "0"}) == 0
    assert tick_limits_from_env({LISTEN_VARIABLE: "7.5"}).first_message_wait_s == 7.5
    for bad in ("-1", "31", "soon"):
        with pytest.raises(SettingError, match=LISTEN_VARIABLE):
            sensor_listen_seconds({LISTEN_VARIABLE: bad})
