"""Operator polish: sandbox isolation, fresh demo addresses, tick outcomes, config errors, python_logs."""

from __future__ import annotations

import io
import json
import threading
import time
from pathlib import Path

import dagster as dg
import httpx
import pytest
import yaml

from socialrec_pipeline.defs.resources import RabbitMQResource, RecordingSettingsResource
from socialrec_pipeline.defs.token_flow import tick_outcome, token_flow_sensor
from socialrec_pipeline.recording.settings import SettingError
from socialrec_pipeline.sandbox import demo
from tests.ports import free_port_base

from .conftest import QUALIFYING_ADDRESSES, flow

ROOT = Path(__file__).resolve().parents[2]


def test_every_sandbox_has_a_queue_and_an_exchange_of_its_own_and_tags_its_runs():
    one, two = RabbitMQResource(env="sandbox-aaaa1111"), RabbitMQResource(env="sandbox-bbbb2222")
    assert one.queue != two.queue and one.queue.endswith(".sandbox-aaaa1111")
    urls = {k: "http://x" for k in ("soltracker", "x", "github", "youtube", "telegram", "apify", "reddit", "urlscan")}
    exchanges = {
        demo.environment(urls, env)["RABBITMQ_EXCHANGE"] for env in ("sandbox", "sandbox-aaaa1111", "sandbox-bbbb2222")
    }
    assert len(exchanges) == 3 and demo.SANDBOX_EXCHANGE in exchanges
    assert one.is_sandbox and two.is_sandbox and not RabbitMQResource(env="dev").is_sandbox


def test_publish_gives_fresh_addresses_the_stand_in_knows(broker, stream_resources, tmp_path):
    stop, env_file = threading.Event(), tmp_path / "sandbox.env"
    port_base = free_port_base()
    thread = threading.Thread(
        target=demo.serve,
        args=(io.StringIO(),),
        kwargs={"port_base": port_base, "env_file": str(env_file), "stop": stop, "env": broker.env},
    )
    thread.start()
    try:
        for _ in range(100):
            if env_file.exists():
                break
            time.sleep(0.05)
        env = demo.read_env_file(str(env_file))
        assert env["SOCIALREC_ENV"] == broker.env
        seen = set()
        for _ in range(2):  # a second publish starts runs again: new tokens each time
            assert (
                demo.publish(
                    io.StringIO(),
                    rabbitmq_url=broker.url,
                    env=broker.env,
                    exchange=broker.exchange,
                    soltracker_url=env["SOL_TRACKER_BASE_URL"],
                )
                == 0
            )
            with dg.DagsterInstance.ephemeral() as instance:
                result = token_flow_sensor(dg.build_sensor_context(instance=instance, resources=stream_resources))
            addresses = {r.run_key.split(":")[0] for r in result.run_requests} - seen  # earlier ones re-requested
            # two qualifying sample tokens and the one whose upstream lookup always fails (it ends stuck)
            assert len(addresses) == 3 and not addresses & {demo.POPCAT, demo.PUMPKIT}
            seen |= addresses
            answers = {}
            for address in addresses:  # the upstream stand-in knows them
                reply = httpx.get(
                    f"{env['SOL_TRACKER_BASE_URL']}/api/v1/tokens/{address}",
                    headers={"x-api-key": env["SOL_TRACKER_API_KEY"]},
                    timeout=5,
                )
                answers[address] = reply.status_code
                assert reply.status_code == 503 or reply.json()["address"] == address
            assert sorted(answers.values()) == [200, 200, 503]
    finally:
        stop.set()
        thread.join(timeout=10)


def test_the_tick_list_shows_what_each_tick_did(instance, broker, stream_resources):
    from .test_token_flow_sensor import tick

    idle = tick(instance, stream_resources)
    assert idle.cursor.startswith('{"why": "idle"')  # an idle tick does not read as work
    assert idle.skip_reason.skip_message.startswith("idle — token.flow queue empty")
    broker.publish(flow(QUALIFYING_ADDRESSES[0], 9))
    broker.publish(flow(QUALIFYING_ADDRESSES[1], 2))
    broker.publish(b"not json")
    busy = tick(instance, stream_resources, cursor=idle.cursor)
    assert json.loads(busy.cursor)["why"] == "1 launched, 1 dead-letter, 1 below 5"  # every count
    quiet = {"consumed": 3, "done": 1, "waiting": 0, "below_threshold": 0, "invalid": 0}
    assert tick_outcome(quiet, 0) == "1 recorded"
    nothing = {"consumed": 0, "done": 0, "waiting": 0, "below_threshold": 0, "invalid": 0}
    assert tick_outcome({**nothing, "stuck": 2}, 0) == "idle, 2 stuck"  # a gauge, not this tick's work
    assert tick_outcome({**nothing, "stuck": 1}, 1) == "1 launched, 1 stuck"
    assert tick_outcome({**quiet, "done": 0, "waiting": 2, "invalid": 1, "below_threshold": 3}, 0, 7) == (
        "2 waiting, 1 dead-letter, 3 below 7"
    )


def test_a_skipped_tick_starts_with_every_count(instance, broker, stream_resources):
    from .test_token_flow_sensor import tick

    tick(instance, stream_resources)  # drain what an earlier test left
    broker.publish(flow(QUALIFYING_ADDRESSES[1], 2))
    broker.publish(b"not json")
    skipped = tick(instance, stream_resources)
    assert not skipped.run_requests
    assert skipped.skip_reason.skip_message.startswith("1 dead-letter, 1 below 5 — 2 message(s)")


def test_a_malformed_setting_fails_the_tick_with_one_paragraph_naming_it(instance, broker, stream_resources):
    from .test_token_flow_sensor import tick

    resources = {**stream_resources, "recording": RecordingSettingsResource(af_threshold="3")}
    with pytest.raises(SettingError) as err:
        tick(instance, resources)
    message = str(err.value)
    assert message.startswith("SOCIALREC_AF_THRESHOLD=3 is refused") and "\n" not in message
    assert err.value.__cause__ is None and err.value.__suppress_context__


def test_module_loggers_reach_the_event_log_in_both_instance_files():
    for path in ("dagster.yaml", "deploy/dagster.yaml"):
        settings = yaml.safe_load((ROOT / path).read_text())["python_logs"]
        assert settings["managed_python_loggers"] == ["socialrec_pipeline"], path
        assert settings["python_log_level"] == "INFO", path


def test_module_log_records_are_in_the_run_log(tmp_path):
    import logging

    python_logs = yaml.safe_load((ROOT / "dagster.yaml").read_text())["python_logs"]

    @dg.op
    def speaks():
        logging.getLogger("socialrec_pipeline.recording.processor").info("hello from a module logger")

    @dg.job
    def talking():
        speaks()

    with dg.instance_for_test(overrides={"python_logs": python_logs}) as instance:
        result = talking.execute_in_process(instance=instance)
        messages = [e.user_message for e in instance.all_logs(result.run_id)]
    assert any("hello from a module logger" in m for m in messages)


def test_a_malformed_setting_fails_a_run_with_one_paragraph_naming_it(
    fixtures, instance, mongo_uri, fresh_db, redis_url
):
    from socialrec_pipeline.defs.retry import retry_job

    from .jobs_fixtures import job_resources

    server, _ = fixtures
    resources = {
        **job_resources(server.url, mongo_uri, fresh_db.name, redis_url),
        "recording": RecordingSettingsResource(enable_paid="yes please"),
    }
    result = retry_job.execute_in_process(
        partition_key="error", resources=resources, instance=instance, raise_on_error=False
    )
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    data = failure.event_specific_data
    assert data.user_failure_data.description.startswith(
        "SOCIALREC_ENABLE_PAID must be one of true/false/1/0, got 'yes please'"
    )
    assert "\n" not in data.user_failure_data.description
    assert data.error.cause is None  # no chained stack trace under the message


def test_every_external_asset_says_runs_write_it():
    from socialrec_pipeline.defs.assets import COLLECTION_SPECS

    for spec in COLLECTION_SPECS:
        text = spec.description or ""
        assert "Written by " in text and "not by a materialization" in text, spec.key
        assert "Report materialization event" not in text  # never an invitation to the button
    by_key = {spec.key.to_user_string(): spec.description or "" for spec in COLLECTION_SPECS}
    assert "Written by token_flow_sensor's ticks" in by_key["record_inbox"]
    assert "metric_refresh_job" in by_key["metric_series"] and "metric_refresh_job" not in by_key["tokens"]
