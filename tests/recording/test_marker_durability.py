"""Issue 19, defect 1: a marker and the links it stands for survive the database being killed
(SIGKILL, no flush) right after the marker's write returned, and an inbox entry ends only when its
marker is read back. The database is a SecantusDB server of the test's own, in a separate process
killed by its PID and restarted on the same storage."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from bench.own_services import OwnSecantus, start_on_free_port
from socialrec_pipeline.domain.events import TokenFlowEvent
from socialrec_pipeline.recording.processor import RecordOutcome
from socialrec_pipeline.sandbox.soltracker import upstream_token
from socialrec_pipeline.store import Store
from socialrec_pipeline.store.client import open_client, open_database
from socialrec_pipeline.stream.inbox import RecordInbox
from socialrec_pipeline.stream.intake import EndedRun, plan_launches
from tests.ports import free_ports

from . import harness
from .conftest import make_address

pytestmark = pytest.mark.slow  # starts real processes: scheduled first, left out by --quick
ROUNDS = 3


@pytest.fixture
def own_mongo(tmp_path) -> Iterator[OwnSecantus]:
    server = start_on_free_port(
        lambda port: OwnSecantus(port, storage=str(tmp_path / "mongo"), workdir=str(tmp_path)),
        free_ports(),
        "SecantusDB",
    )
    yield server
    server.stop()


def event(address: str) -> TokenFlowEvent:
    return TokenFlowEvent.model_validate(
        {"tokenAddress": address, "totalInvestedAlphaFinders": 6, "firstFlowTimestamp": "2026-11-29T21:14:03Z"}
    )


def test_the_marker_and_its_links_survive_a_sigkill_right_after_write_marker_returns(own_mongo, redis_client):
    db_name = f"t_{uuid.uuid4().hex[:10]}"
    now = datetime.now(UTC)
    lost_markers, lost_links, relaunched = [], [], []
    for round_ in range(ROUNDS):
        client = open_client(own_mongo.uri, timeout_ms=2_000)
        db = open_database(client, db_name)
        store = Store(db)
        inbox = RecordInbox(db)
        if round_ == 0:
            store.ensure_indexes()
            inbox.ensure_indexes()
        h = harness.build(store, redis_client)
        address = make_address()
        try:
            inbox.accept([event(address)], now)
            plan_launches(inbox, store.tokens.find_existing_addresses, set(), now)  # launched
            h.upstream.put(
                upstream_token(address, website="https://kol.example/", twitter="https://x.com/kol/status/7")
            )
            result = h.recorder.record_token(event(address), owner=f"run-{round_}")
            assert result.outcome is RecordOutcome.RECORDED and result.links_appended == 3
        finally:
            h.server.stop()
            h.client.close()
            client.close()
        own_mongo.kill()  # right after write_marker returned: no shutdown, no flush
        own_mongo.start()  # the same storage

        client = open_client(own_mongo.uri, timeout_ms=2_000)
        db = open_database(client, db_name)
        try:
            store, inbox = Store(db), RecordInbox(db)
            if store.tokens.find_by_address(address) is None:
                lost_markers.append(address)
            if len(store.links.find_by_token(address)) != 3:
                lost_links.append(address)
            # The run ended green, "recorded": the entry ends only once the marker is read back.
            green = lambda keys: {k: EndedRun("r", "SUCCESS", "recorded") for k in keys}  # noqa: E731
            plan = plan_launches(
                inbox, store.tokens.find_existing_addresses, set(), now + timedelta(seconds=30), ended_runs=green
            )
            entry = inbox.find(address)
            if entry is not None:
                relaunched.append((address, entry.state, plan.done))
        finally:
            client.close()
    assert lost_markers == [] and lost_links == [], (lost_markers, lost_links)
    assert relaunched == []  # every entry was removed, because every marker was read back
