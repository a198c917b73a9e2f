"""`socialrec doctor` against the stand-ins: real MongoDB-wire server, Redis and RabbitMQ, the fixture
HTTP server for SolTracker and the platforms. Every failure mode gives its row and the exit code.

A service "down" is an unused loopback port: the shared servers are never stopped.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pika
import pytest

from socialrec_pipeline import cli
from socialrec_pipeline.defs import doctor
from socialrec_pipeline.defs.deployment_ready import CHECK_TIMEOUT_S, build_deployment_ready, deployment_ready_sensor
from socialrec_pipeline.defs.resources import (
    GeneratorsResource,
    GitHubResource,
    MongoResource,
    RabbitMQResource,
    RecordingSettingsResource,
    RedditResource,
    RedisResource,
    SolTrackerResource,
    UrlscanResource,
)
from socialrec_pipeline.sandbox.fixture_server import FixtureServer
from socialrec_pipeline.sandbox.platforms import telegram
from socialrec_pipeline.sandbox.platforms.github import GitHubFixtures
from socialrec_pipeline.sandbox.platforms.reddit import register_reddit
from socialrec_pipeline.sandbox.platforms.urlscan import register_urlscan
from socialrec_pipeline.sandbox.resources import stand_in_resources
from socialrec_pipeline.sandbox.soltracker import SolTrackerFixture
from socialrec_pipeline.store import Store
from socialrec_pipeline.store.indexes import INDEXES
from socialrec_pipeline.stream.broker import ROUTING_KEY, declare_topology
from socialrec_pipeline.stream.inbox import RecordInbox

#: Unique strings: the tests assert none of them is ever printed.
SOLTRACKER_KEY = "st-doctor-secret-5e1a90"
URLSCAN_KEY = "us-doctor-secret-77c2e4"
GITHUB_TOKEN = "gh-doctor-secret-19fd3a"
X_KEY = "x-doctor-secret-0b3d51"
SECRETS = (SOLTRACKER_KEY, URLSCAN_KEY, GITHUB_TOKEN, X_KEY)

#: Every index ensure_indexes() declares, plus the record inbox's three.
TOTAL_INDEXES = sum(len(models) for models in INDEXES.values()) + 3
NO_DAGSTER = tuple(c for c in doctor.CHECKS if not c.__name__.startswith(("check_dagster", "check_paid_pool")))


def unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def stand_ins():
    server = FixtureServer().start()
    SolTrackerFixture([], api_key=SOLTRACKER_KEY).install(server)
    GitHubFixtures(token=GITHUB_TOKEN).register(server)
    register_urlscan(server, api_key=URLSCAN_KEY)
    register_reddit(server)
    telegram.register(server)  # catch-all "/" prefix: keep last
    yield server
    server.stop()


@pytest.fixture
def indexed_db(fresh_db):
    Store(fresh_db).ensure_indexes()
    RecordInbox(fresh_db).ensure_indexes()
    return fresh_db


@pytest.fixture
def resources(stand_ins, mongo_uri, indexed_db, redis_url, broker) -> dict:
    """The code location's resource map, every service pointed at a healthy stand-in."""
    res = stand_in_resources(
        lambda _service: stand_ins.url, mongo_uri=mongo_uri, database=indexed_db.name, redis_url=redis_url,
        soltracker_key=SOLTRACKER_KEY, x_key=X_KEY,
    )
    gen = res["generators"]
    res["generators"] = GeneratorsResource(
        x=gen.x, youtube=gen.youtube, telegram=gen.telegram, apify=gen.apify, reddit=gen.reddit,
        github=GitHubResource(base_url=stand_ins.url, token=GITHUB_TOKEN),
        urlscan=UrlscanResource(base_url=stand_ins.url, api_key=URLSCAN_KEY),
    )
    res["rabbitmq"] = RabbitMQResource(url=broker.url, env=broker.env, exchange=broker.exchange)
    return res


def run(resources: dict, checks=NO_DAGSTER, **kw) -> dict[str, doctor.Finding]:
    ctx = doctor.DoctorContext(resources=resources, instance=kw.pop("instance", None), timeout_s=15, **kw)
    return {row.check: row for row in doctor.run_checks(ctx, checks)}


def only(rows: dict[str, doctor.Finding], check: str, status: str) -> doctor.Finding:
    """`check` has `status`; every other row is ok (or the expected warnings of the stand-ins)."""
    row = rows[check]
    assert row.status == status, row
    others = {name: r.status for name, r in rows.items() if name != check and r.status != "ok"}
    expected = {"provider.youtube": "warn"}  # the stand-ins' map gives no YouTube key
    expected.pop(check, None)
    assert others == expected, others
    return row


def test_healthy_stand_ins_every_row_ok(resources):
    rows = run(resources)
    only(rows, "provider.youtube", "warn")
    assert doctor.exit_code(list(rows.values())) == 0
    assert "key accepted" in rows["soltracker"].finding
    assert "accepted" in rows["provider.github"].finding and "accepted" in rows["provider.urlscan"].finding
    assert f"all {TOTAL_INDEXES} present" in rows["mongodb.indexes"].finding


# -- a service down ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("service", "check"),
    [("mongo", "mongodb"), ("redis", "redis"), ("rabbitmq", "rabbitmq"), ("soltracker", "soltracker")],
)
def test_a_service_down_fails_its_row(resources, service, check):
    port = unused_port()
    if service == "mongo":
        uri = f"mongodb://127.0.0.1:{port}/?directConnection=true&serverSelectionTimeoutMS=500"
        resources["mongo"] = MongoResource(uri=uri, database="x")
    elif service == "redis":
        resources["redis"] = RedisResource(url=f"redis://127.0.0.1:{port}/0")
    elif service == "rabbitmq":
        rabbit = resources["rabbitmq"]
        resources["rabbitmq"] = RabbitMQResource(
            url=f"amqp://guest:guest@127.0.0.1:{port}/%2F", env=rabbit.env, exchange=rabbit.exchange
        )
    else:
        resources["soltracker"] = SolTrackerResource(base_url=f"http://127.0.0.1:{port}", api_key=SOLTRACKER_KEY)
    rows = run(resources)
    if service == "mongo":  # the three Mongo rows share the server
        assert all(rows[c].status == "fail" for c in ("mongodb", "mongodb.indexes", "mongodb.retry_queue"))
    else:
        only(rows, check, "fail")
    assert doctor.exit_code(list(rows.values())) == 1
    assert rows[check].action


def test_a_platform_down_is_a_warning_not_a_failure(resources):
    gen = resources["generators"]
    port = unused_port()
    resources["generators"] = GeneratorsResource(
        x=gen.x, github=gen.github, youtube=gen.youtube, telegram=gen.telegram, apify=gen.apify,
        reddit=RedditResource(base_url=f"http://127.0.0.1:{port}"), urlscan=gen.urlscan,
    )
    rows = run(resources)
    row = rows["provider.reddit"]
    assert row.status == "warn" and "unreachable" in row.finding and "REDDIT_BASE_URL" in row.action
    assert doctor.exit_code(list(rows.values())) == 0


# -- a key unset / refused -------------------------------------------------------------------------


def test_soltracker_key_unset_names_the_variable(resources, monkeypatch):
    monkeypatch.delenv("SOL_TRACKER_API_KEY", raising=False)
    resources["soltracker"] = SolTrackerResource(
        base_url=resources["soltracker"].base_url, api_key=dg.EnvVar("SOL_TRACKER_API_KEY")
    )
    row = only(run(resources), "soltracker", "fail")
    assert "SOL_TRACKER_API_KEY is unset" in row.finding


def test_platform_keys_unset_say_what_that_means(resources):
    gen = resources["generators"]
    resources["generators"] = GeneratorsResource(
        x=type(gen.x)(base_url=gen.x.base_url), youtube=gen.youtube, telegram=gen.telegram, apify=gen.apify,
        reddit=gen.reddit, github=GitHubResource(base_url=gen.github.base_url),
        urlscan=UrlscanResource(base_url=gen.urlscan.base_url),
    )
    rows = run(resources)
    assert rows["provider.x"].status == "warn" and "`unsupported`" in rows["provider.x"].finding
    assert rows["provider.x"].action == "set TWITTERAPI_API_KEY"
    assert rows["provider.github"].status == "warn" and rows["provider.github"].action == "set GITHUB_TOKEN"
    assert rows["provider.urlscan"].status == "ok" and "URL alone" in rows["provider.urlscan"].finding
    assert doctor.exit_code(list(rows.values())) == 0


@pytest.mark.parametrize("check", ["soltracker", "provider.github", "provider.urlscan"])
def test_a_key_refused_fails_its_row_and_never_prints_the_key(resources, check):
    wrong = f"wrong-{check}-secret-4411"
    gen = resources["generators"]
    if check == "soltracker":
        resources["soltracker"] = SolTrackerResource(base_url=resources["soltracker"].base_url, api_key=wrong)
    else:
        resources["generators"] = GeneratorsResource(
            x=gen.x, youtube=gen.youtube, telegram=gen.telegram, apify=gen.apify, reddit=gen.reddit,
            github=GitHubResource(base_url=gen.github.base_url, token=wrong) if check == "provider.github"
            else gen.github,
            urlscan=UrlscanResource(base_url=gen.urlscan.base_url, api_key=wrong) if check == "provider.urlscan"
            else gen.urlscan,
        )
    rows = run(resources)
    row = only(rows, check, "fail")
    assert "refused" in row.finding and "valid" in row.action
    output = doctor.render_table(list(rows.values())) + doctor.render_json(list(rows.values()))
    for secret in (*SECRETS, wrong):
        assert secret not in output


def test_youtube_key_is_checked_only_when_quota_may_be_spent(resources, stand_ins):
    youtube = resources["generators"].youtube
    gen = resources["generators"]
    resources["generators"] = GeneratorsResource(
        x=gen.x, github=gen.github, telegram=gen.telegram, apify=gen.apify, reddit=gen.reddit, urlscan=gen.urlscan,
        youtube=type(youtube)(base_url=stand_ins.url + "/youtube-none", api_key="yt-doctor-secret-1"),
    )
    stand_ins.reset_log()
    assert run(resources)["provider.youtube"].status == "ok"
    assert stand_ins.calls("/youtube-none") == []
    spent = run(resources, spend_quota=True)["provider.youtube"]
    assert len(stand_ins.calls("/youtube-none")) == 1
    assert spent.status == "warn"  # the stand-in serves no YouTube here: the call's answer is reported


# -- MongoDB: a missing index, the derived retry queue ---------------------------------------------


def test_a_missing_index_is_named(resources, indexed_db):
    indexed_db["tokens"].drop_index("idx_tokens_oldest_error")
    indexed_db["record_inbox"].drop_index("idx_inbox_check_at")
    row = only(run(resources), "mongodb.indexes", "fail")
    assert f"2 of {TOTAL_INDEXES} missing" in row.finding
    assert "tokens.idx_tokens_oldest_error" in row.finding and "record_inbox.idx_inbox_check_at" in row.finding
    assert "socialrec backfill-queues" in row.action


def test_tokens_missing_from_the_retry_queue_ask_for_the_backfill(resources, indexed_db):
    url = {"url": "https://x.com/a", "raw_url": "https://x.com/a", "status": "error",
           "attempted_at": datetime(2026, 11, 30, tzinfo=UTC)}
    # a marker written before the retry queue existed: no `oldest_attempt`
    indexed_db["tokens"].insert_one({"address": "DoctorToken1111111111111111111111111111111", "social_urls": [url]})
    row = only(run(resources), "mongodb.retry_queue", "warn")
    assert row.finding.startswith("1 token(s)") and "socialrec backfill-queues" in row.action
    Store(indexed_db).tokens.backfill_oldest_attempt()
    assert run(resources)["mongodb.retry_queue"].status == "ok"


# -- RabbitMQ: the queue not declared / bound --------------------------------------------------------


def test_a_queue_not_declared_fails(resources, broker, unique_suffix):
    resources["rabbitmq"] = RabbitMQResource(url=broker.url, env=f"never{unique_suffix}", exchange=broker.exchange)
    row = only(run(resources), "rabbitmq", "fail")
    assert f"never{unique_suffix}" in row.finding and "not declared" in row.finding
    assert "token_flow_sensor" in row.action


@pytest.fixture(scope="module")
def own_broker(tmp_path_factory):
    """A RabbitMQ node of this module's own with the management API (the shared broker has none),
    on free ports; stopped by its PID. Skipped where rabbitmq-server is not installed."""
    server = Path("/usr/lib/rabbitmq/bin/rabbitmq-server")
    if not server.exists():
        pytest.skip("rabbitmq-server is not installed")
    base = tmp_path_factory.mktemp("rabbitmq")
    amqp, dist, http = unused_port(), unused_port(), unused_port()
    (base / "rabbitmq.conf").write_text(
        f"listeners.tcp.default = {amqp}\nmanagement.tcp.port = {http}\nmanagement.tcp.ip = 127.0.0.1\n"
    )
    (base / "enabled_plugins").write_text("[rabbitmq_management].\n")
    (base / "home").mkdir()
    env = {
        **os.environ, "HOME": str(base / "home"), "RABBITMQ_NODENAME": f"doctor{amqp}@localhost",
        "RABBITMQ_NODE_PORT": str(amqp), "RABBITMQ_DIST_PORT": str(dist), "RABBITMQ_MNESIA_BASE": str(base),
        "RABBITMQ_LOG_BASE": str(base), "RABBITMQ_CONFIG_FILE": str(base / "rabbitmq.conf"),
        "RABBITMQ_ENABLED_PLUGINS_FILE": str(base / "enabled_plugins"),
    }
    proc = subprocess.Popen([str(server)], cwd=base, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    url, management = f"amqp://guest:guest@127.0.0.1:{amqp}/%2F", f"http://127.0.0.1:{http}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with socket.socket() as s, contextlib.suppress(OSError):
                s.settimeout(1)
                s.connect(("127.0.0.1", http))
                break
            time.sleep(1)
        else:
            pytest.fail("the module's RabbitMQ did not start")
        yield url, management
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=60)


@pytest.mark.slow
def test_a_queue_not_bound_fails_when_the_management_api_can_see_it(resources, own_broker):
    url, management = own_broker
    rabbit = RabbitMQResource(url=url, env="doctor", exchange="doctor.exchange", management_url=management)
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        declare_topology(connection, rabbit.queue, rabbit.exchange)
        resources["rabbitmq"] = rabbit
        rows = run(resources)
        assert rows["rabbitmq.binding"].status == "ok" and "bound to" in rows["rabbitmq.binding"].finding
        connection.channel().queue_unbind(rabbit.queue, rabbit.exchange, routing_key=ROUTING_KEY)
        rows = run(resources)
        row = only(rows, "rabbitmq.binding", "fail")
        assert "not bound" in row.finding and "token_flow_sensor" in row.action
        assert doctor.exit_code(list(rows.values())) == 1
    finally:
        connection.close()


@pytest.mark.slow
def test_without_a_management_api_the_binding_is_not_verified(resources):
    row = run(resources)["rabbitmq.binding"]
    assert row.status == "ok" and row.finding.startswith("not verified")
    assert "RABBITMQ_MANAGEMENT_URL" in row.action


def test_a_missing_exchange_fails(resources, broker, unique_suffix):
    resources["rabbitmq"] = RabbitMQResource(url=broker.url, env=broker.env, exchange=f"none.{unique_suffix}")
    rows = run(resources)
    row = rows["rabbitmq"]
    assert row.status == "fail" and "does not exist" in row.finding and "RABBITMQ_EXCHANGE" in row.action


def test_queue_depths_and_dead_letters_are_reported(resources, broker):
    broker.publish({"not": "an event"})
    broker.channel.basic_publish("", broker.dlq, b"dead")
    row = only(run(resources), "rabbitmq", "warn")
    assert "1 ready" in row.finding and "dead-letter 1" in row.finding


# -- the gates ---------------------------------------------------------------------------------------


def test_a_malformed_setting_fails_the_gates_row(resources):
    resources["recording"] = RecordingSettingsResource(enable_paid="maybe")
    row = only(run(resources), "gates", "fail")
    assert "SOCIALREC_ENABLE_PAID" in row.finding


def test_paid_on_without_apify_token_warns(resources):
    gen = resources["generators"]
    resources["recording"] = RecordingSettingsResource(enable_paid="true")
    resources["generators"] = GeneratorsResource(
        x=gen.x, github=gen.github, youtube=gen.youtube, telegram=gen.telegram, reddit=gen.reddit,
        urlscan=gen.urlscan, apify=type(gen.apify)(base_url=gen.apify.base_url),
    )
    rows = run(resources)
    assert rows["gates"].status == "ok" and "paid on" in rows["gates"].finding
    assert rows["provider.apify"].status == "warn" and rows["provider.apify"].action == "set APIFY_TOKEN"


# -- the Dagster instance ------------------------------------------------------------------------------


DAGSTER_CHECKS = (doctor.check_dagster_storage, doctor.check_dagster_daemon, doctor.check_dagster_instigators,
                  doctor.check_paid_pool)


def _defs(sensor_status=dg.DefaultSensorStatus.RUNNING) -> dg.Definitions:
    @dg.op
    def noop() -> None: ...

    @dg.job
    def doctor_job() -> None:
        noop()

    @dg.sensor(job=doctor_job, default_status=sensor_status)
    def doctor_sensor():
        return None

    return dg.Definitions(jobs=[doctor_job], sensors=[doctor_sensor])


def test_daemon_not_running_fails_and_a_stopped_sensor_is_named(tmp_path, monkeypatch):
    (tmp_path / "dagster.yaml").write_text("concurrency:\n  pools:\n    default_limit: 2\n")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    with dg.DagsterInstance.get() as instance:
        ctx = doctor.DoctorContext(
            resources={}, instance=lambda: instance, definitions=lambda: _defs(dg.DefaultSensorStatus.STOPPED)
        )
        rows = {r.check: r for r in doctor.run_checks(ctx, DAGSTER_CHECKS)}
    assert rows["dagster.storage"].status == "ok" and "SQLite" in rows["dagster.storage"].finding
    assert rows["dagster.daemon"].status == "fail" and "SENSOR never beat" in rows["dagster.daemon"].finding
    assert "dagster-daemon run" in rows["dagster.daemon"].action
    assert rows["dagster.sensor_schedules"].status == "fail"
    assert "doctor_sensor" in rows["dagster.sensor_schedules"].finding
    assert rows["dagster.paid_pool"].status == "ok" and "limit 2" in rows["dagster.paid_pool"].finding


def test_paid_pool_without_a_limit_warns():
    with dg.instance_for_test() as instance:
        ctx = doctor.DoctorContext(resources={}, instance=lambda: instance, definitions=_defs)
        rows = {r.check: r for r in doctor.run_checks(ctx, DAGSTER_CHECKS)}
    assert rows["dagster.paid_pool"].status == "warn" and "default_limit" in rows["dagster.paid_pool"].action
    assert rows["dagster.sensor_schedules"].status == "ok"


@pytest.mark.slow
def test_daemon_heartbeat_fresh_then_stopped(tmp_path, monkeypatch):
    """A real `dagster-daemon run` (own DAGSTER_HOME, empty code location): fresh while it runs,
    stale once it is stopped (by its PID)."""
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    (tmp_path / "empty_defs.py").write_text("import dagster as dg\ndefs = dg.Definitions()\n")
    daemon_bin = Path(sys.executable).with_name("dagster-daemon")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    # The instance (and its SQLite storage) exists before the daemon starts: two processes creating
    # the same fresh storage at once can leave the daemon dead before its first beat.
    with dg.DagsterInstance.get() as instance:
        instance.get_daemon_heartbeats()  # creates the run storage's tables now
        instance.all_instigator_state()  # and the schedule storage's
        log = tmp_path / "daemon.log"
        with open(log, "w") as out:  # the child keeps its own descriptor
            proc = subprocess.Popen(
                [str(daemon_bin), "run", "-f", "empty_defs.py", "--log-level", "warning"],
                cwd=tmp_path, env={**os.environ, "DAGSTER_HOME": str(tmp_path)},
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        try:
            ctx = doctor.DoctorContext(resources={}, instance=lambda: instance)
            deadline = time.monotonic() + 120
            row = doctor.check_dagster_daemon(ctx)
            while row.status != "ok" and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.5)  # the first beat comes a few seconds after the start: look often
                row = doctor.check_dagster_daemon(ctx)
            assert row.status == "ok", (row, proc.poll(), log.read_text()[-3000:])
            proc.terminate()
            proc.wait(timeout=60)
            time.sleep(2)
            stopped = doctor.check_dagster_daemon(doctor.DoctorContext(
                resources={}, instance=lambda: instance, heartbeat_fresh_s=1.0
            ))
            assert stopped.status == "fail" and "last beat" in stopped.finding
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, 15)
                proc.wait(timeout=30)


# -- a check that hangs or crashes -----------------------------------------------------------------------


def test_a_hanging_check_times_out_and_a_crashing_one_fails():
    def check_hangs(_ctx):
        time.sleep(5)

    def check_crashes(_ctx):
        raise RuntimeError("boom")

    ctx = doctor.DoctorContext(resources={}, instance=None, timeout_s=0.5)
    rows = doctor.run_checks(ctx, (check_hangs, check_crashes, doctor.check_gates))
    assert [r.status for r in rows] == ["fail", "fail", "ok"]
    assert "timed out" in rows[0].finding and "boom" in rows[1].finding


def test_a_secret_quoted_by_an_error_is_masked(resources):
    resources["mongo"] = MongoResource(uri="mongodb://app:mongo-pw-secret-8c1@127.0.0.1:1/", database="x")

    def check_leaks(_ctx):
        raise RuntimeError(f"GET /t?key={SOLTRACKER_KEY} and mongodb://app:mongo-pw-secret-8c1@127.0.0.1:1/")

    (row,) = doctor.run_checks(doctor.DoctorContext(resources=resources, instance=None), (check_leaks,))
    assert row.status == "fail" and row.finding.count("***") == 2
    assert SOLTRACKER_KEY not in row.finding and "mongo-pw-secret-8c1" not in row.finding


def test_resources_are_built_without_an_ephemeral_instance_each(resources, monkeypatch):
    """Every resource of a run of every check, twice, costs at most one ephemeral Dagster
    instance (the shared init instance): one per `build_resources` was ~45 ms of CPU each."""
    made = []
    ephemeral = dg.DagsterInstance.ephemeral

    def counted(*args, **kwargs):
        made.append(1)
        return ephemeral(*args, **kwargs)

    monkeypatch.setattr(dg.DagsterInstance, "ephemeral", staticmethod(counted))
    doctor.core._init_instance.cache_clear()
    first, second = run(resources), run(resources)
    assert doctor.exit_code(list(first.values())) == doctor.exit_code(list(second.values())) == 0
    assert "key accepted" in second["soltracker"].finding
    assert len(made) <= 1, f"{len(made)} ephemeral instances for two doctor runs"


# -- the CLI: table, --json, exit codes -----------------------------------------------------------------


@pytest.fixture
def deployment_env(monkeypatch, tmp_path, stand_ins, mongo_uri, indexed_db, redis_url, broker):
    """The environment of a deployment pointed at the stand-ins (the CLI reads only this)."""
    (tmp_path / "dagster.yaml").write_text("concurrency:\n  pools:\n    default_limit: 2\n")
    env = {
        "DAGSTER_HOME": str(tmp_path), "MONGODB_URI": mongo_uri, "MONGODB_DATABASE": indexed_db.name,
        "REDIS_URL": redis_url, "RABBITMQ_URL": broker.url, "SOCIALREC_ENV": broker.env,
        "RABBITMQ_EXCHANGE": broker.exchange, "SOL_TRACKER_BASE_URL": stand_ins.url,
        "SOL_TRACKER_API_KEY": SOLTRACKER_KEY, "TWITTERAPI_BASE_URL": stand_ins.url, "TWITTERAPI_API_KEY": X_KEY,
        "GITHUB_API_BASE_URL": stand_ins.url, "GITHUB_TOKEN": GITHUB_TOKEN, "TELEGRAM_BASE_URL": stand_ins.url,
        "REDDIT_BASE_URL": stand_ins.url, "URLSCAN_BASE_URL": stand_ins.url, "URLSCAN_API_KEY": URLSCAN_KEY,
        "APIFY_BASE_URL": stand_ins.url, "YOUTUBE_API_BASE_URL": stand_ins.url,
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for name in ("YOUTUBE_API_KEY", "APIFY_TOKEN", "REDDIT_CLIENT_ID", "REDDIT_CLIENT_SECRET"):
        monkeypatch.delenv(name, raising=False)
    return env


def _cli(argv, capsys) -> tuple[int, str, str]:
    code = cli.main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_json_exit_1_when_the_daemon_is_not_running(deployment_env, capsys):
    code, output, errors = _cli(["doctor", "--json", "--timeout", "20"], capsys)
    report = json.loads(output)
    rows = {r["check"]: r for r in report["checks"]}
    assert code == 1 == report["exit_code"]
    assert [name for name, r in rows.items() if r["status"] == "fail"] == ["dagster.daemon"]
    assert rows["soltracker"]["status"] == "ok" and rows["rabbitmq"]["status"] == "ok"
    assert report["headline"].startswith("down: dagster.daemon")
    for secret in SECRETS:
        assert secret not in output + errors


def test_cli_table_names_the_unset_key(deployment_env, monkeypatch, capsys):
    monkeypatch.delenv("SOL_TRACKER_API_KEY")
    code, output, _ = _cli(["doctor"], capsys)
    assert code == 1
    line = next(line for line in output.splitlines() if line.startswith("soltracker "))
    assert " fail " in line and "SOL_TRACKER_API_KEY is unset" in line
    assert "→ set SOL_TRACKER_BASE_URL and SOL_TRACKER_API_KEY" in output


def test_cli_exit_2_when_it_cannot_run(monkeypatch, capsys):
    def broken(*_a, **_k):
        raise ImportError("the code location does not load")

    monkeypatch.setattr(doctor, "run_checks", broken)
    code, _, errors = _cli(["doctor"], capsys)
    assert code == 2 and "could not run" in errors


# -- the asset check -------------------------------------------------------------------------------------


def test_deployment_ready_check_names_the_first_blocker(resources):
    resources["soltracker"] = SolTrackerResource(base_url=resources["soltracker"].base_url, api_key="nope-1234")
    check = build_deployment_ready(lambda: resources, definitions_fn=_defs)
    with dg.instance_for_test() as instance:
        result = check(dg.build_asset_check_context(instance=instance))
    assert not result.passed
    assert result.severity == dg.AssetCheckSeverity.ERROR
    # the Dagster rows come after the services: the first blocker is the refused SolTracker key
    assert result.description.startswith("down: soltracker — key set; key refused, set SOL_TRACKER_API_KEY")
    assert "soltracker" in result.metadata["first_blocker"].value
    assert "| dagster.daemon | fail |" in result.metadata["checks"].value
    assert "nope-1234" not in json.dumps({k: str(v.value) for k, v in result.metadata.items()})


def test_the_asset_check_gives_each_doctor_check_a_longer_limit_than_the_cli(resources, monkeypatch):
    seen = []

    def capture(ctx, *_a, **_k):
        seen.append(ctx.timeout_s)
        return []

    monkeypatch.setattr(doctor, "run_checks", capture)
    check = build_deployment_ready(lambda: resources, definitions_fn=_defs)
    with dg.instance_for_test() as instance:
        check(dg.build_asset_check_context(instance=instance))
    assert seen == [CHECK_TIMEOUT_S] and CHECK_TIMEOUT_S > doctor.DEFAULT_TIMEOUT_S


def test_the_sensor_runs_the_check_at_start_then_not_before_an_hour(resources):
    check = build_deployment_ready(lambda: resources, definitions_fn=_defs)
    job = dg.define_asset_job("doctor_check_job", selection=dg.AssetSelection.checks(check))
    defs = dg.Definitions(asset_checks=[check], jobs=[job])
    with dg.instance_for_test() as instance:
        first = deployment_ready_sensor(dg.build_sensor_context(instance=instance))
        assert isinstance(first, dg.RunRequest) and first.run_key.startswith("deployment_ready-")
        result = defs.resolve_job_def("doctor_check_job").execute_in_process(instance=instance)
        (evaluation,) = result.get_asset_check_evaluations()
        assert not evaluation.passed  # the ephemeral instance has no daemon
        later = deployment_ready_sensor(dg.build_sensor_context(instance=instance))
        assert isinstance(later, dg.SkipReason)


def test_summary_mode_prints_only_the_verdict_and_blockers(deployment_env, capsys):
    code = cli.main(["doctor", "--summary"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert code == 1
    assert [line.split()[0] for line in lines[1:-2] if not line.startswith(" ")] == [
        "provider.youtube", "dagster.daemon"
    ]
    assert lines[-1].startswith("down: dagster.daemon") and "fail)" in lines[-1]
