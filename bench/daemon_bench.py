"""What the daemon benchmarks (`e2e.py`, `burst.py`) share: the stand-ins, the tokens they know,
the environment of the daemon under test, publishing an event, and the CPU accounting of the
daemon's process groups.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pika
import yaml

from bench.procs import processes
from socialrec_pipeline.sandbox.fixture_server import FixtureServer
from socialrec_pipeline.sandbox.platforms import apify, github, telegram, x
from socialrec_pipeline.sandbox.soltracker import SolTrackerFixture, upstream_token
from socialrec_pipeline.stream.broker import ROUTING_KEY

ROOT = Path(__file__).resolve().parents[1]
RABBITMQ_URL = os.environ.get("RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/%2F")
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
ST_KEY = "bench-soltracker-key"


def address() -> str:
    return "".join(secrets.choice(BASE58) for _ in range(44))


def token(addr: str) -> dict:
    return upstream_token(
        addr,
        symbol="BENCH",
        website="https://bench.example",
        twitter="https://x.com/kolguy",
        telegram="t.me/pumpchannel",
        discord="https://github.com/pumpdev/pump-sdk",
    )


def mongo():
    from socialrec_pipeline.store.embedded import configured_or_embedded_mongo

    return configured_or_embedded_mongo(os.environ.get("MONGODB_URI"))


@contextlib.contextmanager
def stand_ins(addresses: list[str], latency_ms: float = 0) -> Iterator[dict[str, str]]:
    """SolTracker (knowing `addresses`) and the platform stand-ins on loopback; yields their URLs."""
    servers = {
        n: FixtureServer(latency_ms=latency_ms).start() for n in ("soltracker", "x", "github", "telegram", "apify")
    }
    SolTrackerFixture([token(a) for a in addresses], api_key=ST_KEY).install(servers["soltracker"])
    x.demo_fixtures().register(servers["x"])
    github.demo_fixtures().register(servers["github"])
    telegram.register(servers["telegram"])
    apify.register_demo(servers["apify"])
    try:
        yield {name: server.url for name, server in servers.items()}
    finally:
        for server in servers.values():
            server.stop()


def pipeline_env(uri: str, db_name: str, env_name: str, exchange: str, urls: Mapping[str, str]) -> dict[str, str]:
    """The environment of the daemon under test: this process's, pointed at the bench's own
    database, queue, exchange and stand-ins."""
    return {
        **os.environ,
        "MONGODB_URI": uri,
        "MONGODB_DATABASE": db_name,
        "SOCIALREC_ENV": env_name,
        "RABBITMQ_URL": RABBITMQ_URL,
        "REDIS_URL": REDIS_URL,
        "RABBITMQ_EXCHANGE": exchange,
        "SOL_TRACKER_BASE_URL": urls["soltracker"],
        "SOL_TRACKER_API_KEY": ST_KEY,
        "TWITTERAPI_BASE_URL": urls["x"],
        "TWITTERAPI_API_KEY": "bench-x-key",
        "GITHUB_API_BASE_URL": urls["github"],
        "TELEGRAM_BASE_URL": urls["telegram"],
        "APIFY_BASE_URL": urls["apify"],
        "APIFY_TOKEN": apify.DEMO_TOKEN,
    }


def publish(channel: Any, exchange: str, addr: str) -> float:
    """Publish one qualifying `token.flow` event for `addr`; the time it was published at."""
    body = f'{{"tokenAddress": "{addr}", "totalInvestedAlphaFinders": 6, "symbol": "BENCH"}}'.encode()
    at = time.time()
    channel.basic_publish(exchange, ROUTING_KEY, body, pika.BasicProperties(delivery_mode=2))
    return at


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def group_cpu_seconds(pgids: Iterable[int], *, reaped_children: bool = True) -> float:
    """user + system CPU of the live processes of these process groups; with `reaped_children`,
    also the CPU of their children that have exited (run workers, code server restarts)."""
    wanted = set(pgids)
    mine = [p for p in processes() if p.pgid in wanted]
    return sum(p.cpu_s + (p.reaped_children_cpu_s if reaped_children else 0.0) for p in mine)


def spawn(command: list[str], env: dict, log: Path, cwd: Path) -> subprocess.Popen:
    """Start `command` in a session (process group) of its own, its output to `log`."""
    return subprocess.Popen(
        command, cwd=cwd, env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT, start_new_session=True
    )


def stop(proc: subprocess.Popen) -> None:
    """Stop the process group `spawn` started: SIGTERM, then SIGKILL after 30 s."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def write_instance(home: Path, *, production: bool = False, process_per_run: bool = False) -> Path:
    """DAGSTER_HOME/dagster.yaml: the repo's local instance (what run.sh starts) or deploy/dagster.yaml;
    with `process_per_run`, Dagster's default launcher (a new process per run) instead of the
    Celery run workers, for comparison. Returns the instance file it was made from."""
    source = ROOT / ("deploy/dagster.yaml" if production else "dagster.yaml")
    config = yaml.safe_load(source.read_text())
    if not production:  # as run.sh copies it: with the local storage
        config.update(yaml.safe_load((ROOT / "deploy" / "local-storage.yaml").read_text()))
    if process_per_run:
        config["run_launcher"] = {"module": "dagster.core.launcher", "class": "DefaultRunLauncher"}
    else:
        config["run_launcher"] = yaml.safe_load((ROOT / "deploy" / "celery-run-launcher.yaml").read_text())[
            "run_launcher"
        ]
    (home / "dagster.yaml").write_text(yaml.safe_dump(config))
    return source


def prepare_instance(env: Mapping[str, str]) -> None:
    """Open the instance of `env`'s DAGSTER_HOME once, alone, as run.sh does first (`socialrec
    pool-limits`): processes creating a fresh SQLite instance at once stamp Alembic twice, and every
    later start of it fails."""
    cli = Path(sys.executable).with_name("socialrec")
    subprocess.run([str(cli), "pool-limits"], env=dict(env), check=True, capture_output=True, timeout=120)


def start_deployment(home: Path, env: dict[str, str], *, run_workers: int, concurrency: int) -> list[subprocess.Popen]:
    """What run.sh starts, minus the webserver: the instance prepared, then `run_workers` run workers
    (scripts/run_workers.sh, each `concurrency` runs at once; none for a process-per-run instance)
    and the daemon with its code server. `env` must hold the SOCIALREC_CELERY_* settings when there
    are workers."""
    prepare_instance(env)
    procs = []
    for i in range(run_workers):
        worker_env = {**env, "SOCIALREC_RUN_WORKER_CONCURRENCY": str(concurrency),
                      "SOCIALREC_RUN_WORKER_NAME": f"runs{i}-{env['SOCIALREC_ENV']}"}  # fmt: skip
        procs.append(
            spawn(["bash", str(ROOT / "scripts" / "run_workers.sh")], worker_env, home / f"worker{i}.log", ROOT)
        )
    daemon = [str(Path(sys.executable).with_name("dagster-daemon")), "run", "-w", str(ROOT / "workspace.yaml")]
    procs.append(spawn(daemon, env, home / "daemon.log", home))
    return procs


def celery_env(env_name: str) -> dict[str, str]:
    """The run workers' settings as run.sh sets them: the bench's RabbitMQ and Redis, a queue of its own."""
    return {
        "SOCIALREC_CELERY_BROKER_URL": RABBITMQ_URL,
        "SOCIALREC_CELERY_BACKEND_URL": REDIS_URL,
        "SOCIALREC_CELERY_RUN_QUEUE": f"socialrec-runs-{env_name}",
    }


def reproducibility_lines(instance_file: Path, home: Path) -> list[str]:
    """What two runs of a daemon bench must share to be compared: versions, bytecode, the instance's
    launcher, storage and queue settings, the machine."""
    import importlib.metadata as md

    config = yaml.safe_load((home / "dagster.yaml").read_text())
    versions = " ".join(f"{p}={md.version(p)}" for p in ("dagster", "dagster-celery", "celery", "pika", "pymongo"))
    dagster_dir = Path(md.distribution("dagster").locate_file("dagster"))
    compiled = any((dagster_dir / "__pycache__").glob("__init__.*.pyc"))
    coordinator = config.get("run_coordinator", {}).get("config", {})
    threads = coordinator.get("dequeue_num_workers", 1) if coordinator.get("dequeue_use_threads") else 1
    no_pyc = os.environ.get("PYTHONDONTWRITEBYTECODE", "")
    runs = config.get("concurrency", {}).get("runs", {})
    storage = config.get("event_log_storage", {}).get("class") or next(iter(config.get("storage", {"sqlite": 0})))
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return [
        f"python {sys.version.split()[0]}; {versions}; commit {commit.stdout.strip() or '?'}",
        f"bytecode: dagster .pyc present={compiled}, PYTHONDONTWRITEBYTECODE={no_pyc!r}, "
        f"PYTHONPYCACHEPREFIX={os.environ.get('PYTHONPYCACHEPREFIX', '')!r}",
        f"instance file: {instance_file.relative_to(ROOT)}; launcher {config['run_launcher']['class']}; "
        f"event log storage {storage}",
        f"run queue: dequeue every {coordinator.get('dequeue_interval_seconds', 5)} s, "
        f"{threads} launch thread(s), "
        f"max_concurrent_runs {runs.get('max_concurrent_runs', 'unlimited')}",
        f"machine: {os.cpu_count()} cores, {cpu_model()}; {calibration_ms():.0f} ms of CPU for a fixed "
        "2,000,000-step Python loop (compare runs on different hosts by this)",
    ]


def cpu_model() -> str:
    """The CPU's model name and clock from /proc/cpuinfo ("unknown CPU" elsewhere)."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown CPU"
    fields = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    return f"{fields.get('model name', 'unknown CPU')} at {fields.get('cpu MHz', '?')} MHz"


def calibration_ms(steps: int = 2_000_000) -> float:
    """CPU time of a fixed pure-Python loop: two runs of a bench on hosts of different speed (the
    same "2 cores" can differ twofold) are told apart by this, not by the core count."""
    started = time.process_time()
    total = 0
    for i in range(steps):
        total += i * i
    return (time.process_time() - started) * 1000
