"""The drain ends on an empty queue, not on a slow delivery."""

from __future__ import annotations

from socialrec_pipeline.stream.inbox import RecordInbox
from socialrec_pipeline.stream.intake import TickLimits, TokenFlowDrain
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
