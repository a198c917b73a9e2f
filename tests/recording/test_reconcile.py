"""Reconcile: one existence query per page, same recording path, stop between tokens."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pymongo import MongoClient, monitoring

from socialrec_pipeline.domain.models import Token
from socialrec_pipeline.recording.reconcile import ReconcileService
from socialrec_pipeline.recording.settings import RecordingSettings
from socialrec_pipeline.recording.soltracker import UpstreamShapeError
from socialrec_pipeline.sandbox.fixture_server import Reply
from socialrec_pipeline.store import Store
from socialrec_pipeline.store.client import CODEC_OPTIONS

from . import harness
from .conftest import make_address

FROM = datetime(2026, 11, 30, 2, 0, tzinfo=UTC)
TO = FROM + timedelta(hours=1)


class Finds(monitoring.CommandListener):
    def __init__(self):
        self.in_queries = 0

    def started(self, event):
        if event.command_name == "find" and event.command.get("find") == "tokens":
            address = event.command.get("filter", {}).get("address")
            if isinstance(address, dict) and "$in" in address:
                self.in_queries += 1

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


@pytest.fixture
def monitored(fresh_db, mongo_uri):
    finds = Finds()
    client = MongoClient(mongo_uri, event_listeners=[finds], tz_aware=True)
    store = Store(client.get_database(fresh_db.name, codec_options=CODEC_OPTIONS))
    store.ensure_indexes()
    yield store, finds
    client.close()


def _at(minutes: int) -> str:
    return (FROM + timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")


def test_reconcile_records_missing_candidates_with_one_existence_query_per_page(monitored, redis_client, clock):
    store, finds = monitored
    env = harness.build(store, redis_client, clock, settings=RecordingSettings(reconcile_page_limit=2))
    try:
        new = [make_address(i) for i in range(3)]
        present = make_address(10)
        low = make_address(11)
        outside = make_address(12)
        for i, address in enumerate(new):
            env.upstream.put(harness_token(address, _at(i), twitter=f"https://x.com/a/status/{i + 1}"))
        env.upstream.put(harness_token(present, _at(5)))
        env.upstream.put(harness_token(low, _at(6), af=4))
        env.upstream.put(harness_token(outside, _at(61)))
        store.tokens.write_marker(Token.of(address=present, discovered_at=clock()))
        finds.in_queries = 0
        result = ReconcileService(store, env.client, env.recorder, clock=clock).run_window(FROM, TO, ["g-main"])
        assert (result.pages, result.candidates, result.present, result.recorded, result.below_threshold) == (
            3,
            4,
            1,
            3,
            1,
        )
        assert result.converged and result.url_statuses == {"ok": 3}
        # Pages: [new0, new1], [new2, present], [low] -> two pages had candidates.
        assert finds.in_queries == result.existence_queries == 2
        assert store.tokens.find_existing_addresses([*new, low, outside]) == set(new)
        assert env.server.calls("/api/v1/tokens/") == []  # no get_token: the token was in hand
        # A second run finds everything present and records nothing.
        again = ReconcileService(store, env.client, env.recorder, clock=clock).run_window(FROM, TO, ["g-main"])
        assert (again.present, again.recorded) == (4, 0)
    finally:
        env.server.stop()


def test_reconcile_skips_locked_tokens_and_stops_at_the_deadline_between_tokens(store, redis_client, clock):
    env = harness.build(store, redis_client, clock)
    try:
        a, b = make_address(20), make_address(21)
        env.upstream.put(harness_token(a, _at(1)))
        env.upstream.put(harness_token(b, _at(2)))
        env.locks.try_acquire(a, "stream-worker")
        result = ReconcileService(store, env.client, env.recorder, clock=clock).run_window(FROM, TO, [])
        assert (result.skipped_locked, result.recorded) == (1, 1) and not result.converged
        env.locks.release(a, "stream-worker")
        stopped = ReconcileService(store, env.client, env.recorder, clock=clock).run_window(
            FROM, TO, [], deadline=clock() - timedelta(seconds=1)
        )
        assert stopped.stopped_by == "deadline" and stopped.recorded == 0 and not store.tokens.exists(a)
    finally:
        env.server.stop()


class _PagesTakeAMinute:
    """The real SolTracker client, with the test clock moving one minute per page served."""

    def __init__(self, client, clock) -> None:
        self._client, self._clock = client, clock

    def iter_token_pages(self, *args, **kwargs):
        for page in self._client.iter_token_pages(*args, **kwargs):
            self._clock.now += timedelta(minutes=1)
            yield page


def test_reconcile_requests_no_further_page_after_the_deadline_when_every_token_exists(store, redis_client, clock):
    env = harness.build(store, redis_client, clock, settings=RecordingSettings(reconcile_page_limit=2))
    try:
        for i in range(6):  # three pages of two, every token already recorded
            address = make_address(40 + i)
            env.upstream.put(harness_token(address, _at(i)))
            store.tokens.write_marker(Token.of(address=address, discovered_at=clock()))
        upstream = _PagesTakeAMinute(env.client, clock)
        result = ReconcileService(store, upstream, env.recorder, clock=clock).run_window(
            FROM, TO, [], deadline=clock() + timedelta(seconds=30)
        )
        assert env.soltracker_calls() == 1  # the first page passed the deadline: no second request
        assert (result.pages, result.present, result.recorded) == (1, 2, 0)
        assert result.stopped_by == "deadline" and not result.converged
        # Without a deadline the same window is read to the end.
        full = ReconcileService(store, upstream, env.recorder, clock=clock).run_window(FROM, TO, [])
        assert (full.pages, full.present, full.stopped_by) == (3, 6, None) and env.soltracker_calls() == 4
    finally:
        env.server.stop()


def test_reconcile_past_its_deadline_before_the_first_page_asks_the_upstream_nothing(store, redis_client, clock):
    env = harness.build(store, redis_client, clock)
    try:
        env.upstream.put(harness_token(make_address(50), _at(1)))
        result = ReconcileService(store, env.client, env.recorder, clock=clock).run_window(
            FROM, TO, [], deadline=clock()
        )
        assert env.soltracker_calls() == 0
        assert (result.pages, result.stopped_by) == (0, "deadline")
    finally:
        env.server.stop()


def test_a_malformed_page_raises_rather_than_reading_as_empty(store, redis_client, clock):
    env = harness.build(store, redis_client, clock)
    try:
        env.upstream.fail_with(Reply.json({"tokens": []}))  # wrong envelope
        with pytest.raises(UpstreamShapeError):
            ReconcileService(store, env.client, env.recorder, clock=clock).run_window(FROM, TO, [])
    finally:
        env.server.stop()


def harness_token(address, last_transfer, af=6, **socials):
    from socialrec_pipeline.sandbox.soltracker import upstream_token

    return upstream_token(address, af=af, last_transfer=last_transfer, **socials)


def test_deferred_tokens_are_recorded_whole_later_and_count_what_happened_meanwhile(store, redis_client, clock):
    from socialrec_pipeline.domain.enums import Platform
    from socialrec_pipeline.recording.paid import DeferPaidCalls, HeldPaidSlot

    settings = RecordingSettings(enable_paid=True, paid_platforms=frozenset({Platform.X}))  # tweets are paid here
    env = harness.build(store, redis_client, clock, settings=settings)
    try:
        paid, locked, meanwhile, free = (make_address(60 + i) for i in range(4))
        for i, address in enumerate((paid, locked, meanwhile)):
            env.upstream.put(harness_token(address, _at(i), twitter=f"https://x.com/a/status/{60 + i}"))
        env.upstream.put(harness_token(free, _at(5), website="https://free.example/"))
        env.recorder.paid_slots = DeferPaidCalls()
        service = ReconcileService(store, env.client, env.recorder, clock=clock)
        first = service.run_window(FROM, TO, [], owner="run-1", defer_paid=True)
        assert [t.address for t in first.deferred] == [paid, locked, meanwhile]
        assert (first.candidates, first.recorded) == (4, 1) and store.tokens.exists(free)
        assert not any(store.tokens.exists(a) or env.locks.owner_of(a) for a in (paid, locked, meanwhile))
        env.locks.try_acquire(locked, "stream-worker")
        store.tokens.write_marker(Token.of(address=meanwhile, discovered_at=clock()))

        env.recorder.paid_slots = HeldPaidSlot()
        parts = [service.record_deferred(token, owner="run-1") for token in first.deferred]
        total = first.merged(parts)
        assert (total.candidates, total.recorded, total.skipped_locked, total.present) == (4, 2, 1, 1)
        assert total.url_statuses == {"ok": 2} and store.tokens.exists(paid) and not store.tokens.exists(locked)
        late = service.record_deferred(first.deferred[1], clock() - timedelta(seconds=1), owner="run-1")
        assert late.stopped_by == "deadline" and first.merged([late]).stopped_by == "deadline"
    finally:
        env.server.stop()
