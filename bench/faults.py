"""Fault suite: the real sensor and `record_token_job` under broken infrastructure and hostile input.

Starts infrastructure of its own (bench/own_services.py) on ports from `--port-base` (default
21200; the stand-ins and a sink take base+40..base+49 and base+60): a Redis, a SecantusDB server
and, where the machine allows a second node, a RabbitMQ node (otherwise an exchange and queue of
its own on the shared broker, and the broker scenarios are skipped with the reason). Nothing shared
is stopped, restarted or flushed. Then, per scenario, it publishes `token.flow` events, runs
`token_flow_sensor` ticks (`build_sensor_context`) and the `record_token_job` runs they request
(`execute_in_process`, deduplicated by run key as the daemon does), injects the fault, recovers,
and lets the stream settle (the sensor's own backoff relaunches what failed; its delays are set to
zero here so a scenario takes seconds, not hours).

One line per scenario: events published, qualifying tokens recorded, lost, pending, duplicated
rows (tokens, token_links, contents, accounts, venues), wrong statuses (a URL status or
first_transfer_at other than the one the scenario names), unexpected outbound connections (any
TCP connect from this process to something else than the configured services and stand-ins) and
seconds. At the settle cap a qualifying token without a marker is **lost** unless the sensor's
relaunch schedule says it is waiting (its inbox entry `retrying` with a `check_at` still to come):
those are **pending**, and a longer settle follows, after which pending must be 0. An entry still
`pending` or `launched` at the cap, `stuck`, `idle`, only in the queue or nowhere is lost. Then
totals; the last two lines are `faults_lost_total: N` and `faults_duplicated_total: N`. Exits 1 on
any lost, pending, duplicated, wrong or outbound.

    .venv/bin/python bench/faults.py [--port-base 21200] [--only name,name] [--shared-broker] 2>faults.log
    .venv/bin/python bench/faults.py --self-test [--only name,name] [--shared-broker]

`--self-test` injects into every scenario, after it settles, the breaches its row exists to catch —
a qualifying token that never arrived, one whose entry stays `launched` with no relaunch planned, a
duplicated link, a marker with a wrong status, a connection to the sink — and exits non-zero unless
every row reports each of them; last line `bench_self_test: N/N rows detect their breach`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import socket
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import dagster as dg  # noqa: E402
import pika  # noqa: E402
from bson import ObjectId  # noqa: E402

RUN_KEY_TAG = "dagster/run_key"  # the run key's documented tag name (no import of Dagster internals)
from pymongo import MongoClient  # noqa: E402

from bench.own_services import OwnRabbit, OwnRedis, OwnSecantus, start_own_rabbit  # noqa: E402
from socialrec_pipeline.defs import token_flow  # noqa: E402
from socialrec_pipeline.defs.record_token import record_token_job  # noqa: E402
from socialrec_pipeline.defs.resources import (  # noqa: E402
    MongoResource,
    RabbitMQResource,
    RecordingSettingsResource,
)
from socialrec_pipeline.sandbox.fixture_server import FixtureServer, Reply  # noqa: E402
from socialrec_pipeline.sandbox.platforms import apify, github, reddit, telegram, urlscan, x, youtube  # noqa: E402
from socialrec_pipeline.sandbox.resources import stand_in_resources  # noqa: E402
from socialrec_pipeline.sandbox.soltracker import LIST_PATH, TOKEN_PATH_PREFIX, SolTrackerFixture, upstream_token  # noqa: E402
from socialrec_pipeline.stream.broker import EXCHANGE, ROUTING_KEY, declare_topology, queue_name_for  # noqa: E402
from socialrec_pipeline.stream.inbox import RecordInbox  # noqa: E402
from socialrec_pipeline.stream.intake import TickLimits  # noqa: E402

SHARED_RABBITMQ_URL = os.environ.get("RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/%2F")
SOLTRACKER_KEY = "faults-soltracker-key"
X_KEY = "faults-x-key"
_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
#: Inbox states that still lead to a run without anyone's help.
PENDING_STATES = {"pending", "launched", "retrying"}
#: Wall-clock bound of one scenario's settling loop, and of the whole scenario.
SETTLE_SECONDS = 120
#: How long a scenario with pending tokens (relaunch scheduled) settles again; pending must then be 0.
LONGER_SETTLE_SECONDS = 120
SCENARIO_SECONDS = 240 + LONGER_SETTLE_SECONDS


def address() -> str:
    return "".join(random.choice(_BASE58) for _ in range(44))


def flow(addr: str, af: int = 6, **extra) -> dict:
    return {"tokenAddress": addr, "totalInvestedAlphaFinders": af, **extra}


# -- outbound connections -----------------------------------------------------------------------


class Outbound:
    """Counts every TCP connect this process makes to a destination outside `allowed`.

    Loopback connections to a socket this process is itself listening on (pika's wake-up socket
    pair) are internal, except to `denied` (the sink hostile URLs point at)."""

    def __init__(self) -> None:
        self.allowed: set[int] = set()
        self.denied: set[int] = set()
        self._listening: set[int] = set()
        self.unexpected: list[tuple] = []
        self._lock = threading.Lock()
        self._orig_connect = socket.socket.connect
        self._orig_connect_ex = socket.socket.connect_ex
        self._orig_listen = socket.socket.listen

    def install(self) -> None:
        monitor = self

        def listen(sock, *args):
            result = monitor._orig_listen(sock, *args)
            with contextlib.suppress(OSError):
                monitor._listening.add(sock.getsockname()[1])
            return result

        def connect(sock, addr):
            monitor._check(sock, addr)
            return monitor._orig_connect(sock, addr)

        def connect_ex(sock, addr):
            monitor._check(sock, addr)
            return monitor._orig_connect_ex(sock, addr)

        socket.socket.connect = connect
        socket.socket.connect_ex = connect_ex
        socket.socket.listen = listen

    def _check(self, sock, addr) -> None:
        if sock.family not in (socket.AF_INET, socket.AF_INET6) or not isinstance(addr, tuple):
            return
        host, port = addr[0], addr[1]
        loopback = host in ("127.0.0.1", "localhost", "::1")
        if loopback and port not in self.denied and (port in self.allowed or port in self._listening):
            return
        with self._lock:
            self.unexpected.append((host, port))

    def count(self) -> int:
        with self._lock:
            return len(self.unexpected)


# -- the stand-ins ------------------------------------------------------------------------------


class StandIns:
    """SolTracker and every platform API on loopback ports, with switchable faults."""

    def __init__(self, port_base: int) -> None:
        self.soltracker = SolTrackerFixture(api_key=SOLTRACKER_KEY)
        self.x = x.demo_fixtures()
        self.servers = {
            "soltracker": FixtureServer(port=port_base),
            "x": FixtureServer(port=port_base + 1),
            "github": FixtureServer(port=port_base + 2),
            "youtube": FixtureServer(port=port_base + 3),
            "telegram": FixtureServer(port=port_base + 4),
            "apify": FixtureServer(port=port_base + 5),
            "reddit": FixtureServer(port=port_base + 6),
            "urlscan": FixtureServer(port=port_base + 7),
        }
        # The fixture's list route, and its lookup behind a switch that can make it hang.
        self.servers["soltracker"].route("GET", LIST_PATH, self.soltracker._list)
        self.x.register(self.servers["x"])
        github.demo_fixtures().register(self.servers["github"])
        youtube.demo_fixtures().register(self.servers["youtube"])
        telegram.register(self.servers["telegram"])
        apify.register_demo(self.servers["apify"])
        reddit.register_reddit(self.servers["reddit"])
        urlscan.register_urlscan(self.servers["urlscan"])
        # X profiles by handle: a fault for some, the fixture's answer for the rest.
        self.x_faults: dict[str, callable] = {}
        self.on_x_call: callable | None = None
        self.servers["x"].route("GET", "/twitter/user/info", self._x_user)
        # SolTracker lookups that hang (a timeout on our side) before the fixture answers.
        self.soltracker_hangs = 0
        self.servers["soltracker"].route_prefix("GET", TOKEN_PATH_PREFIX, self._soltracker_one)
        # Where hostile URLs point: nothing may ever connect here.
        self.sink = FixtureServer(port=port_base + 20)
        self.sink.route_prefix("GET", "/", Reply.json({"pwned": True}))
        self.sink.route_prefix("POST", "/", Reply.json({"pwned": True}))

    def _x_user(self, request):
        if self.on_x_call is not None:
            hook, self.on_x_call = self.on_x_call, None
            hook()
        fault = self.x_faults.get(request.param("userName") or "")
        if fault is not None:
            return fault(request)
        return self.x._user(request)

    def _soltracker_one(self, request):
        if self.soltracker_hangs > 0:
            self.soltracker_hangs -= 1
            time.sleep(6.5)  # the client gives up after 5 s
        return self.soltracker._one(request)

    def start(self) -> None:
        for server in [*self.servers.values(), self.sink]:
            server.start()

    def stop(self) -> None:
        for server in [*self.servers.values(), self.sink]:
            server.stop()

    def ports(self) -> set[int]:
        return {int(s.url.rsplit(":", 1)[1]) for s in self.servers.values()}

    def url(self, name: str) -> str:
        return self.servers[name].url


# -- one scenario's world -----------------------------------------------------------------------


@dataclass
class Row:
    name: str
    events: int = 0
    qualifying: int = 0
    recorded: int = 0
    lost: int = 0
    pending: int = 0
    duplicated: int = 0
    wrong: int = 0
    outbound: int = 0
    seconds: float = 0.0
    note: str = ""
    skipped: str = ""


@dataclass
class Expect:
    """What a qualifying token must end up as: statuses per source field, first_transfer_at."""

    statuses: dict[str, set[str]] = field(default_factory=dict)
    first_transfer_at: datetime | None = None


class World:
    """A queue, an exchange and a database of one scenario's own, on the bench's services."""

    def __init__(self, bench: Bench, name: str) -> None:
        self.bench = bench
        self.env = f"faults{uuid.uuid4().hex[:8]}"
        self.exchange = f"{EXCHANGE}.{self.env}"
        self.queue = queue_name_for(self.env)
        self.db_name = f"faults_{name}_{uuid.uuid4().hex[:6]}"
        self.cursor: str | None = None
        self.events = 0
        self.expected: dict[str, Expect] = {}
        self.tick_errors: Counter = Counter()
        self.run_failures = 0
        self.runs = 0
        self._declare()

    # -- resources ----------------------------------------------------------------------------
    @property
    def sensor_resources(self) -> dict:
        b = self.bench
        return {
            "mongo": MongoResource(uri=b.mongo.uri, database=self.db_name),
            "rabbitmq": RabbitMQResource(url=b.rabbit_url, env=self.env, exchange=self.exchange),
            "recording": RecordingSettingsResource(),
        }

    @property
    def job_resources(self) -> dict:
        b = self.bench
        return stand_in_resources(
            b.stand_ins.url, mongo_uri=b.mongo.uri, database=self.db_name, redis_url=b.redis.url,
            soltracker_key=SOLTRACKER_KEY, x_key=X_KEY, youtube_key="faults-youtube-key",
            recording=RecordingSettingsResource(retry_min_interval_minutes="0"),
        )

    # -- broker -------------------------------------------------------------------------------
    def _connection(self) -> pika.BlockingConnection:
        params = pika.URLParameters(self.bench.rabbit_url)
        params.socket_timeout = 5
        params.connection_attempts = 1
        return pika.BlockingConnection(params)

    def _declare(self) -> None:
        connection = self._connection()
        try:
            channel = connection.channel()
            channel.exchange_declare(self.exchange, exchange_type="topic", durable=True)
            declare_topology(connection, self.queue, self.exchange)
        finally:
            connection.close()

    def publish(self, *bodies) -> None:
        """Persistent messages, confirmed by the broker (what a producer that cares does)."""
        connection = self._connection()
        try:
            channel = connection.channel()
            channel.confirm_delivery()
            for body in bodies:
                if isinstance(body, dict):
                    body = json.dumps(body).encode()
                channel.basic_publish(
                    self.exchange, ROUTING_KEY, body, properties=pika.BasicProperties(delivery_mode=2)
                )
                self.events += 1
        finally:
            connection.close()

    def queued_addresses(self) -> tuple[set[str], int]:
        """Addresses of the qualifying messages still in the queue (read, never acknowledged)."""
        found, depth = set(), 0
        try:
            connection = self._connection()
        except Exception:  # noqa: BLE001 - broker down: nothing can be counted as queued
            return found, -1
        try:
            channel = connection.channel()
            depth = channel.queue_declare(self.queue, passive=True).method.message_count
            for _ in range(depth):
                method, _props, body = channel.basic_get(self.queue, auto_ack=False)
                if method is None:
                    break
                with contextlib.suppress(Exception):  # a malformed body is simply not counted
                    found.add(json.loads(body)["tokenAddress"])
        finally:
            connection.close()  # everything read goes back to the queue
        return found, depth

    def cleanup(self) -> None:
        try:
            connection = self._connection()
            channel = connection.channel()
            channel.queue_delete(self.queue)
            channel.queue_delete(self.queue + ".dlq")
            channel.exchange_delete(self.exchange)
            connection.close()
        except Exception:  # noqa: BLE001 - a broker scenario may have left it down
            pass
        try:
            client = MongoClient(self.bench.mongo.uri, serverSelectionTimeoutMS=3000)
            client.drop_database(self.db_name)
            client.close()
        except Exception:  # noqa: BLE001
            pass

    def dead_letters(self) -> int:
        connection = self._connection()
        try:
            return connection.channel().queue_declare(self.queue + ".dlq", passive=True).method.message_count
        finally:
            connection.close()

    # -- the stream ---------------------------------------------------------------------------
    def tick(self) -> list[dg.RunRequest]:
        context = dg.build_sensor_context(
            instance=self.bench.instance, resources=self.sensor_resources, cursor=self.cursor
        )
        try:
            result = self.bench.sensor(context)
        except Exception as exc:  # noqa: BLE001 - an infrastructure fault fails the tick
            self.tick_errors[type(exc).__name__] += 1
            return []
        self.cursor = result.cursor
        return list(result.run_requests or [])

    def run(self, request: dg.RunRequest) -> bool | None:
        """Run a request like the daemon: a run key already used starts nothing."""
        instance = self.bench.instance
        if instance.get_runs(filters=dg.RunsFilter(tags={RUN_KEY_TAG: request.run_key}), limit=1):
            return None
        self.runs += 1
        result = record_token_job.execute_in_process(
            run_config=request.run_config,
            resources=self.job_resources,
            instance=instance,
            tags={**request.tags, RUN_KEY_TAG: request.run_key},
            raise_on_error=False,
        )
        if not result.success:
            self.run_failures += 1
        return result.success

    def tick_and_run(self) -> int:
        started = 0
        for request in self.tick():
            if self.run(request) is not None:
                started += 1
        return started

    def settle(self, quiet_ticks: int = 2, seconds: float = SETTLE_SECONDS) -> None:
        """Tick and run until nothing is left to do (or the scenario's time is up)."""
        deadline = time.monotonic() + seconds
        quiet = 0
        while time.monotonic() < deadline and quiet < quiet_ticks:
            started = self.tick_and_run()
            open_entries = self.inbox_states()
            busy = started or any(state in PENDING_STATES for state in open_entries.values())
            quiet = 0 if busy else quiet + 1

    def inbox_states(self) -> dict[str, str]:
        try:
            client = MongoClient(self.bench.mongo.uri, serverSelectionTimeoutMS=3000)
            try:
                return {d["token_address"]: d["state"] for d in client[self.db_name]["record_inbox"].find()}
            finally:
                client.close()
        except Exception:  # noqa: BLE001
            return {}

    # -- upstream -----------------------------------------------------------------------------
    def token(
        self,
        *,
        website: str | None = "https://project.example/",
        twitter: str | None = "x.com/kolguy",
        first_flow: str = "2026-11-29T21:14:03Z",
        expect: dict[str, set[str]] | None = None,
        known: bool = True,
        **socials,
    ) -> str:
        addr = address()
        if known:
            self.bench.stand_ins.soltracker.put(
                upstream_token(addr, website=website, twitter=twitter, first_flow=first_flow, **socials)
            )
            statuses = {"website": {"ok"}, "twitter": {"ok"}} if expect is None else expect
            if website is None:
                statuses.pop("website", None)
            if twitter is None:
                statuses.pop("twitter", None)
            self.expected[addr] = Expect(statuses=statuses)
        return addr

    # -- measuring ----------------------------------------------------------------------------
    def measure(self, row: Row) -> Row:
        client = MongoClient(self.bench.mongo.uri, tz_aware=True, serverSelectionTimeoutMS=10_000)
        try:
            db = client[self.db_name]
            addresses = list(self.expected)
            markers = {d["address"]: d for d in db["tokens"].find({"address": {"$in": addresses}})}
            entries = {d["token_address"]: d for d in db["record_inbox"].find()}
            queued, _depth = self.queued_addresses()
            row.events = self.events
            row.qualifying = len(addresses)
            row.recorded = len(markers)
            now = datetime.now(UTC)
            # At the cap, only a relaunch the sensor has scheduled is waiting; the rest is lost.
            waiting = [a for a in addresses if a not in markers and relaunch_scheduled(entries.get(a), now)]
            lost = [a for a in addresses if a not in markers and a not in waiting]
            row.lost = len(lost)
            row.pending = len(waiting)
            row.duplicated = duplicates(db)
            wrong, wrong_what = 0, []
            for addr, marker in markers.items():
                expect = self.expected[addr]
                statuses = {u.get("source_field"): u.get("status") for u in marker.get("social_urls", [])}
                urls = {u.get("source_field"): u.get("raw_url") or u.get("url") for u in marker.get("social_urls", [])}
                for source_field, allowed in expect.statuses.items():
                    if statuses.get(source_field) not in allowed:
                        wrong += 1
                        shown = f"{str(urls.get(source_field))[:48]}; want {sorted(allowed)}"
                        wrong_what.append(f"{source_field}={statuses.get(source_field)} ({shown})")
                if expect.first_transfer_at is not None and marker.get("first_transfer_at") != expect.first_transfer_at:
                    wrong += 1
                    wrong_what.append(f"first_transfer_at={marker.get('first_transfer_at')}")
            row.wrong += wrong  # a scenario may have counted what only it can see
            notes = [f"wrong: {', '.join(wrong_what)}"] if wrong_what else []
            if lost:
                where = Counter(
                    (entries[a]["state"] if a in entries else "queued" if a in queued else "nowhere") for a in lost
                )
                notes.append("lost: " + ", ".join(f"{k} {v}" for k, v in sorted(where.items())))
            if self.tick_errors:
                notes.append("failed ticks " + ",".join(f"{k}x{v}" for k, v in self.tick_errors.items()))
            notes.append(f"runs {self.runs} ({self.run_failures} red)")
            row.note = "; ".join(filter(None, [row.note, *notes]))
        finally:
            client.close()
        return row


def relaunch_scheduled(entry: dict | None, now: datetime) -> bool:
    """The sensor's relaunch schedule says this token is waiting: `retrying` with `check_at` to come."""
    if entry is None or entry.get("state") != "retrying":
        return False
    check_at = entry.get("check_at")
    return isinstance(check_at, datetime) and check_at > now


def inject_breaches(w: World) -> None:
    """The self-test's breaches, after the scenario settled: the row must report every one."""
    client = MongoClient(w.bench.mongo.uri, tz_aware=True, serverSelectionTimeoutMS=10_000)
    try:
        db = client[w.db_name]
        now = datetime.now(UTC)
        # lost: a qualifying token that never arrived, and one whose entry stays launched, no relaunch planned
        never, stalled = address(), address()
        w.expected[never] = Expect(statuses={"website": {"ok"}})
        w.expected[stalled] = Expect(statuses={"website": {"ok"}})
        db["record_inbox"].insert_one(
            {"token_address": stalled, "state": "launched", "generation": 1, "received_at": now, "relaunch": False}
        )
        # wrong: a marker whose website URL is not the status the scenario names
        wrong = address()
        w.expected[wrong] = Expect(statuses={"website": {"ok"}})
        db["tokens"].insert_one(
            {"address": wrong, "discovered_at": now, "social_urls": [
                {"url": "https://project.example/", "source_field": "website", "status": "error"}]}
        )  # fmt: skip
        # duplicated: the same link twice
        link = {"token_address": wrong, "object": "contents", "object_id": ObjectId(), "source_url": "https://x.com/a"}
        db["token_links"].insert_many([dict(link), dict(link)])
    finally:
        client.close()
    # outbound: a connection to the sink hostile URLs point at
    sink = w.bench.stand_ins.sink.url.rsplit(":", 1)[1]
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", int(sink)), timeout=2):
        pass


def detects_breach(row: Row) -> bool:
    return row.lost >= 2 and row.duplicated >= 1 and row.wrong >= 1 and row.outbound >= 1


def duplicates(db) -> int:
    """Rows that exist twice: a second marker, link, content or account for the same identity."""
    total = db["tokens"].count_documents({}) - len(db["tokens"].distinct("address"))
    groups = {
        "token_links": {"t": "$token_address", "o": "$object_id", "u": "$source_url"},
        "contents": {"p": "$platform", "s": "$subtype", "k": "$platform_key"},
        "accounts": {"p": "$platform", "k": "$platform_key"},
        "venues": {"p": "$platform", "k": "$platform_key"},
    }
    for name, key in groups.items():
        pipeline = [{"$group": {"_id": key, "n": {"$sum": 1}}}, {"$match": {"n": {"$gt": 1}}}]
        total += sum(g["n"] - 1 for g in db[name].aggregate(pipeline))
    return total


# -- the bench ----------------------------------------------------------------------------------


class Bench:
    def __init__(self, port_base: int, shared_broker: bool = False) -> None:
        self.port_base = port_base
        self.shared_broker = shared_broker
        self.outbound = Outbound()
        self.redis = OwnRedis(port_base)
        self.mongo = OwnSecantus(port_base + 10)
        self.rabbit: OwnRabbit | None = None
        self.rabbit_url = SHARED_RABBITMQ_URL
        self.broker_skip = ""
        self.stand_ins = StandIns(port_base + 40)
        self.instance: dg.DagsterInstance | None = None
        self.self_test = False
        # The sensor's own backoff, without its minutes: what failed is relaunched on the next tick.
        self.sensor = token_flow.build_token_flow_sensor(
            TickLimits(max_seconds=5.0, relaunch_grace=timedelta(0), backoff=(timedelta(0),) * 6)
        )

    def start(self) -> None:
        self.redis.start()
        self.mongo.start()
        why_not: str | None = "--shared-broker given"
        if not self.shared_broker:
            self.rabbit, why_not = start_own_rabbit(
                self.port_base + 20, self.port_base + 21, nodename=f"faults{self.port_base}"
            )
            if self.rabbit is not None:
                self.rabbit_url = self.rabbit.url
        if why_not:
            self.broker_skip = why_not
        self.stand_ins.start()
        broker_port = int(self.rabbit_url.split("@")[1].split("/")[0].split(":")[1])
        self.outbound.allowed = {self.redis.port, self.mongo.port, broker_port, *self.stand_ins.ports()}
        self.outbound.denied = {int(self.stand_ins.sink.url.rsplit(":", 1)[1])}
        self.outbound.install()
        self.instance = dg.DagsterInstance.ephemeral()

    def stop(self) -> None:
        if self.instance is not None:
            self.instance.dispose()
        self.stand_ins.stop()
        for service in (self.rabbit, self.mongo, self.redis):
            if service is not None:
                service.cleanup()

    def scenario(self, name: str, body) -> Row:
        row = Row(name)
        world = World(self, name)
        before = self.outbound.count()
        started = time.monotonic()

        def out_of_time(signum, frame):
            raise TimeoutError(f"scenario took more than {SCENARIO_SECONDS} s")

        previous = signal.signal(signal.SIGALRM, out_of_time)
        signal.alarm(SCENARIO_SECONDS)
        try:
            body(world, row)
            if not row.skipped:
                world.settle()
                note = row.note
                if self.self_test:
                    inject_breaches(world)
                world.measure(row)
                if row.pending:  # relaunches scheduled at the cap: a longer settle, then none may wait
                    world.settle(seconds=LONGER_SETTLE_SECONDS)
                    row.note = note
                    world.measure(row)
        except Exception as exc:  # noqa: BLE001 - a scenario that crashes is a failed scenario
            row.note = f"scenario crashed: {type(exc).__name__}: {exc}"[:200]
            row.lost = max(row.lost, len(world.expected))
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
            self._recover()
            world.cleanup()
        row.outbound = self.outbound.count() - before
        row.seconds = time.monotonic() - started
        return row

    def _recover(self) -> None:
        """Every service up again before the next scenario."""
        for service in (self.redis, self.mongo, self.rabbit):
            if service is not None and not service.running:
                service.start()
        self.stand_ins.x_faults.clear()
        self.stand_ins.on_x_call = None
        self.stand_ins.soltracker_hangs = 0


# -- scenarios ----------------------------------------------------------------------------------


def duplicates_out_of_order(w: World, row: Row) -> None:
    times = ["2026-11-29T21:00:00Z", "2026-11-29T20:00:00Z", "2026-11-29T22:30:00Z", "2026-11-29T19:45:00Z"]
    tokens = [w.token() for _ in range(5)]
    for addr in tokens:
        w.expected[addr].first_transfer_at = datetime(2026, 11, 29, 19, 45, tzinfo=UTC)
    bodies = [flow(a, firstFlowTimestamp=t) for a in tokens for t in times[:3]]
    random.shuffle(bodies)
    w.publish(*bodies)
    w.tick_and_run()
    # The earliest copies arrive after the runs have written the markers.
    w.publish(*[flow(a, firstFlowTimestamp=times[3]) for a in tokens], *[flow(a) for a in tokens])
    row.note = "earliest time arrives after the marker"


def poison_messages(w: World, row: Row) -> None:
    good = [w.token() for _ in range(3)]
    cleaned = w.token()  # its symbol is dropped, the token is still recorded
    poison = [
        b"{not json",
        b"[1, 2, 3]",
        json.dumps({"totalInvestedAlphaFinders": 9}).encode(),
        json.dumps(flow("0OIl" * 11)).encode(),
        json.dumps({"tokenAddress": address(), "totalInvestedAlphaFinders": "9"}).encode(),
        json.dumps(flow(address(), -3)).encode(),
        json.dumps(flow(address(), symbol="x" * 70_000)).encode(),
        b"[" * 30_000 + b"]" * 30_000,
        b'{"tokenAddress": "%s", "totalInvestedAlphaFinders": %s}' % (address().encode(), b"9" * 5_000),
        json.dumps(flow(address(), firstFlowTimestamp="yesterday")).encode(),
        b"\xff\xfe garbage",
    ]
    w.publish(flow(good[0]), *poison[:6], flow(good[1]))
    w.publish(flow(cleaned, symbol="\ud800\u202eevil"), *poison[6:], flow(good[2]))
    w.settle()
    dead = w.dead_letters()
    row.note = f"{len(poison)} kinds of poison, {dead} dead-lettered; lone surrogate + bidi symbol dropped"
    if dead != len(poison):
        row.wrong += abs(dead - len(poison))


def redis_down_before_run(w: World, row: Row) -> None:
    tokens = [w.token() for _ in range(2)]
    w.bench.redis.stop()
    w.publish(*[flow(a) for a in tokens])
    w.tick_and_run()  # red runs: Redis refused
    w.bench.redis.start()


def redis_down_during_run(w: World, row: Row) -> None:
    addr = w.token()
    w.bench.stand_ins.on_x_call = w.bench.redis.kill  # while the run fetches its X URL
    w.publish(flow(addr))
    w.tick_and_run()
    w.bench.redis.start()


def mongo_killed_after_tick(w: World, row: Row) -> None:
    tokens = [w.token() for _ in range(3)]
    w.publish(*[flow(a) for a in tokens])
    requests = w.tick()  # inbox written, messages acknowledged
    w.bench.mongo.kill()
    # The tick's run requests die with it (as when the host running the daemon goes down too):
    # only what the inbox durably holds can bring these tokens back.
    w.bench.mongo.start()
    row.note = f"{len(requests)} run requests of that tick dropped"


def mongo_killed_during_run(w: World, row: Row) -> None:
    addr = w.token()
    mongo = w.bench.mongo

    def kill_and_restart_later():
        # Down for longer than the driver's 5 s server selection: the run's writes really fail.
        mongo.kill()
        threading.Timer(8.0, mongo.start).start()

    w.bench.stand_ins.on_x_call = kill_and_restart_later
    w.publish(flow(addr))
    w.tick_and_run()
    deadline = time.monotonic() + 30
    while not mongo.running and time.monotonic() < deadline:
        time.sleep(0.2)


def broker_restarted_between_ticks(w: World, row: Row) -> None:
    if w.bench.rabbit is None:
        row.skipped = w.bench.broker_skip
        return
    first = [w.token() for _ in range(3)]
    w.publish(*[flow(a) for a in first])
    w.tick_and_run()
    second = [w.token() for _ in range(3)]
    w.publish(*[flow(a) for a in second])
    w.bench.rabbit.stop()
    w.tick()  # a tick while the broker is away fails, acknowledges nothing
    w.bench.rabbit.start()


def broker_killed_during_tick(w: World, row: Row) -> None:
    if w.bench.rabbit is None:
        row.skipped = w.bench.broker_skip
        return
    tokens = [w.token() for _ in range(3)]
    w.publish(*[flow(a) for a in tokens], *[flow(address(), 2) for _ in range(300)])
    original = RecordInbox.accept
    rabbit = w.bench.rabbit

    def accept_then_kill(self, events, now):
        count = original(self, events, now)
        RecordInbox.accept = original
        rabbit.kill()  # after the inbox write, before the acknowledgement
        return count

    RecordInbox.accept = accept_then_kill
    try:
        w.tick()
    finally:
        RecordInbox.accept = original
    rabbit.start()


def soltracker_5xx(w: World, row: Row) -> None:
    addr = w.token()
    w.bench.stand_ins.soltracker.fail_with(Reply.json({"message": "upstream exploded"}, status=503), times=5)
    w.publish(flow(addr))


def soltracker_timeout(w: World, row: Row) -> None:
    addr = w.token()
    w.bench.stand_ins.soltracker_hangs = 2
    w.publish(flow(addr))


def soltracker_bad_shape(w: World, row: Row) -> None:
    addr = w.token()
    w.bench.stand_ins.soltracker.fail_with(Reply.json({"data": [1, 2, 3], "unexpected": True}), times=5)
    w.publish(flow(addr))


def _platform_fault(handle: str, fault) -> callable:
    def scenario(w: World, row: Row) -> None:
        good = w.token()
        bad = w.token(twitter=f"x.com/{handle}", expect={"website": {"ok"}, "twitter": {"error"}})
        w.bench.stand_ins.x_faults[handle] = fault
        w.publish(flow(good), flow(bad))
        row.note = "X URL must be error (retryable), the rest ok"

    return scenario


def _hang(request):
    time.sleep(11)  # the platform client's read timeout is 10 s
    return Reply.json({"status": "success", "data": {}})


def hostile_urls(w: World, row: Row) -> None:
    """Each hostile URL with the one status it must get: never a call to the sink (outbound)."""
    sink = int(w.bench.stand_ins.sink.url.rsplit(":", 1)[1])
    # SPEC §3/§10: a website (any host, any port, private or not) is a URL-only row that is never
    # fetched, so `ok` with no request anywhere; a string that is not a routable URL, and a path no
    # generator handles, is `unsupported`.
    hostile = [
        (f"http://127.0.0.1:{sink}/admin", "ok"),
        (f"http://localhost:{sink}/", "unsupported"),
        (f"https://127.0.0.1:{sink}/", "ok"),
        ("http://169.254.169.254/latest/meta-data/iam/", "ok"),
        (f"http://[::1]:{sink}/", "ok"),
        (f"https://x.com@127.0.0.1:{sink}/", "unsupported"),
        (f"https://t.co@127.0.0.1:{sink}/abc", "unsupported"),
        (f"http://0x7f000001:{sink}/", "unsupported"),
        (f"http://2130706433:{sink}/", "unsupported"),
        ("file:///etc/passwd", "unsupported"),
        (f"gopher://127.0.0.1:{sink}/_INFO", "unsupported"),
        ("javascript:alert(1)", "unsupported"),
        (f"https://t.co:{sink}/abc", "ok"),
        (f"https://x.com.127.0.0.1.nip.io:{sink}/kolguy", "ok"),
        ("https://x.com/kolguy/../../admin", "unsupported"),
        ("https://twitter.com/" + "a" * 5000, "unsupported"),
        ("https://youtube.com/watch?v=<script>alert(1)</script>", "unsupported"),
        ("https://t.me/\u202eevil", "unsupported"),
        (f"ftp://127.0.0.1:{sink}/", "unsupported"),
        ("data:text/html,<h1>x</h1>", "unsupported"),
        (f"https://github.com:{sink}/pumpdev", "ok"),
        (f"https://www.reddit.com:{sink}/r/solana", "ok"),
        (f"http://127.1:{sink}/", "unsupported"),
        (f"https://youtu.be:{sink}/dQw4w9WgXcQ", "ok"),
        ("https://vm.tiktok.com@127.0.0.1/abc", "unsupported"),
        (f"http://0.0.0.0:{sink}/", "ok"),
        (f"https://[::ffff:127.0.0.1]:{sink}/", "ok"),
        ("https://x.com/i/communities/1790000000000000042@evil.example", "unsupported"),
        ("\\\\127.0.0.1\\share", "unsupported"),
        (f"https://t.me:{sink}/pumpchannel", "ok"),
    ]
    fields = ("website", "twitter", "telegram", "discord")
    for i in range(0, len(hostile), 3):
        chunk = hostile[i : i + 3]
        socials = dict(zip(fields[1:], [url for url, _ in chunk] + [None] * (3 - len(chunk)), strict=True))
        addr = w.token(
            website="https://project.example/",
            expect={"website": {"ok"}, **{f: {status} for f, (_, status) in zip(fields[1:], chunk, strict=False)}},
            **socials,
        )
        w.publish(flow(addr))
    w.bench.stand_ins.sink.reset_log()
    w.settle()
    hits = len(w.bench.stand_ins.sink.calls())
    row.note = f"{len(hostile)} hostile URLs, each with the status it must get; {hits} request(s) reached the sink"
    row.outbound += hits


# -- defects of the second "nothing lost" round (issue 19) ---------------------------------------
# Self-contained scenarios; registered in one line after SCENARIOS. Each counts the breach it exists
# for in `wrong` (or `lost`) and says what it saw in the note.


def marker_write_then_mongo_killed(w: World, row: Row) -> None:
    """Defect 1: MongoDB SIGKILLed right after `write_marker` returns, for 3 tokens in a row."""
    from socialrec_pipeline.store.tokens import TokenRepository

    tokens = [w.token() for _ in range(3)]
    original = TokenRepository.write_marker
    mongo = w.bench.mongo
    kills = []

    def write_then_kill(self, token):
        created = original(self, token)
        if len(kills) < len(tokens):
            kills.append(token.address)
            mongo.kill()  # the write was acknowledged; nothing after it reaches the disk
            mongo.start()
        return created

    TokenRepository.write_marker = write_then_kill
    try:
        w.publish(*[flow(a) for a in tokens])
        for _ in range(3):
            w.tick_and_run()
    finally:
        TokenRepository.write_marker = original
    row.note = f"{len(kills)} kill(s) right after write_marker"


def retry_two_spellings(w: World, row: Row) -> None:
    """Defect 2: one token stores twitter.com/kolguy and mobile.twitter.com/kolguy, both `error`;
    one retry run, the second X call failing. Expected: one X call, x.com/kolguy `ok` with links."""
    from socialrec_pipeline.defs.retry import retry_job
    from socialrec_pipeline.store.tokens import TokenRepository, _token

    stand_ins = w.bench.stand_ins
    addr = w.token(twitter="twitter.com/kolguy", expect={"website": {"ok"}, "twitter": {"ok"}})
    stand_ins.x_faults["kolguy"] = lambda r: Reply.json({"status": "error", "msg": "boom"}, status=502)
    w.publish(flow(addr))
    w.settle()
    stand_ins.x_faults.clear()
    client = MongoClient(w.bench.mongo.uri, tz_aware=True, serverSelectionTimeoutMS=10_000)
    try:
        db = client[w.db_name]
        doc = db["tokens"].find_one({"address": addr})
        if doc is None:
            row.note = "the first recording wrote no marker"
            row.wrong += 1
            return
        urls = doc["social_urls"]
        x_element = next(u for u in urls if u.get("source_field") == "twitter")
        old = datetime.now(UTC) - timedelta(hours=3)
        # What an earlier classifier stored: two spellings, each its own element, both `error`.
        first = {**x_element, "url": "https://twitter.com/kolguy", "raw_url": "twitter.com/kolguy",
                 "status": "error", "attempted_at": old, "attempts": 1}  # fmt: skip
        second = {**x_element, "url": "https://mobile.twitter.com/kolguy", "raw_url": "mobile.twitter.com/kolguy",
                  "source_field": "telegram", "status": "error", "attempted_at": old, "attempts": 1}  # fmt: skip
        doc["social_urls"] = [u for u in urls if u is not x_element] + [first, second]
        db["token_links"].delete_many({"token_address": addr, "source_url": x_element["url"]})
        TokenRepository(db).write_marker(_token(dict(doc)))
        calls = []

        def count_and_fail_second(request):
            calls.append(request.param("userName"))
            if len(calls) == 2:
                return Reply.json({"status": "error", "msg": "boom"}, status=502)
            return stand_ins.x._user(request)

        stand_ins.x_faults["kolguy"] = count_and_fail_second
        result = retry_job.execute_in_process(
            partition_key="error", resources=w.job_resources, instance=w.bench.instance, raise_on_error=False
        )
        stand_ins.x_faults.clear()
        after = db["tokens"].find_one({"address": addr})
        x_urls = [u for u in after["social_urls"] if "kolguy" in u["url"]]
        links = {
            u["url"]: db["token_links"].count_documents({"token_address": addr, "source_url": u["url"]})
            for u in x_urls
        }
        ok_without_links = [u["url"] for u in x_urls if u["status"] == "ok" and not links[u["url"]]]
        row.wrong += int(len(calls) != 1) + len(ok_without_links) + int(not result.success)
        w.expected[addr].statuses = {"website": {"ok"}}  # the X elements are judged here, not by measure
        row.note = (
            f"retry made {len(calls)} X call(s) (want 1); X elements "
            + ", ".join(f"{u['url']}={u['status']}/{links[u['url']]} links" for u in x_urls)
            + (f"; ok with 0 links: {ok_without_links}" if ok_without_links else "")
        )
    finally:
        client.close()


def link_copies_every_order(w: World, row: Row) -> None:
    """Defect 3: a later-sent event carries an earlier firstFlowTimestamp, in 5 arrival orders;
    every link's first_transfer_at must equal its marker's."""
    late, early = "2026-11-29T22:00:00Z", datetime(2026, 11, 29, 20, 0, tzinfo=UTC)
    early_ms = int(early.timestamp() * 1000)
    patterns = {}
    # 1. both in one tick, the later time first
    a = w.token()
    w.publish(flow(a, firstFlowTimestamp=late), flow(a, firstFlowTimestamp=early_ms))
    w.tick_and_run()
    patterns[a] = "same tick, epoch ms second"
    # 2. the earlier one during the run (published while the run fetches its X URL)
    b = w.token()
    w.bench.stand_ins.on_x_call = lambda: w.publish(flow(b, firstFlowTimestamp=early.isoformat()))
    w.publish(flow(b, firstFlowTimestamp=late))
    w.tick_and_run()
    patterns[b] = "during the run"
    # 3. and 4. after the marker, ISO and epoch ms
    c, d = w.token(), w.token()
    w.publish(flow(c, firstFlowTimestamp=late), flow(d, firstFlowTimestamp=late))
    w.tick_and_run()
    w.publish(flow(c, firstFlowTimestamp=early.isoformat()), flow(d, firstFlowTimestamp=early_ms))
    patterns[c], patterns[d] = "after the marker (ISO)", "after the marker (epoch ms)"
    # 5. the first event has no time at all, the earlier one comes after the marker
    e = w.token()
    w.publish(flow(e))
    w.tick_and_run()
    w.publish(flow(e, firstFlowTimestamp=early_ms))
    patterns[e] = "no time first, epoch ms after the marker"
    w.settle()
    for addr in patterns:
        w.expected[addr].first_transfer_at = early
    client = MongoClient(w.bench.mongo.uri, tz_aware=True, serverSelectionTimeoutMS=10_000)
    try:
        db = client[w.db_name]
        bad = []
        for addr, what in patterns.items():
            marker = db["tokens"].find_one({"address": addr}) or {}
            copies = {link.get("first_transfer_at") for link in db["token_links"].find({"token_address": addr})}
            if any(c != marker.get("first_transfer_at") for c in copies if c is not None):
                bad.append(what)
        row.wrong += len(bad)
        row.note = f"links disagree with the marker in {len(bad)}/5 orders" + (f": {'; '.join(bad)}" if bad else "")
    finally:
        client.close()


def soltracker_symbol_controls(w: World, row: Row) -> None:
    """Defect 4: symbols from SolTracker (the event has none) with a bidi override, an ANSI escape
    and BEL, a newline, 70,000 characters; and a zero-width character in an event's symbol."""
    import unicodedata

    hostile = ["\u202eKCUF", "\x1b[31mRED\x07", "TWO\nLINES", "S" * 70_000, "ZE\u200bRO"]
    tokens = []
    for symbol in hostile[:4]:
        addr = w.token()
        w.bench.stand_ins.soltracker.put(upstream_token(
            addr, symbol=symbol, website="https://project.example/", twitter="x.com/kolguy",
        ))  # fmt: skip
        tokens.append(addr)
        w.publish(flow(addr))
    zw = w.token()
    tokens.append(zw)
    w.publish(flow(zw, symbol=hostile[4]))
    w.settle()

    def dirty(text) -> bool:
        return isinstance(text, str) and (
            len(text) > 64 or any(unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp") for ch in text)
        )

    client = MongoClient(w.bench.mongo.uri, serverSelectionTimeoutMS=10_000)
    try:
        found = client[w.db_name]["tokens"].find({"address": {"$in": tokens}})
        symbols = {d["address"]: d.get("symbol") for d in found}
    finally:
        client.close()
    bad = [repr(symbols[a])[:24] for a in tokens if dirty(symbols.get(a))]
    row.wrong += len(bad)
    row.note = f"{len(bad)}/{len(tokens)} markers keep an uncleaned symbol" + (f": {', '.join(bad)}" if bad else "")


def inbox_upsert_too_large(w: World, row: Row) -> None:
    """Defect 5: the server refuses one token's inbox upsert with code 17420 ("Document to upsert is
    larger than 16777216", what MongoDB answers); that message must be dead-lettered, the rest flow."""
    from pymongo.collection import Collection
    from pymongo.errors import BulkWriteError

    good = [w.token() for _ in range(3)]
    huge = address()
    original = Collection.bulk_write

    def refuse(self, requests, *args, **kwargs):
        if self.name == "record_inbox" and any(huge in repr(getattr(r, "_filter", "")) for r in requests):
            raise BulkWriteError({"writeErrors": [{"index": 0, "code": 17420,
                                                   "errmsg": "Document to upsert is larger than 16777216"}],
                                  "writeConcernErrors": [], "nInserted": 0, "nUpserted": 0, "nMatched": 0,
                                  "nModified": 0, "nRemoved": 0, "upserted": []})  # fmt: skip
        return original(self, requests, *args, **kwargs)

    Collection.bulk_write = refuse
    try:
        w.publish(flow(good[0]), flow(huge), flow(good[1]), flow(good[2]))
        for _ in range(4):
            w.tick_and_run()
    finally:
        Collection.bulk_write = original
    dead = w.dead_letters()
    failed_ticks = sum(w.tick_errors.values())
    row.wrong += int(dead != 1) + int(failed_ticks > 0)
    row.note = f"code 17420: {dead} dead-lettered (want 1), {failed_ticks} failed tick(s) (want 0)"


class _Clock:
    """A clock the sensor reads instead of the wall clock (only `datetime.now` is replaced)."""

    def __init__(self, start: datetime) -> None:
        self.now_value = start

    def make(self):
        clock = self

        class FrozenDatetime(datetime):
            @classmethod
            def now(cls, tz=None):
                return clock.now_value

        return FrozenDatetime


def relaunch_real_schedule(w: World, row: Row) -> None:
    """Defect 6, without the zero-delay shortcut: the project's relaunch grace and backoff, on a
    clock the bench advances a minute per tick, for a token whose every run fails (SolTracker 503).
    Reports the relaunch times; wrong when the gaps are not the backoff steps, when the entry is not
    `stuck` with its reason at the end, when a new event gives it one try only, or when the failure
    message still promises that the next event relaunches it."""
    from socialrec_pipeline.defs.record_token import upstream_failure_message

    stand_ins = w.bench.stand_ins
    addr = w.token()
    limits = TickLimits(max_seconds=5.0)
    saved_sensor, saved_datetime = w.bench.sensor, token_flow.datetime
    clock = _Clock(datetime.now(UTC))
    w.bench.sensor = token_flow.build_token_flow_sensor(limits)
    token_flow.datetime = clock.make()
    # A refused key fails the run at once (no step retries to sit through), like any red run.
    stand_ins.soltracker.fail_with(Reply.json({"message": "Unauthorized"}, status=401), times=10_000)
    launches: list[datetime] = []
    start = clock.now_value
    horizon = sum(limits.backoff, limits.relaunch_grace * (len(limits.backoff) + 2)) + timedelta(minutes=30)
    try:
        w.publish(flow(addr))
        while clock.now_value - start < horizon:
            for request in w.tick():
                if w.run(request) is not None:
                    launches.append(clock.now_value)
            if w.inbox_states().get(addr) == "stuck":
                break
            clock.now_value += timedelta(minutes=1)
        state = w.inbox_states().get(addr)
        entry = MongoClient(w.bench.mongo.uri, serverSelectionTimeoutMS=5000)[w.db_name]["record_inbox"].find_one(
            {"token_address": addr}
        ) or {}
        gaps = [round((b - a).total_seconds() / 60) for a, b in zip(launches, launches[1:], strict=False)]
        wanted = [round(step.total_seconds() / 60) for step in limits.backoff]
        # A run's end is seen at the next tick, a minute of this clock later: one step of slack.
        late = [g for g, w in zip(gaps, wanted, strict=False) if not w <= g <= w + 1]
        schedule_wrong = int(len(gaps) != len(wanted) or bool(late))
        stuck_wrong = int(state != "stuck" or not entry.get("last_failed_run_id"))
        # A new event for the stuck token: a fresh schedule, not one try and stuck again.
        runs_before = len(launches)
        w.publish(flow(addr))
        for _ in range(30):
            for request in w.tick():
                if w.run(request) is not None:
                    launches.append(clock.now_value)
            clock.now_value += timedelta(minutes=1)
        after_event = w.inbox_states().get(addr)
        reset_wrong = int(after_event == "stuck" and len(launches) - runs_before <= 1)
        promise = int("next token.flow event relaunches" in upstream_failure_message(addr, "503"))
        row.wrong += schedule_wrong + stuck_wrong + reset_wrong + promise
        total = (launches[runs_before - 1] - launches[0]) if runs_before > 1 else timedelta(0)
        row.note = (
            f"relaunch gaps {gaps} min (backoff {wanted}), last relaunch {total} after the first run; "
            f"state {state} (reason: run {str(entry.get('last_failed_run_id'))[:8]}); after a new event: "
            f"{len(launches) - runs_before} run(s) in 30 min, state {after_event}"
            + ("; failure message still says the next event relaunches it" if promise else "")
        )
        w.expected.pop(addr)  # judged here: it must end stuck, not recorded
    finally:
        w.bench.sensor, token_flow.datetime = saved_sensor, saved_datetime
        stand_ins.soltracker.clear_faults()


def soltracker_slow_body_and_bomb(w: World, row: Row) -> None:
    """Defect 7: SolTracker sends its body a few bytes a second (one call must end within 5 s plus
    a margin), then a gzip bomb (the decompressed size must be bounded while reading)."""
    import gzip

    slow, bomb = w.token(expect={}), w.token(expect={})
    payload = json.dumps(upstream_token(slow, website="https://project.example/")).encode()
    bomb_body = gzip.compress(b" " * (256 << 20), compresslevel=9)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    durations: dict[str, float] = {}

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    def answer(conn) -> None:
        began, which = time.monotonic(), "slow"
        try:
            head = conn.recv(65536).decode(errors="replace")
            if bomb in head:
                which = "bomb"
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
                             b"Content-Length: %d\r\n\r\n" % len(bomb_body) + bomb_body)  # fmt: skip
            else:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                             % len(payload))  # fmt: skip
                for i in range(0, len(payload), 8):  # 8 bytes every 0.5 s: each read succeeds in time
                    conn.sendall(payload[i : i + 8])
                    time.sleep(0.5)
        except OSError:
            pass  # the client gave up: what is measured is how long it stayed
        finally:
            conn.close()
        durations[which] = max(durations.get(which, 0.0), time.monotonic() - began)

    threading.Thread(target=serve, daemon=True).start()
    w.bench.outbound.allowed.add(port)
    real_url = w.bench.stand_ins.url
    w.bench.stand_ins.url = lambda name: f"http://127.0.0.1:{port}" if name == "soltracker" else real_url(name)
    page = os.sysconf("SC_PAGE_SIZE")

    def rss() -> int:
        return int(Path("/proc/self/statm").read_text().split()[1]) * page

    baseline, peak, sampling = rss(), [0], threading.Event()

    def sample() -> None:  # the peak is transient: the decoded chunk is freed once refused
        while not sampling.is_set():
            peak[0] = max(peak[0], rss())
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        w.publish(flow(slow), flow(bomb))
        w.tick_and_run()
    finally:
        sampling.set()
        sampler.join()
        w.bench.stand_ins.url = real_url
        listener.close()
    grown_mib = (peak[0] - baseline) / (1 << 20)
    longest = durations.get("slow", 0.0)
    row.wrong += int(longest > 7.0) + int(grown_mib > 32)  # a bounded decoder adds a few MiB, not tens
    row.note = (
        f"slow body held one call {longest:.1f} s (bound 5 s); gzip bomb (256 MiB of spaces) raised this "
        f"process's RSS by up to {grown_mib:.0f} MiB (sampled every 5 ms)"
    )
    w.expected.clear()  # no marker is expected for either: the point is how long and how much


DEFECT_SCENARIOS = {
    "marker_write_then_mongo_killed": marker_write_then_mongo_killed,
    "retry_two_spellings": retry_two_spellings,
    "link_copies_every_order": link_copies_every_order,
    "soltracker_symbol_controls": soltracker_symbol_controls,
    "inbox_upsert_too_large": inbox_upsert_too_large,
    "relaunch_real_schedule": relaunch_real_schedule,
    "soltracker_slow_body_and_bomb": soltracker_slow_body_and_bomb,
}


SCENARIOS = {
    "duplicates_out_of_order": duplicates_out_of_order,
    "poison_messages": poison_messages,
    "redis_down_before_run": redis_down_before_run,
    "redis_down_during_run": redis_down_during_run,
    "mongo_killed_after_tick": mongo_killed_after_tick,
    "mongo_killed_during_run": mongo_killed_during_run,
    "broker_restarted_between_ticks": broker_restarted_between_ticks,
    "broker_killed_during_tick": broker_killed_during_tick,
    "soltracker_5xx": soltracker_5xx,
    "soltracker_timeout": soltracker_timeout,
    "soltracker_bad_shape": soltracker_bad_shape,
    "platform_5xx": _platform_fault("fault5xx", lambda r: Reply.json({"status": "error", "msg": "boom"}, status=502)),
    "platform_429": _platform_fault(
        "fault429",
        lambda r: Reply.json({"status": "error", "msg": "slow down"}, status=429, headers={"Retry-After": "1"}),
    ),
    "platform_hang": _platform_fault("faulthang", _hang),
    "platform_bad_body": _platform_fault("faultbody", lambda r: Reply.html("<html><body>Bad gateway</body></html>")),
    "hostile_urls": hostile_urls,
}
SCENARIOS.update(DEFECT_SCENARIOS)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port-base", type=int, default=int(os.environ.get("SOCIALREC_FAULTS_PORT_BASE", "21200")))
    parser.add_argument("--only", default="", help="comma-separated scenario names")
    parser.add_argument(
        "--shared-broker",
        action="store_true",
        help="use an exchange and queues of the bench's own on RABBITMQ_URL instead of a second node "
        "(the broker scenarios are then skipped)",
    )
    parser.add_argument("--self-test", action="store_true", help="inject every row's breaches; each must show")
    args = parser.parse_args()
    random.seed(9)
    names = [n for n in args.only.split(",") if n] or list(SCENARIOS)
    bench = Bench(args.port_base, shared_broker=args.shared_broker)
    bench.self_test = args.self_test
    started = time.monotonic()
    rows: list[Row] = []
    try:
        bench.start()
        if bench.broker_skip:
            print(
                "broker: shared broker, exchange and queues of the bench's own; "
                f"broker-restart scenarios skipped: {bench.broker_skip}"
            )
        else:
            print(f"broker: own RabbitMQ node {bench.rabbit.node} on port {bench.rabbit.port}")
        header = (
            f"{'scenario':32} {'events':>6} {'qual':>4} {'rec':>4} {'lost':>4} {'pend':>4} {'dup':>4} {'wrong':>5} "
            f"{'outb':>4} {'sec':>6}  note"
        )
        print(header)
        for name in names:
            row = bench.scenario(name, SCENARIOS[name])
            rows.append(row)
            if row.skipped:
                print(f"{name:32} skipped: {row.skipped}")
                continue
            print(
                f"{row.name:32} {row.events:6d} {row.qualifying:4d} {row.recorded:4d} {row.lost:4d} {row.pending:4d} "
                f"{row.duplicated:4d} {row.wrong:5d} {row.outbound:4d} {row.seconds:6.1f}  {row.note}",
                flush=True,
            )
    finally:
        bench.stop()
    ran = [r for r in rows if not r.skipped]
    print(
        f"{'TOTAL':32} {sum(r.events for r in ran):6d} {sum(r.qualifying for r in ran):4d} "
        f"{sum(r.recorded for r in ran):4d} {sum(r.lost for r in ran):4d} {sum(r.pending for r in ran):4d} "
        f"{sum(r.duplicated for r in ran):4d} "
        f"{sum(r.wrong for r in ran):5d} {sum(r.outbound for r in ran):4d} {time.monotonic() - started:6.1f}  "
        f"{len(ran)} scenarios run, {len(rows) - len(ran)} skipped"
    )
    if os.environ.get("FAULTS_DEBUG"):
        print("unexpected connections:", Counter(bench.outbound.unexpected).most_common(10))
    print(f"faults_wrong_status_total: {sum(r.wrong for r in ran)}")
    print(f"faults_unexpected_outbound_total: {sum(r.outbound for r in ran)}")
    if args.self_test:
        blind = [r.name for r in ran if not detects_breach(r)]
        if blind:
            print(f"rows blind to an injected breach: {blind}")
        print(f"bench_self_test: {len(ran) - len(blind)}/{len(ran)} rows detect their breach")
        return 0 if ran and not blind else 1
    print(f"faults_pending_total: {sum(r.pending for r in ran)}")
    print(f"faults_lost_total: {sum(r.lost for r in ran)}")
    print(f"faults_duplicated_total: {sum(r.duplicated for r in ran)}")
    breached = sum(r.lost + r.pending + r.duplicated + r.wrong + r.outbound for r in ran)
    return 1 if breached else 0


if __name__ == "__main__":
    sys.exit(main())
