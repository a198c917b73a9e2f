"""End to end: publish `token.flow` events with the Dagster daemon running; measure publish → marker.

Starts, as subprocesses, `dagster-daemon run` on a temporary DAGSTER_HOME (the repo's dagster.yaml)
with the repo's workspace.yaml; the SolTracker and platform stand-ins run in this process on
loopback. Each of N qualifying tokens is published twice (a duplicate), spread over time so that
events land at every phase of the sensor's interval. Reports publish→marker latency p50/p95 and
runs per token; the last line is `publish_to_marker_p50_s: <number>`.

    .venv/bin/python bench/e2e.py [--tokens 10] [--spacing 1.5]

Needs RabbitMQ, Redis, and MongoDB (MONGODB_URI, else an embedded SecantusDB served from here).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pika

from socialrec_pipeline.sandbox.fixture_server import FixtureServer
from socialrec_pipeline.sandbox.platforms import apify, github, telegram, x
from socialrec_pipeline.sandbox.soltracker import SolTrackerFixture, upstream_token
from socialrec_pipeline.store.client import open_client, open_database
from socialrec_pipeline.stream.broker import (
    EXCHANGE,
    ROUTING_KEY,
    dead_letter_queue,
    declare_topology,
    open_connection,
    queue_name_for,
)

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
def stand_ins(addresses: list[str]):
    servers = {name: FixtureServer().start() for name in ("soltracker", "x", "github", "telegram", "apify")}
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


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def group_cpu_seconds(pgid: int) -> float:
    """user + system CPU of the live processes in a process group (the daemon and its code server)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # fields after the command: state, ppid, pgrp, ...
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=10)
    parser.add_argument("--spacing", type=float, default=1.5, help="seconds between tokens' events")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument(
        "--idle-seconds",
        type=float,
        default=0,
        help="afterwards, stay idle this long and report the daemon's CPU (sensor tick cost)",
    )
    args = parser.parse_args()

    env_name = f"bench{uuid.uuid4().hex[:8]}"
    queue = queue_name_for(env_name)
    # An exchange of the bench's own: nobody else's events reach its queue, its events reach no one.
    exchange = f"{EXCHANGE}.{env_name}"
    warmup, measured = address(), [address() for _ in range(args.tokens)]
    home = Path(tempfile.mkdtemp(prefix="socialrec-e2e-home-"))
    shutil.copy(ROOT / "dagster.yaml", home / "dagster.yaml")
    db_name = f"bench_e2e_{uuid.uuid4().hex[:6]}"
    daemon = None
    with mongo() as uri, stand_ins([warmup, *measured]) as urls:
        client = open_client(uri)
        db = open_database(client, db_name)
        connection = open_connection(RABBITMQ_URL)
        channel = declare_topology(connection, queue, exchange)  # so no event is published before the queue exists
        env = {
            **os.environ,
            "DAGSTER_HOME": str(home),
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
        log = open(home / "daemon.log", "w")  # noqa: SIM115 -- the daemon writes to it until the finally below closes it
        try:
            daemon = subprocess.Popen(
                [str(Path(sys.executable).with_name("dagster-daemon")), "run", "-w", str(ROOT / "workspace.yaml")],
                cwd=home,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

            def publish(addr: str) -> float:
                body = f'{{"tokenAddress": "{addr}", "totalInvestedAlphaFinders": 6, "symbol": "BENCH"}}'.encode()
                at = time.time()
                channel.basic_publish(exchange, ROUTING_KEY, body, pika.BasicProperties(delivery_mode=2))
                return at

            def marker_times(addrs: list[str], seen: dict[str, float], deadline: float) -> None:
                while len(seen) < len(addrs) and time.time() < deadline:
                    connection.process_data_events(time_limit=0)  # keep the broker connection alive
                    for doc in db["tokens"].find(
                        {"address": {"$in": [a for a in addrs if a not in seen]}}, {"address": 1}
                    ):
                        seen[doc["address"]] = time.time()
                    time.sleep(0.2)

            started = time.time()
            publish(warmup)  # first run pays the daemon/code-server start; not measured
            warm: dict[str, float] = {}
            marker_times([warmup], warm, started + args.timeout)
            if not warm:
                raise SystemExit(f"warm-up token never recorded; see {home / 'daemon.log'}")
            print(f"warm-up (daemon start + first run): {warm[warmup] - started:.1f} s", flush=True)

            published: dict[str, float] = {}
            seen: dict[str, float] = {}
            published_from = time.time()
            for addr in measured:
                published[addr] = publish(addr)
                publish(addr)  # an at-least-once duplicate
                # Markers are polled while publishing too: polling only afterwards added up to
                # tokens x spacing (15 s by default) to the first tokens' latency.
                next_at = time.time() + args.spacing
                marker_times(list(published), seen, next_at)
                connection.process_data_events(time_limit=max(0.0, next_at - time.time()))
            marker_times(measured, seen, time.time() + args.timeout)
            idle = None
            if args.idle_seconds:
                time.sleep(2)  # let the last runs' processes exit
                cpu, idle_from = group_cpu_seconds(daemon.pid), time.time()
                while time.time() < idle_from + args.idle_seconds:
                    connection.process_data_events(time_limit=1)
                idle = (idle_from, time.time(), group_cpu_seconds(daemon.pid) - cpu)
        finally:
            if daemon is not None:
                os.killpg(daemon.pid, signal.SIGTERM)
                try:
                    daemon.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(daemon.pid, signal.SIGKILL)
            log.close()
            channel.queue_delete(queue)
            channel.queue_delete(dead_letter_queue(queue))
            channel.exchange_delete(exchange)
            connection.close()

        from dagster import DagsterEventType, DagsterInstance, DagsterRunStatus, RunsFilter
        from dagster._core.scheduler.instigation import InstigatorType

        os.environ["DAGSTER_HOME"] = str(home)
        with DagsterInstance.get() as instance:
            runs = instance.get_runs(filters=RunsFilter(job_name="record_token_job"))
            records = instance.get_run_records(filters=RunsFilter(job_name="record_token_job"))
            # Where the time goes: sensor pick-up (publish -> run created by a tick), queue wait
            # (created -> dequeued and launched: RUN_STARTING), process start (-> the run worker's
            # RUN_STARTED), run (-> RUN_SUCCESS/FAILURE), and marker seen by this poller.
            phases: dict[str, list[float]] = {
                "pick-up (publish->run created)": [],
                "queue (created->launched)": [],
                "process start (launched->started)": [],
                "queue+start (created->started)": [],
                "run (started->ended)": [],
            }
            by_token: dict[str, str] = {}
            for rec in records:
                addr = rec.dagster_run.tags.get("socialrec/token_address")
                if addr in published and rec.start_time and rec.end_time:
                    created = rec.create_timestamp.timestamp()
                    by_token[addr] = (
                        f"created +{created - published[addr]:.1f} s, started "
                        f"+{rec.start_time - published[addr]:.1f} s, ended +{rec.end_time - published[addr]:.1f} s"
                    )
                    phases["pick-up (publish->run created)"].append(created - published[addr])
                    starting = instance.get_records_for_run(
                        rec.dagster_run.run_id, of_type=DagsterEventType.RUN_STARTING, limit=1
                    ).records
                    if starting:
                        launched = starting[0].timestamp
                        phases["queue (created->launched)"].append(launched - created)
                        phases["process start (launched->started)"].append(rec.start_time - launched)
                    phases["queue+start (created->started)"].append(rec.start_time - created)
                    phases["run (started->ended)"].append(rec.end_time - rec.start_time)
            failed = [
                (
                    rec.dagster_run,
                    instance.get_records_for_run(
                        rec.dagster_run.run_id, of_type=DagsterEventType.RUN_FAILURE, limit=1
                    ).records,
                )
                for rec in records
                if rec.dagster_run.status != DagsterRunStatus.SUCCESS
            ]
            tick_gaps: list[float] = []
            tick_durations: list[float] = []
            idle_ticks = 0
            for state in instance.all_instigator_state(instigator_type=InstigatorType.SENSOR):
                ticks = instance.get_ticks(state.instigator_origin_id, state.selector_id, after=published_from)
                stamps = sorted(t.timestamp for t in ticks)
                tick_gaps += [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
                tick_durations += [t.end_timestamp - t.timestamp for t in ticks if t.end_timestamp]
                if idle:
                    idle_ticks += sum(1 for t in stamps if idle[0] <= t < idle[1])
        warmup_runs = sum(1 for r in runs if r.tags.get("socialrec/token_address") == warmup)
        untracked = [r for r in runs if r.tags.get("socialrec/token_address") not in {warmup, *measured}]
        per_token = {a: sum(1 for r in runs if r.tags.get("socialrec/token_address") == a) for a in measured}
        statuses = {}
        for r in runs:
            statuses[str(r.status.value)] = statuses.get(str(r.status.value), 0) + 1
        client.drop_database(db_name)
        client.close()
    latencies = [seen[a] - published[a] for a in measured if a in seen]
    shutil.rmtree(home, ignore_errors=True)
    print(f"tokens: {len(measured)} (each published twice), recorded: {len(latencies)}")
    print(
        f"runs per token: {sorted(set(per_token.values()))} (max {max(per_token.values())}); warm-up token: "
        f"{warmup_runs}; other: {len(untracked)}; run statuses: {statuses}"
    )
    for r in untracked:
        print(f"  other run: {r.run_id[:8]} {r.status.value} tags {dict(r.tags)}")
    if not latencies:
        raise SystemExit("no marker written")
    for run, failure in failed:
        which = "warm-up" if run.tags.get("socialrec/token_address") == warmup else "measured"
        why = failure[0].event_log_entry.message if failure else ""
        print(f"  not successful: {run.run_id[:8]} ({which}) {run.status.value} {why[:200]}")
    if tick_gaps:
        print(
            f"sensor ticks: {len(tick_gaps) + 1}, gap between tick starts p50 {percentile(tick_gaps, 0.5):.1f} s, "
            f"max {max(tick_gaps):.1f} s; tick duration p50 {percentile(tick_durations, 0.5):.2f} s"
        )
    if idle:
        seconds = idle[1] - idle[0]
        print(
            f"idle {seconds:.0f} s: {idle_ticks} sensor ticks; daemon + code server CPU {idle[2]:.2f} s "
            f"({100 * idle[2] / seconds:.1f}% of one core)"
        )
    print("breakdown (per measured run):")
    for phase, values in phases.items():
        if values:
            print(f"  {phase}: p50 {percentile(values, 0.5):.1f} s, p95 {percentile(values, 0.95):.1f} s")
    slowest = max((a for a in measured if a in seen), key=lambda a: seen[a] - published[a], default=None)
    if slowest:
        print(
            f"slowest token: marker seen +{seen[slowest] - published[slowest]:.1f} s; "
            f"run {by_token.get(slowest, 'n/a')}"
        )
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        f"publish->marker p50: {percentile(latencies, 0.5):.1f} s, p95: {percentile(latencies, 0.95):.1f} s, "
        f"max: {max(latencies):.1f} s, mean: {statistics.mean(latencies):.1f} s"
    )
    print(f"publish_to_marker_p50_s: {percentile(latencies, 0.5):.2f}")


if __name__ == "__main__":
    main()
