"""Stream rules of SPEC §2.1 / §6 through the real sensor, broker and Mongo wire server:
one message never stalls the queue, event strings are bounded and clean, the inbox write is
journaled before the ack (checked against a server killed with SIGKILL), and the earliest
duplicate wins."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import dagster as dg
import pytest
from pymongo import MongoClient, UpdateOne, monitoring

from bench.own_services import OwnSecantus, port_free, start_on_free_port
from socialrec_pipeline.defs.resources import MongoResource
from socialrec_pipeline.defs.tags import TOKEN_TAG
from socialrec_pipeline.defs.token_flow import token_flow_sensor
from socialrec_pipeline.domain.models import Token
from socialrec_pipeline.store import Store
from socialrec_pipeline.store.client import open_database
from socialrec_pipeline.stream.broker import REASON_HEADER
from socialrec_pipeline.stream.inbox import RecordInbox
from socialrec_pipeline.stream.intake import TokenFlowDrain, plan_launches
from tests.ports import free_ports

from .conftest import QUALIFYING_ADDRESSES, flow

A, B, C = QUALIFYING_ADDRESSES


def tick(instance, resources, cursor=None, sensor=token_flow_sensor) -> dg.SensorResult:
    return sensor(dg.build_sensor_context(instance=instance, resources=resources, cursor=cursor))


def launched(result: dg.SensorResult) -> list[str]:
    return [r.tags[TOKEN_TAG] for r in result.run_requests or []]


# -- 1. one message never stalls the queue ---------------------------------------------------------


class GroupKeepingInbox(RecordInbox):
    """An inbox that also stores the event's `afGroupId` as received: a field the event model does
    not clean, standing for any value that validates and still cannot be stored (here a lone
    UTF-16 surrogate, which BSON cannot encode — a real encoding failure on the real server)."""

    def accept(self, events, now):
        events = list(events)
        groups = [
            UpdateOne({"token_address": e.token_address}, {"$set": {"group": e.af_group_id}})
            for e in events
            if e.af_group_id is not None
        ]
        if groups:  # encoded (and refused) before anything is sent, like the entries' own write
            self._writes.bulk_write(groups)
        count = super().accept(events, now)
        if groups:
            self._writes.bulk_write(groups)
        return count


def test_a_message_that_validates_but_cannot_be_stored_is_dead_lettered_and_the_rest_go_on(broker, fresh_db):
    poison = json.dumps(flow(B, 6, afGroupId="\ud800")).encode()  # json escapes it as "\ud800"
    assert b"\\ud800" in poison
    broker.publish(flow(A, 6, afGroupId="g-main"))
    broker.publish(poison)
    broker.publish(flow(C, 7))
    inbox = GroupKeepingInbox(fresh_db)
    inbox.ensure_indexes()

    for _ in range(2):  # a second tick must find nothing left behind
        counts = TokenFlowDrain(broker.url, broker.queue, inbox, 5, exchange=broker.exchange).run()
        if counts.consumed == 0:
            break
        assert counts.queued == 2 and counts.invalid == 1

    assert broker.depth(broker.queue) == 0  # nothing stalls, nothing is redelivered
    assert inbox.find(A) is not None and inbox.find(C) is not None and inbox.find(B) is None
    dead = broker.dead_letters()
    assert [body for body, _ in dead] == [poison]
    assert dead[0][1][REASON_HEADER] == "cannot be stored: UnicodeEncodeError"


def test_an_infrastructure_failure_fails_the_tick_and_acknowledges_nothing(broker):
    broker.publish(flow(A, 6))
    broker.publish(flow(B, 2))
    broker.publish(b"{not json")
    port = next(p for p in range(21110, 21120) if port_free(p))  # nothing listens there
    dead_db = open_database(MongoClient(f"mongodb://127.0.0.1:{port}/", serverSelectionTimeoutMS=300), "x")
    with pytest.raises(Exception) as raised:
        TokenFlowDrain(broker.url, broker.queue, RecordInbox(dead_db), 5, exchange=broker.exchange).run()
    assert "ServerSelectionTimeout" in type(raised.value).__name__
    assert broker.depth(broker.queue) == 3 and broker.depth(broker.dlq) == 0


# -- 2. event strings bounded and clean ------------------------------------------------------------


@pytest.mark.parametrize(
    "symbol",
    [
        "x" * 65,  # longer than any real symbol
        "POP\u202eTAC",  # right-to-left override
        "POP\u2066CAT",  # bidi isolate
        "POP\nCAT",  # control
        "POP\x00",
        "\ud800",  # lone surrogate: BSON cannot even store it
        "   ",
    ],
)
def test_a_bad_symbol_is_dropped_in_favour_of_the_upstream_and_the_token_still_launches(
    instance, broker, stream_resources, fresh_db, symbol
):
    broker.publish(flow(A, 6, symbol=symbol))
    result = tick(instance, stream_resources)
    assert launched(result) == [A]
    config = result.run_requests[0].run_config["ops"]["prepare"]["config"]
    assert config.get("symbol") is None  # omitted = null: prepare then takes the upstream's symbol
    assert "symbol" not in fresh_db["record_inbox"].find_one({"token_address": A})
    assert broker.depth(broker.queue) == 0 and broker.depth(broker.dlq) == 0


def test_a_clean_symbol_reaches_run_config_stripped(instance, broker, stream_resources):
    broker.publish(flow(A, 6, symbol="  🐸‍🔥 PEPE "))  # emoji with a zero-width joiner is fine
    result = tick(instance, stream_resources)
    assert result.run_requests[0].run_config["ops"]["prepare"]["config"]["symbol"] == "🐸‍🔥 PEPE"


@pytest.mark.parametrize("stamp", [0, "2019-01-01T00:00:00Z", "2999-01-01T00:00:00Z"])
def test_an_implausible_first_flow_time_is_dropped(instance, broker, stream_resources, stamp):
    broker.publish(flow(A, 6, firstFlowTimestamp=stamp))
    result = tick(instance, stream_resources)
    assert result.run_requests[0].run_config["ops"]["prepare"]["config"].get("first_flow_timestamp") is None


# -- 3. the inbox write is journaled before the ack ---------------------------------------------


class _Writes(monitoring.CommandListener):
    def __init__(self) -> None:
        self.commands: list[dict] = []

    def started(self, event):
        if event.command_name in ("insert", "update", "delete"):
            self.commands.append(dict(event.command))

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


def test_every_inbox_write_asks_for_a_journaled_majority_write(mongo_uri, fresh_db):
    listener = _Writes()
    client = MongoClient(mongo_uri, event_listeners=[listener], tz_aware=True)
    try:
        inbox = RecordInbox(open_database(client, fresh_db.name))
        inbox.ensure_indexes()
        listener.commands.clear()
        now = datetime.now(UTC)
        from socialrec_pipeline.domain.events import TokenFlowEvent

        inbox.accept([TokenFlowEvent.model_validate(flow(A, 6)), TokenFlowEvent.model_validate(flow(B, 6))], now)
        plan_launches(inbox, lambda addrs: {B} & set(addrs), set(), now)  # apply (A) + remove (B)
    finally:
        client.close()
    assert {c.get("update") or c.get("delete") for c in listener.commands} == {"record_inbox"}
    assert len(listener.commands) >= 3
    # The embedded server reports a replica set (setName), so the majority is asked for as well.
    assert all(c.get("writeConcern", {}).get("j") is True for c in listener.commands), listener.commands
    assert all(c["writeConcern"].get("w") == "majority" for c in listener.commands)


@pytest.fixture
def own_mongo(tmp_path):
    server = start_on_free_port(
        lambda port: OwnSecantus(port, storage=str(tmp_path / "mongo"), workdir=str(tmp_path)),
        free_ports(),
        "SecantusDB",
    )
    yield server
    server.stop()


@pytest.mark.slow
def test_an_acknowledged_entry_survives_the_database_killed_right_after_the_tick(
    instance, broker, stream_resources, own_mongo
):
    """SIGKILL of the server process right after the tick: what the tick acknowledged must be
    there when the server comes back on the same storage. (The embedded server loses un-journaled
    writes on SIGKILL; it cannot show what a power loss would do to the OS page cache.)"""
    db_name = f"t_{uuid.uuid4().hex[:10]}"
    resources = {**stream_resources, "mongo": MongoResource(uri=own_mongo.uri, database=db_name)}
    broker.publish(flow(A, 6, firstFlowTimestamp="2026-11-29T21:14:03Z"))
    broker.publish(flow(B, 9))

    result = tick(instance, resources)
    assert sorted(launched(result)) == sorted([A, B])
    assert broker.depth(broker.queue) == 0  # acknowledged
    own_mongo.kill()
    own_mongo.start()

    client = MongoClient(own_mongo.uri, tz_aware=True)
    try:
        entries = {d["token_address"]: d for d in client[db_name]["record_inbox"].find()}
    finally:
        client.close()
    assert set(entries) == {A, B}
    assert entries[A]["first_flow_timestamp"] == datetime(2026, 11, 29, 21, 14, 3, tzinfo=UTC)


# -- 5. the earliest duplicate wins -------------------------------------------------------------


def test_out_of_order_duplicates_keep_the_earliest_first_flow_time(instance, broker, stream_resources, fresh_db):
    late, early, middle = "2026-11-29T22:00:00Z", "2026-11-29T20:00:00Z", "2026-11-29T21:00:00Z"
    broker.publish(flow(A, 6, firstFlowTimestamp=late))
    broker.publish(flow(A, 6))  # no time at all: changes nothing
    broker.publish(flow(A, 6, firstFlowTimestamp=early))
    first = tick(instance, stream_resources)
    assert (
        first.run_requests[0]
        .run_config["ops"]["prepare"]["config"]["first_flow_timestamp"]
        .startswith("2026-11-29T20:00:00")
    )
    broker.publish(flow(A, 6, firstFlowTimestamp=middle))  # a later tick, a later time: no change
    tick(instance, stream_resources, cursor=first.cursor)
    entry = RecordInbox(fresh_db).find(A)
    assert entry.first_flow_timestamp == datetime(2026, 11, 29, 20, tzinfo=UTC)


def test_a_duplicate_arriving_after_the_marker_moves_first_transfer_at_earlier(
    instance, broker, stream_resources, fresh_db
):
    store = Store(fresh_db)
    store.ensure_indexes()
    t_marker = datetime(2026, 11, 29, 22, tzinfo=UTC)
    store.tokens.write_marker(Token.of(address=A, discovered_at=t_marker, social_urls=[], first_transfer_at=t_marker))
    # A second recording path (reconcile, retry) with a later time never moves it later.
    store.tokens.write_marker(
        Token.of(address=A, discovered_at=t_marker, social_urls=[], first_transfer_at=t_marker + timedelta(hours=1))
    )
    assert fresh_db["tokens"].find_one({"address": A})["first_transfer_at"] == t_marker

    broker.publish(flow(A, 6, firstFlowTimestamp="2026-11-29T23:00:00Z"))  # later: ignored
    broker.publish(flow(A, 6, firstFlowTimestamp="2026-11-29T19:30:00Z"))  # earlier: wins
    result = tick(instance, stream_resources)

    assert launched(result) == [] and json.loads(result.cursor)["last_tick"]["done"] == 1
    assert fresh_db["tokens"].find_one({"address": A})["first_transfer_at"] == datetime(
        2026, 11, 29, 19, 30, tzinfo=UTC
    )
    assert RecordInbox(fresh_db).find(A) is None


# -- 4. a failed token is relaunched without waiting for another event ------------------------------


def _failed_run(instance, run_key: str, address: str) -> str:
    """A red `record_token_job` run started by the sensor's request `run_key` (as the daemon would tag it)."""
    RUN_KEY_TAG = "dagster/run_key"  # the run key's documented tag name

    from socialrec_pipeline.defs.record_token import record_token_job

    run = instance.create_run_for_job(
        record_token_job,
        run_config={"ops": {"prepare": {"config": {"token_address": address}}}},
        tags={RUN_KEY_TAG: run_key, TOKEN_TAG: address, "socialrec/outcome": "upstream_failed"},
        status=dg.DagsterRunStatus.FAILURE,
    )
    return run.run_id


def test_the_sensor_relaunches_a_failed_token_with_a_new_run_key_and_reports_it_stuck_past_the_cap(
    broker, stream_resources
):
    from socialrec_pipeline.defs.token_flow import build_token_flow_sensor
    from socialrec_pipeline.stream.intake import TickLimits

    # No grace and no backoff delay, one automatic relaunch: the whole cycle in four ticks.
    sensor = build_token_flow_sensor(TickLimits(relaunch_grace=timedelta(0), backoff=(timedelta(0),)))
    with dg.DagsterInstance.ephemeral() as instance:
        broker.publish(flow(A, 6))
        first = tick(instance, stream_resources, sensor=sensor)
        [key0] = [r.run_key for r in first.run_requests]
        run0 = _failed_run(instance, key0, A)

        second = tick(instance, stream_resources, first.cursor, sensor)  # sees the red run: backoff
        assert launched(second) == [] and json.loads(second.cursor)["last_tick"]["retrying"] == 1
        third = tick(instance, stream_resources, second.cursor, sensor)  # due: relaunched, no event needed
        [request] = third.run_requests
        assert request.run_key != key0 and request.run_key.endswith(":1")
        tick_log = json.loads(third.cursor)["last_tick"]
        assert tick_log["launched"] == 1 and tick_log["relaunched"] == 1

        run1 = _failed_run(instance, request.run_key, A)
        fourth = tick(instance, stream_resources, third.cursor, sensor)
        assert launched(fourth) == [] and run0 != run1
        cursor = json.loads(fourth.cursor)
        assert cursor["last_tick"]["stuck"] == 1
        assert [(s["token_address"], s["last_failed_run_id"], s["failures"]) for s in cursor["stuck_tokens"]] == [
            (A, run1, 2)
        ]
        skip = getattr(fourth.skip_reason, "skip_message", fourth.skip_reason)
        assert "stuck" in skip
