"""The production topology of docker-compose.yml, started natively on this machine.

A gRPC code server, the webserver and the daemon, each started with its compose command; the
instance is deploy/dagster.yaml on a PostgreSQL of the test's own, reached through PgBouncer as
compose's `pgbouncer` service runs it (scripts/pgbouncer.sh); the workspace is
deploy/workspace.yaml pointing at the code server. Nothing here copies those files: the test reads
them and only substitutes what a container network decides (host names, ports, paths) and the
values of the environment variables compose passes.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from bench.own_services import OwnPgBouncer, start_on_free_port
from bench.procs import child_pids

from ..defs.conftest import Broker, flow
from ..defs.jobs_fixtures import SOLTRACKER_KEY, X_KEY, four_url_token, start_fixtures, unique_address
from ..ports import free_ports

pytestmark = pytest.mark.slow  # starts real processes: scheduled first, left out by --quick

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
WINDOW = "2026-11-30-02:00"
LOCATIONS = "{ workspaceOrError { ... on Workspace { locationEntries { name locationOrLoadError { __typename } } } } }"


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def native(command: list[str], *, port: int, workspace: Path | None = None) -> list[str]:
    """A compose command for this machine: loopback host, a free port, the workspace file's path."""
    out = [str(BIN / command[0]), *command[1:]]
    for flag, value in (("-h", "127.0.0.1"), ("-p", str(port)), ("-w", str(workspace) if workspace else None)):
        if flag in out:
            assert value is not None, f"{command} needs {flag}"
            out[out.index(flag) + 1] = value
    return out


def compose_environment(values: dict[str, str]) -> dict[str, str]:
    """Every variable compose gives the Dagster services, with the test's values (none forgotten)."""
    names = set(compose()["x-socialrec-env"])
    missing = names - set(values)
    assert not missing, f"docker-compose.yml passes variables the test gives no value: {sorted(missing)}"
    return {name: values[name] for name in names}


class Topology:
    """Code server, webserver and daemon as process groups of their own, stopped by their ids."""

    def __init__(self, home: Path, env: dict[str, str]) -> None:
        self.home = home
        self.env = {**os.environ, **env, "DAGSTER_HOME": str(home)}
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, command: list[str]) -> None:
        with open(self.home / f"{name}.log", "w") as log:  # the child keeps its own descriptor
            self.procs[name] = subprocess.Popen(
                command, cwd=self.home, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in sorted(self.home.glob("*.log")))

    def alive(self) -> None:
        dead = {name: p.returncode for name, p in self.procs.items() if p.poll() is not None}
        assert not dead, f"exited: {dead}\n{self.logs()}"

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


def wait_for(
    predicate, timeout: float, what: str, topology: Topology, every: float = 0.5, broker: Broker | None = None
):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        topology.alive()
        if broker is not None:  # answers the broker's heartbeats while the test waits
            broker.channel.connection.process_data_events(time_limit=0)
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}\n{topology.logs()}")


def graphql(port: int, query: str, variables: dict | None = None) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        data=json.dumps({"query": query, "variables": variables or {}}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        return json.loads(reply.read())


def http_ok(port: int, path: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as reply:
            return reply.status == 200
    except OSError:
        return False


@pytest.fixture
def broker(rabbitmq_url, unique_suffix) -> Iterator[Broker]:
    b = Broker(rabbitmq_url, f"test{unique_suffix}")
    yield b
    b.close()


@pytest.fixture
def pgbouncer(postgres_db) -> Iterator[OwnPgBouncer]:
    """PgBouncer in front of the test's PostgreSQL, started by scripts/pgbouncer.sh as compose does."""
    why_not = OwnPgBouncer.available()
    if why_not:
        pytest.skip(why_not)  # .ci/run installs it: in CI this test always runs
    pooler = start_on_free_port(
        lambda port: OwnPgBouncer(port, postgres_db["host"], postgres_db["port"], postgres_db["user"]),
        free_ports(), "pgbouncer",
    )  # fmt: skip
    yield pooler
    pooler.cleanup()


def pooler_stats(pooler: OwnPgBouncer, db: str) -> dict[str, int]:
    """PgBouncer's totals for one database (its admin console: SHOW STATS)."""
    import psycopg2

    conn = psycopg2.connect(host="127.0.0.1", port=pooler.port, user="postgres", dbname="pgbouncer", connect_timeout=5)
    conn.autocommit = True  # the console takes no transactions
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW STATS")
            names = [c.name for c in cur.description]
            rows = [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
    finally:
        conn.close()
    (row,) = [r for r in rows if r["database"] == db]
    return row


@pytest.mark.deployment
@pytest.mark.parametrize("run_workers", ["default", "celery"])
def test_compose_topology_runs_natively_on_postgres(
    run_workers, postgres_db, pgbouncer, mongo_uri, fresh_db, redis_url, broker, tmp_path, unique_suffix
):
    """`default`: deploy/dagster.yaml as it is (a process per run, started by the code server).
    `celery`: its run_launcher replaced by deploy/celery-run-launcher.yaml, runs executed by two
    real Celery run workers (docs/scaling.md) that keep no pool child at rest."""
    import psycopg2
    from dagster import DagsterInstance
    from dagster_graphql import DagsterGraphQLClient, DagsterGraphQLClientError

    services = compose()["services"]
    streamed = [unique_address() for _ in range(2)]
    missed = unique_address()  # only the reconcile partition can find it
    server, soltracker = start_fixtures(
        [four_url_token(a, last_transfer="2026-11-30T05:00:00Z") for a in streamed]
        + [four_url_token(missed, last_transfer="2026-11-30T02:30:00Z")]
    )
    home = tmp_path / "dagster_home"
    home.mkdir()
    # The instance file as production has it; its env: references get this test's values.
    instance_text = (ROOT / "deploy" / "dagster.yaml").read_text()
    celery_queue = f"socialrec-runs-test{unique_suffix}"
    if run_workers == "celery":
        instance = yaml.safe_load(instance_text)
        instance["run_launcher"] = yaml.safe_load((ROOT / "deploy" / "celery-run-launcher.yaml").read_text())[
            "run_launcher"
        ]
        instance_text = yaml.safe_dump(instance)
    (home / "dagster.yaml").write_text(instance_text)
    grpc_port, web_port = free_port(), free_port()
    workspace = yaml.safe_load((ROOT / "deploy" / "workspace.yaml").read_text())
    (entry,) = workspace["load_from"]
    code_command = services["user-code"]["command"]
    assert entry["grpc_server"]["location_name"] == code_command[code_command.index("--location-name") + 1]
    assert entry["grpc_server"]["port"] == int(code_command[code_command.index("-p") + 1])
    entry["grpc_server"].update(host="127.0.0.1", port=grpc_port)
    (home / "workspace.yaml").write_text(yaml.safe_dump(workspace))

    env = compose_environment({
        "MONGODB_URI": mongo_uri, "MONGODB_DATABASE": fresh_db.name, "REDIS_URL": redis_url,
        "RABBITMQ_URL": broker.url, "SOCIALREC_ENV": broker.env,
        "SOL_TRACKER_BASE_URL": server.url, "SOL_TRACKER_API_KEY": SOLTRACKER_KEY, "AF_GROUP_IDS": "",
        "TWITTERAPI_BASE_URL": server.url, "TWITTERAPI_API_KEY": X_KEY,
        "GITHUB_API_BASE_URL": server.url, "GITHUB_TOKEN": "",
        "YOUTUBE_API_BASE_URL": server.url, "YOUTUBE_API_KEY": "",
        "APIFY_BASE_URL": server.url, "APIFY_TOKEN": "",
        "REDDIT_BASE_URL": server.url, "REDDIT_CLIENT_ID": "", "REDDIT_CLIENT_SECRET": "",
        "TELEGRAM_BASE_URL": server.url, "URLSCAN_BASE_URL": server.url, "URLSCAN_API_KEY": "",
        "TELEGRAM_BOT_API_BASE_URL": server.url, "TELEGRAM_BOT_TOKEN": "",
        "SOCIALREC_ENABLE_PAID": "false", "SOCIALREC_ENABLE_COMMUNITY": "false",
        "SOCIALREC_ALERT_WEBHOOK_URL": "", "SOCIALREC_UI_BASE_URL": "http://127.0.0.1:3000",
        "SOCIALREC_RECONCILE_START": "2026-11-01-00:00",  # the first partition: WINDOW is after it
        "DAGSTER_POSTGRES_HOST": "127.0.0.1", "DAGSTER_POSTGRES_PORT": str(pgbouncer.port),
        "DAGSTER_POSTGRES_USER": postgres_db["user"], "DAGSTER_POSTGRES_PASSWORD": postgres_db["password"],
        "DAGSTER_POSTGRES_DB": postgres_db["db"],
    })  # fmt: skip
    env["RABBITMQ_EXCHANGE"] = broker.exchange  # the test's own exchange (tests/defs/conftest.py)
    env["SOCIALREC_CELERY_BROKER_URL"] = broker.url
    env["SOCIALREC_CELERY_RUN_QUEUE"] = celery_queue
    env["SOCIALREC_CELERY_BACKEND_URL"] = redis_url
    topology = Topology(home, env)
    workers = None
    try:
        if run_workers == "celery":
            from .test_scale_out import RunWorkers

            (tmp_path / "celery").mkdir()
            # No pool child at rest (SOCIALREC_RUN_WORKER_IDLE_CHILDREN=0, the default, named because
            # the assertion below needs it): each run makes its worker fork one on demand; a kept
            # child is what test_local_run_workers runs.
            workers = RunWorkers(
                tmp_path / "celery", broker.url, celery_queue,
                {**env, "DAGSTER_HOME": str(home), "SOCIALREC_RUN_WORKER_IDLE_CHILDREN": "0"}, redis_url,
            )  # fmt: skip
            workers.start(2, concurrency=1)
            assert [child_pids(p.pid) for p in workers.procs] == [[], []]
        topology.start("user-code", native(code_command, port=grpc_port))
        topology.start(
            "webserver", native(services["webserver"]["command"], port=web_port, workspace=home / "workspace.yaml")
        )
        topology.start("daemon", native(services["daemon"]["command"], port=0, workspace=home / "workspace.yaml"))
        wait_for(lambda: http_ok(web_port, "/server_info"), 180, "the webserver", topology)
        location = wait_for(
            lambda: [
                e for e in graphql(web_port, LOCATIONS)["data"]["workspaceOrError"]["locationEntries"]
                if e["locationOrLoadError"] and e["locationOrLoadError"]["__typename"] == "RepositoryLocation"
            ],
            180, "the code location over gRPC", topology,
        )  # fmt: skip
        assert location[0]["name"] == entry["grpc_server"]["location_name"]

        # The stream: events → sensor (daemon) → queued runs → run workers → markers.
        for address in streamed:
            broker.publish(flow(address, 6))
            broker.publish(flow(address, 6))  # an at-least-once duplicate
        wait_for(
            lambda: fresh_db["tokens"].count_documents({"address": {"$in": streamed}}) == len(streamed),
            300, "the streamed tokens' markers", topology, every=1, broker=broker,
        )  # fmt: skip

        # A reconcile partition launched through the webserver, as an operator would.
        client = DagsterGraphQLClient("127.0.0.1", port_number=web_port)
        run_id = client.submit_job_execution(
            "reconcile_job", repository_location_name=location[0]["name"], tags={"dagster/partition": WINDOW}
        )

        def finished():
            try:
                status = client.get_run_status(run_id)
            except DagsterGraphQLClientError:
                return None
            return status if status.value in ("SUCCESS", "FAILURE", "CANCELED") else None

        assert wait_for(finished, 300, "the reconcile run", topology, every=1, broker=broker).value == "SUCCESS", (
            topology.logs()
        )
        assert fresh_db["tokens"].find_one({"address": missed}) is not None
    finally:
        topology.stop()
        if workers is not None:
            workers.stop()
            broker.channel.queue_delete(celery_queue)
            broker.channel.exchange_delete(celery_queue)  # Celery declares one of the queue's name
        server.stop()

    # Run history, events and the sensor cursor are rows of the test's Postgres database.
    conn = psycopg2.connect(
        host=postgres_db["host"], port=postgres_db["port"], user=postgres_db["user"],
        password=postgres_db["password"], dbname=postgres_db["db"], connect_timeout=10,
    )  # fmt: skip
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT pipeline_name, status, run_id FROM runs")
            runs = cur.fetchall()
            cur.execute("SELECT count(*) FROM event_logs WHERE run_id = %s", (run_id,))
            (reconcile_events,) = cur.fetchone()
            cur.execute("SELECT count(*) FROM run_tags WHERE key = 'dagster-celery/task_id'")
            (celery_tasks,) = cur.fetchone()
            cur.execute("SELECT count(*) FROM job_ticks")
            (ticks,) = cur.fetchone()
            cur.execute("SELECT sessions FROM pg_stat_database WHERE datname = %s", (postgres_db["db"],))
            (server_sessions,) = cur.fetchone()
    finally:
        conn.close()
    # Every Dagster process went through the pooler: its transactions ran on a few server sessions
    # (each of dagster-postgres's connections would otherwise have been a session of its own).
    pooled = pooler_stats(pgbouncer, postgres_db["db"])
    assert pooled["total_xact_count"] > 20 * server_sessions, (pooled, server_sessions)
    record_runs = [r for r in runs if r[0] == "record_token_job"]
    assert len(record_runs) == len(streamed) and {r[1] for r in record_runs} == {"SUCCESS"}, runs
    assert ("reconcile_job", "SUCCESS", run_id) in runs
    assert reconcile_events > 0 and ticks > 0
    # Which run workers executed the runs: Celery tasks for every run, or none.
    assert celery_tasks == (len(runs) if run_workers == "celery" else 0), (celery_tasks, runs)
    # Nothing fell back to SQLite: no database file anywhere under DAGSTER_HOME.
    assert [p for p in home.rglob("*") if p.suffix in {".db", ".sqlite"}] == []
    with pytest.MonkeyPatch.context() as mp:
        for name, value in env.items():
            if name.startswith(("DAGSTER_POSTGRES_", "SOCIALREC_CELERY_")):
                mp.setenv(name, value)
        with DagsterInstance.from_config(str(home)) as instance:
            # The sensor's cursor, read back through the instance the deployment's dagster.yaml describes.
            (sensor,) = [s for s in instance.all_instigator_state() if s.instigator_name == "token_flow_sensor"]
            assert sensor.instigator_data is not None
            totals = json.loads(sensor.instigator_data.cursor)["totals"]
            assert totals["consumed"] == 2 * len(streamed) and totals["launched"] == len(streamed)
            assert type(instance.run_storage).__name__ == "PostgresRunStorage"
            assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
            assert type(instance.schedule_storage).__name__ == "PostgresScheduleStorage"
