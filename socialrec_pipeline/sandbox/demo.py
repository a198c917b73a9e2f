"""The offline demo: loopback stand-ins for SolTracker and every platform API, and sample events.

`socialrec sandbox serve` starts one fixture server per external API on fixed loopback ports and
prints the environment the code location needs to use them; `socialrec sandbox publish` sends a
few `token.flow` events to the real exchange (qualifying, below threshold, one invalid). With
`SOCIALREC_ENV=sandbox` the sensor consumes `…social-sync.sandbox` and tags its runs `sandbox=true`.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TextIO

from socialrec_pipeline.sandbox.fixture_server import FixtureServer
from socialrec_pipeline.sandbox.platforms import apify, github, reddit, telegram, urlscan, x, youtube
from socialrec_pipeline.sandbox.soltracker import FAILING_KEY, SolTrackerFixture, upstream_token

SANDBOX_ENV = "sandbox"
#: The sandbox's own exchange: sample events never reach the queues bound to the producer's one.
SANDBOX_EXCHANGE = "solTokenFlowTopicExchange.sandbox"
DEFAULT_PORT_BASE = 18080
SOLTRACKER_KEY = "sandbox-soltracker-key"
X_KEY = "sandbox-x-key"
YOUTUBE_KEY = "sandbox-youtube-key"
SANDBOX_BACKOFF_MINUTES = "0.2,0.2,0.2"

# Real-looking mint addresses (base58); the first is the contract's example.
POPCAT = "7GCihgDB8fe6KNjn2MYtkzZcRjQy3t9GHdC8uHYmW2hr"
PUMPKIT = "DezXAZ8z7PnrnRJjz3wXBoRgixCa6xjnB7YaB1pPB263"
QUIET = "So11111111111111111111111111111111111111112"


_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def fresh_address() -> str:
    """A new base58 mint-like address, so every publish brings tokens the database has never seen."""
    return "".join(secrets.choice(_BASE58) for _ in range(44))


def demo_tokens(now: datetime, addresses: tuple[str, str, str] = (POPCAT, PUMPKIT, QUIET)) -> list[dict]:
    """The upstream rows of the sample tokens (by default the fixed demo addresses)."""
    popcat, pumpkit, quiet = addresses
    last = (now - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return [
        upstream_token(
            popcat, af=7, symbol="POPCAT", last_transfer=last,
            website="https://moon.example/?utm_source=x",
            twitter="https://twitter.com/kolguy/status/1866000000000000001?s=20",
            telegram="t.me/pumpchannel",
            discord="https://www.tiktok.com/@moonkol/video/7350000000000000001",  # paid: skipped_paid
        ),
        upstream_token(
            pumpkit, af=5, symbol="PUMPKIT", last_transfer=last,
            website="https://github.com/pumpdev/pump-sdk",
            twitter="x.com/kolguy",
            telegram="https://youtu.be/dQw4w9WgXcQ",  # a YouTube URL in the telegram field
            discord="https://www.reddit.com/r/solana/",
        ),
        upstream_token(quiet, af=2, symbol="QUIET", last_transfer=last, website="https://quiet.example"),
    ]


#: Closed hours before the sandbox's start that hold upstream tokens the stream never sent.
RECONCILE_DEMO_HOURS = 3


def reconcile_demo_tokens(now: datetime, hours: int = RECONCILE_DEMO_HOURS) -> list[dict]:
    """Qualifying upstream tokens no sample event announces, one in each of the `hours` closed hours
    before `now`'s hour: a reconcile backfill of those hours records them (the coverage bar fills)."""
    start_of_hour = now.replace(minute=0, second=0, microsecond=0)
    rows = []
    for back in range(1, hours + 1):
        last = (start_of_hour - timedelta(hours=back) + timedelta(minutes=20)).strftime("%Y-%m-%dT%H:%M:%SZ")
        rows.append(
            upstream_token(
                fresh_address(), af=5 + back, symbol=f"MISSED{back}", last_transfer=last,
                website="https://github.com/pumpdev/pump-sdk",
                twitter="x.com/kolguy",
            )
        )
    return rows


def _servers(port_base: int) -> dict[str, tuple[FixtureServer, Callable[[FixtureServer], object]]]:
    def port(offset: int) -> FixtureServer:
        return FixtureServer(port=port_base + offset, poll_interval_s=0.5)  # long-lived: see FixtureServer

    now = datetime.now(UTC)
    soltracker = SolTrackerFixture([*demo_tokens(now), *reconcile_demo_tokens(now)], api_key=SOLTRACKER_KEY)
    return {
        "soltracker": (port(0), lambda server: soltracker.install_admin(soltracker.install(server))),
        "x": (port(1), x.demo_fixtures().register),
        "github": (port(2), github.demo_fixtures(token=github.DEMO_TOKEN).register),
        "youtube": (port(3), youtube.demo_fixtures().register),
        "telegram": (port(4), telegram.register),
        "apify": (port(5), apify.register_demo),
        "reddit": (port(6), reddit.register_reddit),
        "urlscan": (port(7), urlscan.register_urlscan),
    }


def sandbox_exchange(env: str = SANDBOX_ENV) -> str:
    """The exchange of one sandbox: `…sandbox` for the default, `…sandbox-<name>` for a named one.
    A queue and an exchange per sandbox, so a publish reaches that sandbox's queue only."""
    return SANDBOX_EXCHANGE if env.strip() == SANDBOX_ENV else f"{SANDBOX_EXCHANGE.rsplit('.', 1)[0]}.{env.strip()}"


def environment(urls: dict[str, str], env: str = SANDBOX_ENV) -> dict[str, str]:
    """The variables the code location reads, pointed at the stand-ins (sandbox keys only)."""
    return {
        "SOCIALREC_ENV": env,
        "RABBITMQ_EXCHANGE": sandbox_exchange(env),
        "SOL_TRACKER_BASE_URL": urls["soltracker"],
        "SOL_TRACKER_API_KEY": SOLTRACKER_KEY,
        "TWITTERAPI_BASE_URL": urls["x"],
        "TWITTERAPI_API_KEY": X_KEY,
        "GITHUB_API_BASE_URL": urls["github"],
        "GITHUB_TOKEN": github.DEMO_TOKEN,
        "YOUTUBE_API_BASE_URL": urls["youtube"],
        "YOUTUBE_API_KEY": YOUTUBE_KEY,
        "TELEGRAM_BASE_URL": urls["telegram"],
        "APIFY_BASE_URL": urls["apify"],
        "APIFY_TOKEN": apify.DEMO_TOKEN,
        "REDDIT_BASE_URL": urls["reddit"],
        "URLSCAN_BASE_URL": urls["urlscan"],
        "URLSCAN_API_KEY": urlscan.DEMO_API_KEY,
        # Three short relaunches: the demo's failing token gives up (`stuck`) within minutes, not hours.
        "SOCIALREC_RELAUNCH_BACKOFF_MINUTES": SANDBOX_BACKOFF_MINUTES,
    }


def serve(out: TextIO, *, port_base: int = DEFAULT_PORT_BASE, env_file: str | None = None,
          stop: threading.Event | None = None, env: str = SANDBOX_ENV) -> int:
    """Start every stand-in, print `export` lines, block until SIGINT/SIGTERM (or `stop`)."""
    stop = stop or threading.Event()
    started: list[FixtureServer] = []
    try:
        urls = {}
        for name, (server, install) in _servers(port_base).items():
            install(server)
            started.append(server.start())
            urls[name] = server.url
        exports = "".join(f"export {k}={v}\n" for k, v in environment(urls, env).items())
        if env_file:
            # Written whole, then renamed: a reader polling for the file never sees half of it.
            partial = f"{env_file}.partial"
            with open(partial, "w") as handle:
                handle.write(exports)
            os.replace(partial, env_file)
        out.write(exports)
        out.write("# sandbox stand-ins are up; Ctrl-C to stop\n")
        out.flush()
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, lambda *_: stop.set())
        stop.wait()
    finally:
        # Each stop waits out its server's poll interval: all at once, not one after another (4 s).
        stoppers = [threading.Thread(target=server.stop) for server in started]
        for stopper in stoppers:
            stopper.start()
        for stopper in stoppers:
            stopper.join(timeout=10)
    return 0


def sample_events(now: datetime, addresses: tuple[str, str, str] = (POPCAT, PUMPKIT, QUIET)) -> list[tuple[str, bytes]]:
    """(what, body): two qualifying tokens (one twice: a duplicate), one below threshold, one invalid."""
    popcat, pumpkit, quiet = addresses
    first = (now - timedelta(hours=3)).isoformat().replace("+00:00", "Z")

    def event(address: str, af: int, symbol: str) -> bytes:
        return json.dumps({"tokenAddress": address, "totalInvestedAlphaFinders": af, "symbol": symbol,
                           "firstFlowTimestamp": first, "afGroupId": "g-sandbox",
                           "flowAt": int(now.timestamp() * 1000)}).encode()

    return [
        ("qualifying", event(popcat, 7, "POPCAT")),
        ("qualifying", event(pumpkit, 5, "PUMPKIT")),
        ("duplicate", event(popcat, 7, "POPCAT")),
        ("below threshold", event(quiet, 2, "QUIET")),
        ("invalid", b"this is not json"),
    ]


def stuck_demo_token(now: datetime, address: str) -> dict:
    """A qualifying token the SolTracker stand-in knows but always answers 503 for: its runs fail, the
    sensor relaunches it with the sandbox's short backoff, and it ends `stuck` (the stuck-tokens table,
    the `inbox_not_stuck` check and the alert all get a row)."""
    last = (now - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {**upstream_token(address, af=6, symbol="STUCK", last_transfer=last), FAILING_KEY: True}


def stuck_event(now: datetime, address: str) -> bytes:
    return json.dumps({"tokenAddress": address, "totalInvestedAlphaFinders": 6, "symbol": "STUCK",
                       "flowAt": int(now.timestamp() * 1000)}).encode()


def register_tokens(soltracker_url: str, rows: list[dict], api_key: str = SOLTRACKER_KEY) -> None:
    """Add token rows to a running SolTracker stand-in (`socialrec sandbox serve`)."""
    import httpx

    response = httpx.post(f"{soltracker_url.rstrip('/')}/sandbox/tokens", json=rows,
                          headers={"x-api-key": api_key}, timeout=5.0)
    response.raise_for_status()


def publish(out: TextIO, *, rabbitmq_url: str, env: str = SANDBOX_ENV, exchange: str | None = None,
            soltracker_url: str | None = None) -> int:
    """Publish the samples to the sandbox's own exchange (declaring our queue so nothing is
    dropped). Never the producer's exchange: its other consumers must not see sample events.

    With `soltracker_url` (the running stand-in), the samples get fresh addresses, registered with
    the stand-in first: every publish starts new runs, even against a database that recorded the
    earlier ones. Without it the fixed demo addresses are used.
    """
    import pika

    from socialrec_pipeline.stream.broker import ROUTING_KEY, declare_topology, open_connection, queue_name_for

    exchange = exchange or sandbox_exchange(env)

    if env.strip() in ("prod", "production"):
        raise SystemExit("refusing to publish sample events with SOCIALREC_ENV=prod")
    now = datetime.now(UTC)
    addresses = (POPCAT, PUMPKIT, QUIET)
    events = []
    if soltracker_url:
        addresses = (fresh_address(), fresh_address(), fresh_address())
        failing = fresh_address()
        register_tokens(soltracker_url, [*demo_tokens(now, addresses), stuck_demo_token(now, failing)])
        events.append(("stuck (its upstream lookup always fails)", stuck_event(now, failing)))
    queue = queue_name_for(env)
    connection = open_connection(rabbitmq_url)
    try:
        channel = declare_topology(connection, queue, exchange)
        for what, body in [*sample_events(now, addresses), *events]:
            channel.basic_publish(exchange, ROUTING_KEY, body,
                                  pika.BasicProperties(content_type="application/json", delivery_mode=2))
            out.write(f"published {what}: {body[:90].decode(errors='replace')}\n")
    finally:
        connection.close()
    out.write(f"queue {queue}: the token_flow_sensor picks these up on its next tick\n")
    if not soltracker_url:
        out.write(
            "fixed demo addresses: tokens already recorded in the database start no run (the tick's skip reason "
            "says so); publish with the sandbox's env file (default) for fresh addresses\n"
        )
    return 0


def release(out: TextIO, *, rabbitmq_url: str, env: str, exchange: str | None = None,
            run_queue: str | None = None) -> int:
    """Remove what one sandbox declared on the broker once it has stopped: its token.flow queue,
    dead-letter queue and exchange, and its Celery run queue with that queue's exchange — each only
    if unused and empty (`release_unused`), so a shared broker keeps no litter of stopped sandboxes
    and no message is dropped. Only a sandbox's names (`SOCIALREC_ENV=sandbox…`)."""
    from socialrec_pipeline.stream.broker import dead_letter_queue, queue_name_for, release_unused

    if not env.startswith(SANDBOX_ENV):
        raise SystemExit(f"refusing to release the broker objects of SOCIALREC_ENV={env}: not a sandbox")
    queue = queue_name_for(env)
    runs = [run_queue] if run_queue else []
    queues, exchanges = [queue, dead_letter_queue(queue), *runs], [exchange or sandbox_exchange(env), *runs]
    deleted = release_unused(rabbitmq_url, queues, exchanges)
    kept = [name for name in queues + exchanges if name not in deleted]
    out.write(f"==> sandbox {env}: removed {len(deleted)} broker object(s) from RabbitMQ"
              + (f"; kept (in use, holding messages, or already gone): {', '.join(kept)}" if kept else "") + "\n")
    return 0


def read_env_file(path: str) -> dict[str, str]:
    """The `export K=V` lines `serve --env-file` wrote."""
    values: dict[str, str] = {}
    with open(path) as handle:
        for line in handle:
            line = line.strip().removeprefix("export ")
            if "=" in line and not line.startswith("#"):
                key, value = line.split("=", 1)
                values[key] = value
    return values
