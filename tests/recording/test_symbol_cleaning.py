"""Issue 19 defect 4: a symbol from SolTracker reaches the marker only if it passes the one rule,
on the stream path (the event has no symbol) and on reconcile; a dirty symbol given with a manual
launch falls back to the upstream's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from socialrec_pipeline.domain.events import TokenFlowEvent
from socialrec_pipeline.recording.processor import RecordOutcome
from socialrec_pipeline.recording.reconcile import ReconcileService
from socialrec_pipeline.sandbox.soltracker import upstream_token

from . import harness
from .conftest import make_address

DIRTY = {
    "bidi override": "POP\u202eTAC",
    "ANSI escape and BEL": "\x1b]0;pwned\x07PEPE",
    "newline": "PEPE\nSEND 1 SOL",
    "zero-width space": "PE\u200bPE",
    "70,000 characters": "W" * 70_000,
}


@pytest.fixture
def env(store, redis_client, clock):
    e = harness.build(store, redis_client, clock)
    yield e
    e.server.stop()
    e.client.close()


@pytest.mark.parametrize("symbol", DIRTY.values(), ids=DIRTY.keys())
def test_the_stream_path_never_writes_a_dirty_upstream_symbol(env, store, symbol):
    address = make_address()
    env.upstream.put(upstream_token(address, symbol=symbol, website="https://pop.example"))
    event = TokenFlowEvent.model_validate({"tokenAddress": address, "totalInvestedAlphaFinders": 6})
    result = env.recorder.record_token(event, owner="w1")
    assert result.outcome is RecordOutcome.RECORDED
    assert store.tokens.find_by_address(address).symbol is None
    assert "symbol" not in store.db.tokens.find_one({"address": address})


@pytest.mark.parametrize("symbol", DIRTY.values(), ids=DIRTY.keys())
def test_reconcile_never_writes_a_dirty_upstream_symbol(env, store, clock, symbol):
    address = make_address()
    start = datetime(2026, 11, 30, 2, 0, tzinfo=UTC)
    env.upstream.put(upstream_token(address, symbol=symbol, last_transfer="2026-11-30T02:05:00Z"))
    result = ReconcileService(store, env.client, env.recorder, clock=clock).run_window(
        start, start + timedelta(hours=1), []
    )
    assert result.recorded == 1
    assert store.tokens.find_by_address(address).symbol is None


def test_a_dirty_symbol_given_by_hand_falls_back_to_the_upstream(env, store):
    address = make_address()
    env.upstream.put(upstream_token(address, symbol="POP"))
    prepared = env.recorder.prepare(address, None, "POP\u200b", owner="op")
    result = env.recorder.record_prepared(prepared)
    assert result.outcome is RecordOutcome.RECORDED
    assert store.tokens.find_by_address(address).symbol == "POP"
