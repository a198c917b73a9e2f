"""SPEC §4.1: our own MongoDB or Redis failing while a URL's graph or the marker is written is never
a URL status. The recording raises (the run fails, `infra_failed`) and the relaunch records the URL
as the target deserves. Each test runs a server of its own in a separate process and stops it
mid-recording by its PID; the shared services are never touched."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

import pytest
import redis as redis_lib
from pymongo.errors import PyMongoError

from bench.own_services import OwnRedis, OwnSecantus, start_on_free_port
from socialrec_pipeline.domain.enums import FetchStatus, Platform
from socialrec_pipeline.domain.events import TokenFlowEvent
from socialrec_pipeline.recording.locks import PaidCreditGuard
from socialrec_pipeline.recording.processor import PreparedToken, RecordOutcome
from socialrec_pipeline.recording.provider_stops import InMemoryProviderStops
from socialrec_pipeline.recording.settings import RecordingSettings
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.sandbox.soltracker import upstream_token
from socialrec_pipeline.store import Store
from socialrec_pipeline.store.client import open_client, open_database
from tests.ports import free_ports

from . import harness
from .conftest import make_address
from .graphs import FixedGenerator

pytestmark = pytest.mark.slow  # starts real processes: scheduled first, left out by --quick
TWEET = "https://x.com/kolguy/status/42"


@pytest.fixture
def own_mongo(tmp_path) -> Iterator[OwnSecantus]:
    server = start_on_free_port(
        lambda port: OwnSecantus(port, storage=str(tmp_path / "mongo"), workdir=str(tmp_path)),
        free_ports(),
        "SecantusDB",
    )
    yield server
    server.stop()


@pytest.fixture
def own_redis(tmp_path) -> Iterator[OwnRedis]:
    server = start_on_free_port(lambda port: OwnRedis(port, workdir=str(tmp_path)), free_ports(), "Redis")
    yield server
    server.stop()


def event(address: str) -> TokenFlowEvent:
    return TokenFlowEvent.model_validate(
        {"tokenAddress": address, "totalInvestedAlphaFinders": 6, "firstFlowTimestamp": "2026-11-29T21:14:03Z"}
    )


def _prepare(h: harness.Harness, address: str) -> PreparedToken:
    prepared = h.recorder.prepare(address, None, None, "w1")
    assert isinstance(prepared, PreparedToken), prepared
    return prepared


def test_mongodb_failing_while_a_url_s_graph_is_written_fails_the_recording_and_the_relaunch_records_it_ok(
    own_mongo, redis_client
):
    client = open_client(own_mongo.uri, timeout_ms=1_000)
    store = Store(open_database(client, f"t_{uuid.uuid4().hex[:10]}"))
    store.ensure_indexes()

    def dies_then_answers(routed):
        if dying:
            own_mongo.stop()  # the database goes away between the call and the graph's write
        return harness.tweet_graph(routed)

    dying = True
    generator = FixedGenerator({SourceType.X_TWEET}, build=dies_then_answers)
    h = harness.build(store, redis_client, generators=[generator])
    address = make_address()
    try:
        h.upstream.put(upstream_token(address, twitter=TWEET))
        prepared = _prepare(h, address)
        [planned] = prepared.planned
        with pytest.raises(PyMongoError):  # not an `error` status of the URL
            h.recorder.record_one_url(prepared, planned)
        h.locks.release(address, "w1")

        own_mongo.start()  # the database is back: the relaunch records the URL as the target deserves
        dying = False
        result = h.recorder.record_token(event(address), owner="w2")
        assert result.outcome is RecordOutcome.RECORDED
        [url] = store.tokens.find_by_address(address).social_urls
        assert url.status is FetchStatus.OK and url.attempts == 1
        assert len(store.links.find_by_token(address)) == 2  # the tweet and its author
    finally:
        h.server.stop()
        h.client.close()
        client.close()


def test_mongodb_failing_while_the_marker_is_written_fails_the_recording(own_mongo, redis_client):
    client = open_client(own_mongo.uri, timeout_ms=1_000)
    store = Store(open_database(client, f"t_{uuid.uuid4().hex[:10]}"))
    store.ensure_indexes()
    h = harness.build(store, redis_client)
    address = make_address()
    try:
        h.upstream.put(upstream_token(address, twitter=TWEET))
        prepared = _prepare(h, address)
        results = [h.recorder.record_one_url(prepared, planned) for planned in prepared.planned]
        assert [r.status for r in results] == [FetchStatus.OK]
        own_mongo.stop()
        with pytest.raises(PyMongoError):
            h.recorder.finish(prepared, results)
        assert h.locks.owner_of(address) is None  # released all the same
    finally:
        h.server.stop()
        h.client.close()
        client.close()


class _RedisDiesWhileWaiting:
    """The paid pool's slot: Redis goes away while the call waits for it (the guard is read again
    once the slot is held, right before the call)."""

    def __init__(self, server: OwnRedis) -> None:
        self.server = server

    @contextlib.contextmanager
    def slot(self, label: str) -> Iterator[None]:
        self.server.stop()
        yield


def test_redis_failing_while_a_paid_url_is_recorded_fails_the_recording_not_the_url(store, own_redis, redis_client):
    own = redis_lib.Redis.from_url(own_redis.url, socket_timeout=1, socket_connect_timeout=1)
    settings = RecordingSettings(enable_paid=True, paid_platforms=frozenset({Platform.X}))
    h = harness.build(store, redis_client, settings=settings)
    h.recorder.paid_slots = _RedisDiesWhileWaiting(own_redis)
    guard = PaidCreditGuard(own, scope=f"t-{uuid.uuid4().hex[:8]}")
    address = make_address()
    try:
        h.upstream.put(upstream_token(address, twitter=TWEET))
        prepared = _prepare(h, address)
        [planned] = prepared.planned
        with pytest.raises(redis_lib.RedisError):  # not an `error` status of the URL
            h.recorder.record_one_url(prepared, planned, guard, InMemoryProviderStops())
        assert h.generators[0].calls == []  # and no paid call was made without the guard's answer
    finally:
        h.locks.release(address, "w1")
        h.server.stop()
        h.client.close()
        own.close()
