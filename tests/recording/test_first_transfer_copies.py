"""Issue 19, defect 3: a token's links never disagree with its marker about `first_transfer_at`,
whatever order its events arrive in (an earlier time sent later: during the run, after the marker,
in epoch-ms form; through the stream and through reconcile)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from socialrec_pipeline.domain.events import TokenFlowEvent
from socialrec_pipeline.recording.processor import PreparedToken, RecordOutcome
from socialrec_pipeline.recording.soltracker import UpstreamToken
from socialrec_pipeline.sandbox.soltracker import upstream_token
from socialrec_pipeline.stream.inbox import RecordInbox
from socialrec_pipeline.stream.intake import EndedRun, plan_launches

from . import harness
from .conftest import make_address

LATE = "2026-11-29T22:00:00Z"
EARLY = datetime(2026, 11, 29, 19, 45, 0, 512_000, tzinfo=UTC)
GREEN = lambda keys: {k: EndedRun("r", "SUCCESS", "recorded") for k in keys}  # noqa: E731


def event(address: str, first) -> TokenFlowEvent:
    return TokenFlowEvent.model_validate(
        {"tokenAddress": address, "totalInvestedAlphaFinders": 6, "firstFlowTimestamp": first}
    )


@pytest.fixture
def h(store, redis_client):
    env = harness.build(store, redis_client)
    yield env
    env.server.stop()
    env.client.close()


@pytest.fixture
def inbox(store) -> RecordInbox:
    box = RecordInbox(store.db)
    box.ensure_indexes()
    return box


def tick(store, inbox, at):
    return plan_launches(
        inbox, store.tokens.find_existing_addresses, set(), at, ended_runs=GREEN,
        lower_first_transfer=store.tokens.lower_first_transfer_at,
    )


def disagreeing(store, address) -> list:
    marker = store.tokens.find_by_address(address)
    links = store.links.find_by_token(address)
    assert marker is not None and links
    return [link.first_transfer_at for link in links if link.first_transfer_at not in (None, marker.first_transfer_at)]


EARLY_FORMS = {
    "iso": EARLY.isoformat().replace("+00:00", "Z"),
    "epoch_ms": int(EARLY.timestamp() * 1000),
}


@pytest.mark.parametrize("form", sorted(EARLY_FORMS))
@pytest.mark.parametrize("when", ["during_the_run", "after_the_marker", "after_a_reconcile"])
def test_links_agree_with_the_marker_when_an_earlier_time_arrives_later(h, store, inbox, when, form):
    address = make_address()
    now = datetime.now(UTC)
    h.upstream.put(upstream_token(address, website="https://kol.example/", twitter="https://x.com/kol/status/7",
                                  first_flow=LATE))
    early = event(address, EARLY_FORMS[form])
    if when == "after_a_reconcile":
        token = UpstreamToken.model_validate(upstream_token(address, twitter="https://x.com/kol/status/7",
                                                            first_flow=LATE))
        assert h.recorder.record_upstream_token(token, owner="reconcile").outcome is RecordOutcome.RECORDED
        inbox.accept([early], now)
    else:
        inbox.accept([event(address, LATE)], now)
        tick(store, inbox, now)  # launched with the late time
        prepared = h.recorder.prepare(address, datetime(2026, 11, 29, 22, tzinfo=UTC), None, "run-1")
        assert isinstance(prepared, PreparedToken)
        if when == "during_the_run":
            inbox.accept([early], now)
        assert h.recorder.record_prepared(prepared).outcome is RecordOutcome.RECORDED
        tick(store, inbox, now + timedelta(seconds=10))  # done: the marker's time moves, the entry goes
        if when == "after_the_marker":
            inbox.accept([early], now + timedelta(minutes=1))
    tick(store, inbox, now + timedelta(minutes=2))

    assert store.tokens.find_by_address(address).first_transfer_at == EARLY
    assert inbox.find(address) is None
    assert disagreeing(store, address) == []


def test_a_later_time_arriving_later_changes_nothing(h, store, inbox):
    address = make_address()
    now = datetime.now(UTC)
    h.upstream.put(upstream_token(address, twitter="https://x.com/kol/status/8"))
    inbox.accept([event(address, EARLY_FORMS["iso"])], now)
    tick(store, inbox, now)
    assert h.recorder.record_token(event(address, EARLY_FORMS["iso"]), owner="run-1").outcome is RecordOutcome.RECORDED
    inbox.accept([event(address, LATE)], now + timedelta(minutes=1))
    tick(store, inbox, now + timedelta(minutes=2))
    assert store.tokens.find_by_address(address).first_transfer_at == EARLY
    assert disagreeing(store, address) == []
