"""What the daemon benchmarks (`e2e.py`, `burst.py`) share: the stand-ins, the tokens they know,
the environment of the daemon under test, publishing an event, and the CPU accounting of the
daemon's process groups.

Imported by file name from the benchmarks (`bench/` is on `sys.path` when one of them runs).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pika

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
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) in wanted:  # state, ppid, pgrp, ... utime stime cutime cstime
            total += int(fields[11]) + int(fields[12])
            if reaped_children:
                total += int(fields[13]) + int(fields[14])
    return total / ticks


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
