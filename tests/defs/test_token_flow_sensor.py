"""One tick of `token_flow_sensor` against the real broker and Mongo wire server."""

from __future__ import annotations

import json
import time
from datetime import UTC

import dagster as dg
import pytest

from socialrec_pipeline.defs import token_flow
from socialrec_pipeline.defs.tags import SOURCE_TAG, TOKEN_TAG
from socialrec_pipeline.defs.token_flow import token_flow_sensor
from socialrec_pipeline.recording.settings import SettingError
from socialrec_pipeline.stream.broker import REASON_HEADER
from socialrec_pipeline.stream.inbox import RecordInbox
from socialrec_pipeline.stream.intake import TickLimits, TokenFlowDrain

from .conftest import QUALIFYING_ADDRESSES, flow


def tick(instance, resources, cursor=None) -> dg.SensorResult:
    context = dg.build_sensor_context(instance=instance, resources=resources, cursor=cursor)
    return token_flow_sensor(context)


def test_mixed_batch_launches_one_run_per_qualifying_token(instance, broker, stream_resources):
    a, b, c = QUALIFYING_ADDRESSES
    broker.publish(flow(a, 6, symbol="POPCAT", firstFlowTimestamp="2026-11-29T21:14:03.512Z"))
    broker.publish(flow(b, 5))
    for _ in range(3):
        broker.publish(flow(c, 9))  # duplicates
    broker.publish(flow("4k3Dyjzvzp8eMZWUXbBCjEvwSkkk59S5iCNLY3QrkX6R", 4))  # below threshold
    bad = [
        b"{not json",
        json.dumps({"totalInvestedAlphaFinders": 7}).encode(),  # missing address
        json.dumps({"tokenAddress": a, "totalInvestedAlphaFinders": "7"}).encode(),  # wrong type
        json.dumps(flow(a, 7, pad="x" * 70_000)).encode(),  # oversized
    ]
    for body in bad:
        broker.publish(body)

    result = tick(instance, stream_resources)

    requests = result.run_requests
    assert sorted(r.tags[TOKEN_TAG] for r in requests) == sorted([a, b, c])
    assert all(r.tags[SOURCE_TAG] == "stream" and "sandbox" not in r.tags for r in requests)
    assert all(r.run_key.endswith(":0") for r in requests)
    config_a = next(r for r in requests if r.tags[TOKEN_TAG] == a).run_config["ops"]["prepare"]["config"]
    assert config_a["symbol"] == "POPCAT" and config_a["first_flow_timestamp"].startswith("2026-11-29T21:14:03")

    assert broker.depth(broker.queue) == 0
    dead = broker.dead_letters()
    assert sorted(body for body, _ in dead) == sorted(bad)
    assert all(headers.get(REASON_HEADER) for _, headers in dead)

    cursor = json.loads(result.cursor)
    assert cursor["last_tick"] == {
        "consumed": 10,
        "invalid": 4,
        "below_threshold": 1,
        "queued": 3,
        "launched": 3,
        "relaunched": 0,
        "rerequested": 0,
        "done": 0,
        "waiting": 0,
        "retrying": 0,
        "stuck": 0,
    }


def test_recorded_token_is_cleaned_and_not_launched(instance, broker, stream_resources, fresh_db):
    a, b, _ = QUALIFYING_ADDRESSES
    broker.publish(flow(a, 6))
    broker.publish(flow(b, 6))
    fresh_db["tokens"].insert_one({"address": a, "symbol": "DONE", "social_urls": []})  # the marker

    result = tick(instance, stream_resources)

    assert [r.tags[TOKEN_TAG] for r in result.run_requests] == [b]
    assert json.loads(result.cursor)["last_tick"]["done"] == 1
    assert RecordInbox(fresh_db).find(a) is None


def test_crash_before_ack_redelivers_without_a_second_run(instance, broker, stream_resources, monkeypatch):
    a = QUALIFYING_ADDRESSES[0]
    for _ in range(3):
        broker.publish(flow(a, 8))

    def crash(self, channel, delivery_tag):
        raise RuntimeError("injected: crash after the inbox write, before the ack")

    with monkeypatch.context() as patch:
        patch.setattr(TokenFlowDrain, "_acknowledge", crash)
        with pytest.raises(RuntimeError, match="injected"):
            tick(instance, stream_resources)

    assert broker.depth(broker.queue) == 3  # nothing was acknowledged
    first = tick(instance, stream_resources)
    second = tick(instance, stream_resources, cursor=first.cursor)
    run_keys = {r.run_key for r in first.run_requests + second.run_requests}
    # A re-yield carries the same key, which Dagster deduplicates.
    assert len(run_keys) == 1 and next(iter(run_keys)).startswith(f"{a}:") and next(iter(run_keys)).endswith(":0")
    assert broker.depth(broker.queue) == 0
    assert json.loads(second.cursor)["totals"]["consumed"] == 3


def test_tick_is_bounded_with_5000_queued_messages(instance, broker, stream_resources):
    body = json.dumps(flow(QUALIFYING_ADDRESSES[1], 2)).encode()
    for _ in range(5_000):
        broker.publish(body)
    started = time.monotonic()
    result = tick(instance, stream_resources)
    elapsed = time.monotonic() - started
    assert elapsed < TickLimits().max_seconds + 5  # the code location's sensor keeps the default bound
    assert json.loads(result.cursor)["last_tick"]["below_threshold"] == 5_000
    assert result.run_requests == []


def test_empty_queue_does_not_block(instance, broker, stream_resources):
    started = time.monotonic()
    result = tick(instance, stream_resources)
    assert time.monotonic() - started < 5
    assert result.run_requests == []


def test_sandbox_runs_are_tagged(instance, broker, stream_resources):
    from socialrec_pipeline.defs.resources import RabbitMQResource
    from socialrec_pipeline.stream.broker import queue_name_for

    assert queue_name_for("prod") == "af-social-scanner.token-flow.social-sync"
    assert queue_name_for("sandbox") == "af-social-scanner.token-flow.social-sync.sandbox"
    assert RabbitMQResource(env="sandbox").is_sandbox
    request = token_flow.run_request(token_flow.Launch(QUALIFYING_ADDRESSES[0], "entry1", 2, "X", None), sandbox=True)
    assert request.tags["sandbox"] == "true" and request.run_key.endswith(":2")


def test_malformed_threshold_fails_closed(instance, broker, stream_resources):
    from socialrec_pipeline.defs.resources import RecordingSettingsResource

    broker.publish(flow(QUALIFYING_ADDRESSES[0], 9))
    resources = {**stream_resources, "recording": RecordingSettingsResource(af_threshold="five")}
    with pytest.raises(SettingError):
        tick(instance, resources)
    assert broker.depth(broker.queue) == 1  # nothing consumed


def test_bodies_the_json_parser_chokes_on_are_dead_lettered_not_requeued_forever(instance, broker, stream_resources):
    # Both fit in 64 KiB, and json.loads raises RecursionError / ValueError (not JSONDecodeError) on them.
    deep = b"[" * 30_000 + b"]" * 30_000
    huge_int = b'{"tokenAddress": "%s", "totalInvestedAlphaFinders": %s}' % (
        QUALIFYING_ADDRESSES[0].encode(),
        b"9" * 5_000,
    )
    broker.publish(deep)
    broker.publish(huge_int)
    broker.publish(flow(QUALIFYING_ADDRESSES[1], 6))

    result = tick(instance, stream_resources)

    assert [r.tags[TOKEN_TAG] for r in result.run_requests] == [QUALIFYING_ADDRESSES[1]]
    assert broker.depth(broker.queue) == 0
    dead = broker.dead_letters()
    assert sorted(body for body, _ in dead) == sorted([deep, huge_int])
    assert all(headers.get(REASON_HEADER) for _, headers in dead)
    assert json.loads(result.cursor)["last_tick"]["invalid"] == 2


def test_mongo_outage_during_a_tick_acknowledges_nothing_it_could_not_persist(
    instance, broker, stream_resources, monkeypatch
):
    from pymongo.errors import AutoReconnect

    broker.publish(flow(QUALIFYING_ADDRESSES[0], 6))
    broker.publish(flow(QUALIFYING_ADDRESSES[1], 2))  # below threshold: acked only with its chunk
    broker.publish(b"{not json")

    def outage(self, events, now):
        raise AutoReconnect("injected: Mongo is unreachable")

    with monkeypatch.context() as patch:
        patch.setattr(RecordInbox, "accept", outage)
        failed = tick(instance, stream_resources)  # one line naming the service, not a traceback
        assert failed.skip_reason.skip_message.startswith("FAILED — MongoDB unreachable: check that it runs")

    assert broker.depth(broker.queue) == 3  # nothing acknowledged, nothing lost
    assert broker.depth(broker.dlq) == 0
    result = tick(instance, stream_resources)  # Mongo is back
    assert [r.tags[TOKEN_TAG] for r in result.run_requests] == [QUALIFYING_ADDRESSES[0]]
    assert broker.depth(broker.queue) == 0 and broker.depth(broker.dlq) == 1


def test_run_request_config_is_built_from_the_typed_op_config_and_fits_the_job():
    from datetime import datetime

    import dagster as dg

    from socialrec_pipeline.defs.record_token import record_token_job
    from socialrec_pipeline.defs.token_flow import run_request
    from socialrec_pipeline.stream.intake import Launch

    first = datetime(2026, 11, 29, tzinfo=UTC)
    launch = Launch("So11111111111111111111111111111111111111112", "entry", 0, "SOL", first)
    request = run_request(launch, sandbox=False)
    prepare = request.run_config["ops"]["prepare"]["config"]
    assert prepare["token_address"] == launch.token_address and prepare["symbol"] == "SOL"
    assert dg.validate_run_config(record_token_job, request.run_config)


def test_a_tick_that_cannot_reach_rabbitmq_says_so_in_one_line(instance, stream_resources):
    from socialrec_pipeline.defs.resources import RabbitMQResource

    down = {**stream_resources, "rabbitmq": RabbitMQResource(url="amqp://guest:guest@127.0.0.1:1/%2F")}
    result = tick(instance, down, cursor='{"totals": {"launched": 4}}')
    message = result.skip_reason.skip_message
    assert message.startswith("FAILED — RabbitMQ unreachable: check that the broker runs and RABBITMQ_URL")
    assert "\n" not in message and "Traceback" not in message
    assert result.cursor is None  # the totals so far are kept


def test_a_tick_that_cannot_reach_mongodb_says_so_in_one_line(instance, broker, stream_resources):
    from socialrec_pipeline.defs.resources import MongoResource

    broker.publish(flow(QUALIFYING_ADDRESSES[0], 6))
    down = {**stream_resources, "mongo": MongoResource(uri="mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=500")}
    result = tick(instance, down)
    assert result.skip_reason.skip_message.startswith("FAILED — MongoDB unreachable")
    assert broker.depth(broker.queue) == 1  # nothing acknowledged
    tick(instance, stream_resources)  # leave the queue empty for the next test


def test_an_error_that_is_not_a_service_outage_keeps_its_traceback():
    from pymongo.errors import DuplicateKeyError
    from redis import ConnectionError as RedisConnectionError

    from socialrec_pipeline.stream.unreachable import unreachable_service

    assert unreachable_service(ValueError("a bug")) is None
    assert unreachable_service(DuplicateKeyError("dup")) is None
    assert (unreachable_service(RedisConnectionError("refused")) or "").startswith("Redis unreachable")
    try:
        try:
            raise RedisConnectionError("refused")
        except RedisConnectionError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert (unreachable_service(outer) or "").startswith("Redis unreachable")  # found through the cause
