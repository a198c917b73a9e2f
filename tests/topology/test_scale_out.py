"""Scale-out on dagster-celery over the stack's RabbitMQ: real Celery worker processes on loopback.

Each test uses a Celery queue of its own on the shared broker (messages reach it through the
default exchange by name, so nobody else's workers see them), Dagster storage on the test's own
PostgreSQL database (workers on other machines could not share SQLite), and Redis/Mongo as usual.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from socialrec_pipeline.recording.locks import TokenLocks, open_redis

from ..defs.jobs_fixtures import SOLTRACKER_KEY, X_KEY, four_url_token, start_fixtures, unique_address

pytestmark = pytest.mark.slow  # starts real processes: scheduled first, left out by --quick

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def postgres_storage(db: dict) -> dict:
    return {
        "postgres": {
            "postgres_db": {
                "hostname": db["host"], "port": db["port"], "username": db["user"],
                "password": db["password"], "db_name": db["db"], "scheme": "postgresql+psycopg2",
            }
        }
    }  # fmt: skip


class CeleryWorkers:
    """`celery -A dagster_celery.app worker` processes, configured the way `dagster-celery worker
    start -y` configures them (a `dagster_celery_config` module on PYTHONPATH)."""

    def __init__(
        self, tmp: Path, broker_url: str, queue: str, env: dict[str, str], result_backend: str | None = "rpc://"
    ) -> None:
        self.tmp, self.queue = tmp, queue
        config_dir = tmp / "celery_config"
        config_dir.mkdir()
        (config_dir / "dagster_celery_config.py").write_text(
            textwrap.dedent(f"""
            broker_url = {broker_url!r}
            result_backend = {result_backend!r}
            task_default_queue = {queue!r}
            worker_prefetch_multiplier = 1
        """)
        )
        self.env = {**os.environ, **env, "PYTHONPATH": os.pathsep.join([str(config_dir), str(ROOT)])}
        self.procs: list[subprocess.Popen] = []

    def start(self, count: int, concurrency: int = 1) -> None:
        for i in range(count):
            with open(self.tmp / f"worker{i}.log", "w") as log:  # the child keeps its own descriptor
                self.procs.append(self._spawn(i, concurrency, log))
        deadline = time.time() + 120
        while time.time() < deadline:
            logs = [p.read_text() for p in sorted(self.tmp.glob("worker*.log"))]
            if len(logs) == count and all("ready." in text for text in logs):
                return
            assert all(p.poll() is None for p in self.procs), self.logs()
            time.sleep(0.5)
        raise AssertionError(f"Celery workers did not get ready\n{self.logs()}")

    def _spawn(self, i: int, concurrency: int, log) -> subprocess.Popen:
        return subprocess.Popen(
            [str(BIN / "celery"), "-A", "dagster_celery.app", "worker", "-Q", self.queue,
             f"--concurrency={concurrency}", "--prefetch-multiplier=1", "-n", f"w{i}-{self.queue}@%h",
             "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "INFO"],
            cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in sorted(self.tmp.glob("worker*.log")))

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


class RunWorkers(CeleryWorkers):
    """The run workers `scripts/run.sh` starts (`scripts/run_workers.sh`: the Celery app of
    socialrec_pipeline.defs.run_workers), configured through the SOCIALREC_CELERY_* variables."""

    def __init__(self, tmp: Path, broker_url: str, queue: str, env: dict[str, str], result_backend: str) -> None:
        self.tmp, self.queue = tmp, queue
        self.env = {
            **os.environ, **env, "SOCIALREC_CELERY_BROKER_URL": broker_url, "SOCIALREC_CELERY_RUN_QUEUE": queue,
            "SOCIALREC_CELERY_BACKEND_URL": result_backend, "SOCIALREC_RUN_WORKER_LOG_LEVEL": "INFO",
        }  # fmt: skip
        self.procs = []

    def _spawn(self, i: int, concurrency: int, log) -> subprocess.Popen:
        env = {**self.env, "SOCIALREC_RUN_WORKER_CONCURRENCY": str(concurrency),
               "SOCIALREC_RUN_WORKER_NAME": f"r{i}-{self.queue}"}  # fmt: skip
        return subprocess.Popen(
            ["bash", str(ROOT / "scripts" / "run_workers.sh")],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip


@pytest.fixture
def celery_queue(rabbitmq_url, unique_suffix) -> Iterator[str]:
    import pika

    name = f"socialrec-steps-test{unique_suffix}"
    yield name
    conn = pika.BlockingConnection(pika.URLParameters(rabbitmq_url))
    try:
        channel = conn.channel()
        channel.queue_delete(name)
        channel.exchange_delete(name)  # Celery declares one of the queue's name
    finally:
        conn.close()


# dagster-celery's executor registers its task again for every step it submits (Celery 5.7 warns);
# it is the same task from the same factory each time.
@pytest.mark.filterwarnings("ignore:Task name 'execute_plan' is already registered to a different callable")
@pytest.mark.deployment
def test_celery_step_workers_record_a_token_with_the_lock_handed_over(
    postgres_db, mongo_uri, fresh_db, redis_url, rabbitmq_url, celery_queue, tmp_path
):
    from .celery_job import record_token_celery

    address = unique_address()
    server, _ = start_fixtures([four_url_token(address)])
    env = {
        "MONGODB_URI": mongo_uri, "MONGODB_DATABASE": fresh_db.name, "REDIS_URL": redis_url,
        "SOL_TRACKER_BASE_URL": server.url, "SOL_TRACKER_API_KEY": SOLTRACKER_KEY,
        "TWITTERAPI_BASE_URL": server.url, "TWITTERAPI_API_KEY": X_KEY,
        "TELEGRAM_BASE_URL": server.url, "APIFY_BASE_URL": server.url,
    }  # fmt: skip
    workers = CeleryWorkers(tmp_path, rabbitmq_url, celery_queue, env)
    try:
        workers.start(2)
        with pytest.MonkeyPatch.context() as mp:
            for name, value in env.items():
                mp.setenv(name, value)
            with dg.instance_for_test(overrides={"storage": postgres_storage(postgres_db)}) as instance:
                result = dg.execute_job(
                    dg.reconstructable(record_token_celery),
                    instance=instance,
                    run_config={
                        "ops": {"prepare": {"config": {"token_address": address, "symbol": "FOUR"}}},
                        "execution": {
                            "config": {
                                "broker": rabbitmq_url,
                                "backend": "rpc://",
                                "config_source": {"task_default_queue": celery_queue},
                            }
                        },
                    },  # fmt: skip
                )
                assert result.success, workers.logs()
                events = [e for e in instance.all_logs(result.run_id) if e.dagster_event is not None]
                starts = {
                    e.step_key: e.dagster_event.pid for e in events if e.dagster_event.event_type_value == "STEP_START"
                }
                hosts = {
                    e.dagster_event.engine_event_data.metadata["Celery worker"].value
                    for e in events
                    if e.dagster_event.event_type_value == "ENGINE_EVENT"
                    and "Celery worker" in (e.dagster_event.engine_event_data.metadata or {})
                }  # fmt: skip
    finally:
        workers.stop()
        server.stop()

    # prepare, four URL steps, defer_paid_urls and write_marker each ran as a Celery task; both workers took some,
    # and none of those processes is the test's (the run's own process only orchestrates).
    assert len(starts) == 7 and len(hosts) == 2, (starts, hosts)
    assert os.getpid() not in starts.values() and len(set(starts.values())) == 2
    marker = fresh_db["tokens"].find_one({"address": address})
    assert marker is not None
    assert {u["source_field"]: u["status"] for u in marker["social_urls"]} == {
        "website": "ok", "twitter": "ok", "telegram": "not_found", "discord": "skipped_paid",
    }  # fmt: skip
    # The lock taken by `prepare` on one worker was extended by the URL steps and released by
    # `write_marker`, whichever worker each ran on.
    assert TokenLocks(open_redis(redis_url)).owner_of(address) is None
