"""The offline demo: stand-ins serve a full recording; publish feeds the sensor a mixed sample."""

from __future__ import annotations

import contextlib
import io
import json
import threading
import time
from datetime import UTC, datetime, timedelta

import dagster as dg

from socialrec_pipeline.defs.record_token import record_token_job
from socialrec_pipeline.defs.resources import (
    ApifyResource,
    GeneratorsResource,
    GitHubResource,
    MongoResource,
    RecordingSettingsResource,
    RedditResource,
    RedisResource,
    SolTrackerResource,
    TelegramResource,
    UrlscanResource,
    XApiResource,
    YouTubeResource,
)
from socialrec_pipeline.defs.token_flow import token_flow_sensor
from socialrec_pipeline.sandbox import demo
from tests.ports import free_port_base

from .jobs_fixtures import reconcile_job_with, reconcile_metadata


def resources_from(env: dict, mongo_uri: str, db: str, redis_url: str) -> dict:
    return {
        "mongo": MongoResource(uri=mongo_uri, database=db),
        "redis": RedisResource(url=redis_url),
        "soltracker": SolTrackerResource(base_url=env["SOL_TRACKER_BASE_URL"], api_key=env["SOL_TRACKER_API_KEY"]),
        "recording": RecordingSettingsResource(),
        "generators": GeneratorsResource(
            x=XApiResource(base_url=env["TWITTERAPI_BASE_URL"], api_key=env["TWITTERAPI_API_KEY"]),
            github=GitHubResource(base_url=env["GITHUB_API_BASE_URL"], token=env["GITHUB_TOKEN"]),
            youtube=YouTubeResource(base_url=env["YOUTUBE_API_BASE_URL"], api_key=env["YOUTUBE_API_KEY"]),
            telegram=TelegramResource(base_url=env["TELEGRAM_BASE_URL"]),
            apify=ApifyResource(base_url=env["APIFY_BASE_URL"], token=env["APIFY_TOKEN"]),
            reddit=RedditResource(base_url=env["REDDIT_BASE_URL"]),
            urlscan=UrlscanResource(base_url=env["URLSCAN_BASE_URL"], api_key=env["URLSCAN_API_KEY"]),
        ),
    }


@contextlib.contextmanager
def serving(tmp_path):
    """`socialrec sandbox serve` in a thread on free ports; yields its environment."""
    stop, out = threading.Event(), io.StringIO()
    env_file = tmp_path / "sandbox.env"
    port_base = free_port_base()  # 8 consecutive ports free now (a busy machine holds many)
    thread = threading.Thread(
        target=demo.serve, args=(out,), kwargs={"port_base": port_base, "env_file": str(env_file), "stop": stop}
    )
    thread.start()
    try:
        for _ in range(100):
            if env_file.exists():
                break
            time.sleep(0.05)
        env = dict(line.removeprefix("export ").split("=", 1) for line in env_file.read_text().splitlines())
        assert env["SOCIALREC_ENV"] == "sandbox" and env["SOL_TRACKER_BASE_URL"] == f"http://127.0.0.1:{port_base}"
        yield env
    finally:
        stop.set()
        thread.join(timeout=10)


def test_serve_gives_a_full_recording_of_both_demo_tokens(mongo_uri, fresh_db, redis_url, tmp_path):
    from socialrec_pipeline.recording.locks import TokenLocks, UnknownTokenCache, open_redis

    client = open_redis(redis_url)
    for address in (demo.POPCAT, demo.PUMPKIT):  # shared Redis: no stale lock from an earlier run
        UnknownTokenCache(client).forget(address)
    with serving(tmp_path) as env, dg.DagsterInstance.ephemeral() as instance:
        resources = resources_from(env, mongo_uri, fresh_db.name, redis_url)
        for address in (demo.POPCAT, demo.PUMPKIT):
            config = {"ops": {"prepare": {"config": {"token_address": address}}}}
            assert record_token_job.execute_in_process(
                run_config=config, resources=resources, instance=instance
            ).success
    statuses = {doc["address"]: sorted(u["status"] for u in doc["social_urls"]) for doc in fresh_db["tokens"].find()}
    assert statuses[demo.POPCAT] == ["ok", "ok", "ok", "skipped_paid"]
    assert statuses[demo.PUMPKIT] == ["ok", "ok", "ok", "ok"]
    assert TokenLocks(client).owner_of(demo.POPCAT) is None


def test_the_doctor_finds_every_provider_of_the_sandbox_ok(tmp_path, monkeypatch):
    """A sandbox starts configured: no provider row asks for a key (the health verdict of a fresh
    sandbox would otherwise read "degraded" for the sandbox's own settings)."""
    from socialrec_pipeline.defs import doctor
    from socialrec_pipeline.defs.doctor import providers

    checks = [check for check in doctor.CHECKS if check.__module__ == providers.__name__]  # every provider row
    assert len(checks) == 8
    with serving(tmp_path) as env:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        rows = doctor.run_checks(doctor.DoctorContext(instance=None, timeout_s=20), checks)
    assert [(r.check, r.status) for r in rows if r.status != "ok"] == []
    assert "accepted" in next(r.finding for r in rows if r.check == "provider.github")


def test_a_reconcile_backfill_of_the_sandbox_closed_hours_records_what_the_stream_never_sent(
    mongo_uri, fresh_db, redis_url, tmp_path
):
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    hours = [(now - timedelta(hours=back)).strftime("%Y-%m-%d-%H:00") for back in (3, 2, 1)]
    with serving(tmp_path) as env, dg.DagsterInstance.ephemeral() as instance:
        job = reconcile_job_with(resources_from(env, mongo_uri, fresh_db.name, redis_url))
        for hour in hours:
            result = job.execute_in_process(partition_key=hour, instance=instance)
            assert result.success, hour
            # (the last closed hour may also hold the sample tokens, last seen 5 minutes before the start)
            assert reconcile_metadata(result)["recorded"].value >= 1, hour
    symbols = sorted(doc["symbol"] for doc in fresh_db["tokens"].find() if doc["symbol"].startswith("MISSED"))
    assert symbols == [f"MISSED{n}" for n in range(1, demo.RECONCILE_DEMO_HOURS + 1)]


def test_publish_feeds_the_sensor_a_mixed_sample(broker, stream_resources):
    out = io.StringIO()
    assert demo.publish(out, rabbitmq_url=broker.url, env=broker.env, exchange=broker.exchange) == 0
    with dg.DagsterInstance.ephemeral() as instance:
        result = token_flow_sensor(dg.build_sensor_context(instance=instance, resources=stream_resources))
    keys = sorted(r.run_key for r in result.run_requests)
    assert [k.split(":")[0] for k in keys] == sorted([demo.POPCAT, demo.PUMPKIT])
    assert all(k.endswith(":0") for k in keys)
    tick = json.loads(result.cursor)["last_tick"]
    assert (tick["consumed"], tick["invalid"], tick["below_threshold"]) == (5, 1, 1)
    assert len(broker.dead_letters()) == 1


def test_sample_events_never_reach_the_producers_exchange(broker):
    """Queues bound to the producer's exchange (other consumers on the broker) see no samples."""
    from socialrec_pipeline.stream.broker import EXCHANGE, ROUTING_KEY

    bystander = f"bystander.{broker.env}"
    broker.channel.exchange_declare(EXCHANGE, exchange_type="topic", durable=True)
    broker.channel.queue_declare(bystander, auto_delete=False)
    broker.channel.queue_bind(bystander, EXCHANGE, routing_key=ROUTING_KEY)
    try:
        assert demo.publish(io.StringIO(), rabbitmq_url=broker.url, env=broker.env) == 0
        deadline = time.monotonic() + 10
        while broker.depth(broker.queue) < 5 and time.monotonic() < deadline:
            time.sleep(0.05)  # publishing is asynchronous: wait until the broker has routed them
        assert broker.depth(broker.queue) == 5  # the sandbox queue got them all, via its own exchange
        assert broker.depth(bystander) == 0
    finally:
        broker.channel.queue_delete(bystander)
        broker.channel.queue_unbind(broker.queue, demo.SANDBOX_EXCHANGE, routing_key=ROUTING_KEY)


def test_the_code_location_uses_the_producers_exchange_unless_told_otherwise():
    from socialrec_pipeline.defs.resources import RabbitMQResource

    assert RabbitMQResource().exchange == "solTokenFlowTopicExchange"
    assert (
        demo.environment(
            {k: "http://x" for k in ("soltracker", "x", "github", "youtube", "telegram", "apify", "reddit", "urlscan")}
        )["RABBITMQ_EXCHANGE"]
        == demo.SANDBOX_EXCHANGE
        != "solTokenFlowTopicExchange"
    )


def test_publish_adds_a_token_whose_upstream_lookup_always_fails_and_the_sandbox_gives_up_fast(broker, tmp_path):
    import re

    import httpx

    from socialrec_pipeline.stream.intake import relaunch_backoff

    with serving(tmp_path) as env:
        out = io.StringIO()
        assert (
            demo.publish(
                out,
                rabbitmq_url=broker.url,
                env=broker.env,
                exchange=broker.exchange,
                soltracker_url=env["SOL_TRACKER_BASE_URL"],
            )
            == 0
        )
        line = next(line for line in out.getvalue().splitlines() if line.startswith("published stuck"))
        address = re.search(r'"tokenAddress": "([1-9A-HJ-NP-Za-km-z]{32,44})"', line).group(1)
        headers = {"x-api-key": env["SOL_TRACKER_API_KEY"]}
        base = env["SOL_TRACKER_BASE_URL"]
        assert httpx.get(f"{base}/api/v1/tokens/{address}", headers=headers, timeout=5).status_code == 503
        listed = httpx.get(f"{base}/api/v1/tokens", headers=headers, timeout=5).json()["items"]
        assert all("sandboxFailing" not in row for row in listed)  # the stand-in's flag never leaks
    assert broker.depth(broker.queue) == 6  # the five samples and the stuck one
    # Three short relaunches in the sandbox: the token gives up within minutes.
    backoff = relaunch_backoff(env)
    assert len(backoff) == 3 and sum(step.total_seconds() for step in backoff) < 60
