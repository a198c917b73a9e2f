"""Soak: the real Dagster daemon under a steady mixed stream while a seeded fault schedule runs.

Starts infrastructure of its own (bench/own_services.py): a Redis, a SecantusDB server and, where
the machine allows, a second RabbitMQ node (else an exchange and queues of its own on the shared
broker, which is never restarted: the broker fault is then skipped with the reason). The SolTracker
and platform stand-ins are
bench/faults.py's, on loopback, with an outage switch and a 5xx/429 burst switch. Then it starts
`dagster-daemon run` (the repo's dagster.yaml, what run.sh starts: runs in K warm run workers,
`--run-workers K`, default 1, each running two at once; `--process-per-run`: Dagster's default
launcher instead) against bench/soak_location.py,
which is the project's code location with two deploy-time changes the bench prints: the relaunch
grace and backoff multiplied by `--relaunch-scale`, and the retry / reconcile schedules ticking every
minute instead of hourly.

For `--minutes M` it publishes `--rate` events per minute: new qualifying tokens, duplicates of
earlier ones with shuffled `firstFlowTimestamp`s (ISO and epoch-ms), below-threshold events,
poison, tokens with hostile URLs, tokens on a slow and on a failing platform. Half of the tokens have
their upstream `lastTransferAt` in the last closed hour (reconcile sees them too), half in the
current hour (only the stream records them). Meanwhile it injects, at seeded random moments it
prints first: SIGKILL of a run worker mid-step, a daemon restart, a Redis restart, a MongoDB
SIGKILL right after a tick wrote the inbox and right after a marker appeared, a broker node
restart, a SolTracker outage and a platform 5xx/429 burst (`--fault-rounds N`: the stream is cut
into N windows and every fault is injected once in each). Then every remaining duplicate time is
published and the bench waits (`--settle-minutes`) for the relaunch schedule to finish.

Checks, each printed as a figure (a breach makes the exit status 1):
- `soak_lost_total`: published qualifying tokens with neither a marker nor a `stuck` inbox entry
  carrying its reason (failures and the run that last failed);
- `soak_duplicated_total`: a second marker, link, content, account or venue for one identity;
- `soak_inconsistent_total`: markers whose `first_transfer_at` is not the earliest published time,
  links whose `first_transfer_at` copy differs from their marker's;
- `soak_leaked_locks`: `social-record:*` keys left in Redis; `soak_leaked_slots`: claimed or pending
  slots of the `paid_social_api` pool;
- `soak_inbox_unsettled`: inbox entries other than `stuck`;
- `soak_rss_growth_pct`: the largest growth of a long-lived process role's RSS (daemon, code server,
  SecantusDB, Redis, RabbitMQ, Celery workers) between the first and the last quarter (limit 20 %).

`--self-test` records a few tokens in process, then plants one breach per row (a deleted marker, a
duplicated link, a wrong copy, a lock key, a claimed slot, ...) and shows that each counter sees it;
its last line is `bench_self_test: N/N rows detect their breach`.

    .venv/bin/python bench/soak.py --minutes 5 [--rate 20] [--seed 19] [--run-workers K | --process-per-run]
    .venv/bin/python bench/soak.py --minutes 60 --rate 10 --fault-rounds 6   # every fault six times
    .venv/bin/python bench/soak.py --self-test
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import dagster as dg  # noqa: E402
import pika  # noqa: E402
import redis as redis_lib  # noqa: E402
import yaml  # noqa: E402
from pymongo import MongoClient  # noqa: E402

from bench.daemon_bench import spawn, stop  # noqa: E402
from bench.faults import SOLTRACKER_KEY, X_KEY, StandIns, address, duplicates  # noqa: E402
from bench.own_services import OwnRabbit, OwnRedis, OwnSecantus, start_own_rabbit  # noqa: E402
from bench.procs import command_line, processes, uptime_s  # noqa: E402
from socialrec_pipeline.defs.paid_pool import PAID_POOL  # noqa: E402
from socialrec_pipeline.recording.locks import TOKEN_LOCK_PREFIX  # noqa: E402
from socialrec_pipeline.sandbox.fixture_server import Reply  # noqa: E402
from socialrec_pipeline.sandbox.platforms import apify  # noqa: E402
from socialrec_pipeline.sandbox.soltracker import upstream_token  # noqa: E402
from socialrec_pipeline.stream.broker import EXCHANGE, ROUTING_KEY, declare_topology, queue_name_for  # noqa: E402
from socialrec_pipeline.stream.inbox import STUCK  # noqa: E402

#: Inbox states that still lead to a run without anyone's help.
OPEN_STATES = ("pending", "launched", "retrying")

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SHARED_RABBITMQ_URL = os.environ.get("RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/%2F")
RSS_LIMIT_PCT = 20.0
SLOW_HANDLE, FAILING_HANDLE = "slowkol", "failkol"
POISON = [
    b"{not json",
    b"[1, 2, 3]",
    json.dumps({"totalInvestedAlphaFinders": 9}).encode(),
    b"\xff\xfe garbage",
    b"[" * 30_000 + b"]" * 30_000,
]
FAULTS = (
    "worker_sigkill",
    "daemon_restart",
    "redis_restart",
    "mongo_kill_after_tick",
    "mongo_kill_after_marker",
    "broker_restart",
    "soltracker_outage",
    "platform_burst",
)


def fault_plan(rng: random.Random, seconds: float, rounds: int = 1) -> list[tuple[float, str]]:
    """Every fault once per round: the stream is cut into `rounds` equal windows and each fault
    lands at a random moment between 10 % and 80 % of each window (a long soak repeats them)."""
    window = seconds / rounds
    return sorted((r * window + rng.uniform(0.1, 0.8) * window, name) for r in range(rounds) for name in FAULTS)


def log(message: str) -> None:
    print(f"[{datetime.now(UTC):%H:%M:%S}] {message}", flush=True)


# -- the stand-ins, with time-bound outages ------------------------------------------------------


class SoakStandIns(StandIns):
    """bench/faults.py's stand-ins plus an outage of SolTracker and a 5xx/429 burst of X, each until
    a moment; a slow X profile and one that always fails."""

    def __init__(self, port_base: int) -> None:
        super().__init__(port_base)
        self.soltracker_down_until = 0.0
        self.x_burst_until = 0.0
        self._burst_calls = 0
        self.x_faults[SLOW_HANDLE] = self._slow
        self.x_faults[FAILING_HANDLE] = lambda request: Reply.json({"status": "error", "msg": "boom"}, status=502)

    def _slow(self, request):
        time.sleep(4)
        return Reply.json({"status": "error", "msg": "user not found"}, status=404)

    def _x_user(self, request):
        if time.monotonic() < self.x_burst_until:
            self._burst_calls += 1
            if self._burst_calls % 2:
                return Reply.json({"status": "error", "msg": "slow down"}, status=429, headers={"Retry-After": "1"})
            return Reply.json({"status": "error", "msg": "boom"}, status=503)
        return super()._x_user(request)

    def _soltracker_one(self, request):
        if time.monotonic() < self.soltracker_down_until:
            return Reply.json({"message": "upstream down"}, status=503)
        return super()._soltracker_one(request)


# -- what was published ---------------------------------------------------------------------------


@dataclass
class Planned:
    """A qualifying token: the times its events carry (the earliest is the upstream's too)."""

    address: str
    times: list[datetime]
    published: list[datetime] = field(default_factory=list)
    kind: str = "qualifying"
    reconcilable: bool = False

    @property
    def earliest(self) -> datetime:
        return min(self.times)


@dataclass
class Ledger:
    tokens: dict[str, Planned] = field(default_factory=dict)
    events: Counter = field(default_factory=Counter)

    def published_tokens(self) -> list[Planned]:
        return [p for p in self.tokens.values() if p.published]


# -- the audit ------------------------------------------------------------------------------------


@dataclass
class Audit:
    lost: int = 0
    stuck: int = 0
    pending: int = 0
    duplicated: int = 0
    inconsistent: int = 0
    leaked_locks: int = 0
    leaked_slots: int = 0
    inbox_unsettled: int = 0
    rss_growth_pct: float = 0.0
    recorded: int = 0
    details: list[str] = field(default_factory=list)

    def breaches(self) -> list[str]:
        found = [
            name
            for name in ("lost", "duplicated", "inconsistent", "leaked_locks", "leaked_slots", "inbox_unsettled")
            if getattr(self, name)
        ]
        if self.rss_growth_pct >= RSS_LIMIT_PCT:
            found.append("rss_growth_pct")
        return found


def pool_slots(instance: dg.DagsterInstance | None) -> int:
    """Claimed or pending slots of the paid pool (0 when the instance has no pool support)."""
    if instance is None or not instance.event_log_storage.supports_global_concurrency_limits:
        return 0
    info = instance.event_log_storage.get_concurrency_info(PAID_POOL)
    return len(info.claimed_slots) + len(info.pending_steps)


def rss_growth(samples: dict[str, list[tuple[float, int]]]) -> tuple[float, dict[str, float]]:
    """Per long-lived process (`role pid`): mean RSS over the last quarter of its samples against
    the first quarter, in %. Long-lived = sampled over at least half of the whole sampling window:
    of a process restarted by a fault, the longer-lived of the two may qualify."""
    stamps = [at for points in samples.values() for at, _ in points]
    if not stamps:
        return 0.0, {}
    window = max(stamps) - min(stamps)
    per_role: dict[str, float] = {}
    for role, points in samples.items():
        start, end = min(at for at, _ in points), max(at for at, _ in points)
        if not window or end - start < window / 2:
            continue  # not long-lived: restarted by a fault (or started late)
        quarter = (end - start) / 4
        first = [rss for at, rss in points if at <= start + quarter and rss > 0]
        last = [rss for at, rss in points if at >= end - quarter and rss > 0]
        if not first or not last:
            continue
        per_role[role] = 100.0 * (sum(last) / len(last) - sum(first) / len(first)) / (sum(first) / len(first))
    return (max(per_role.values()) if per_role else 0.0), per_role


def audit(
    db,
    redis_client: redis_lib.Redis,
    instance: dg.DagsterInstance | None,
    ledger: Ledger,
    rss_samples: dict[str, list[tuple[float, int]]],
) -> Audit:
    result = Audit()
    planned = ledger.published_tokens()
    addresses = [p.address for p in planned]
    markers = {d["address"]: d for d in db["tokens"].find({"address": {"$in": addresses}})}
    inbox = {d["token_address"]: d for d in db["record_inbox"].find({})}
    result.recorded = len(markers)
    for p in planned:
        if p.address in markers:
            continue
        entry = inbox.get(p.address)
        if entry and entry.get("state") == STUCK and entry.get("failures") and entry.get("last_failed_run_id"):
            result.stuck += 1
            continue
        if entry and entry.get("state") in OPEN_STATES:
            result.pending += 1  # still on its way (an unsettled inbox is a breach of its own)
            continue
        result.lost += 1
        state = entry.get("state") if entry else "no inbox entry"
        result.details.append(f"lost {p.address[:8]}… ({p.kind}; inbox: {state})")
    result.duplicated = duplicates(db)
    # Markers: the earliest published time; links: the marker's copy.
    for p in planned:
        marker = markers.get(p.address)
        if marker is None:
            continue
        earliest = min(p.published)
        at = marker.get("first_transfer_at")
        if at is not None and at.tzinfo is None:
            at = at.replace(tzinfo=UTC)
        if at != earliest:
            result.inconsistent += 1
            result.details.append(f"marker {p.address[:8]}… first_transfer_at {at} != earliest published {earliest}")
    link_times: dict[str, set] = defaultdict(set)
    for link in db["token_links"].find(
        {"token_address": {"$in": list(markers)}}, {"token_address": 1, "first_transfer_at": 1}
    ):
        if "first_transfer_at" in link:
            link_times[link["token_address"]].add(link["first_transfer_at"])
    for addr, times in link_times.items():
        marker_at = markers[addr].get("first_transfer_at")
        wrong = {t for t in times if t != marker_at}
        if wrong:
            result.inconsistent += 1
            copies = ", ".join(sorted(str(t)[:19] for t in wrong))
            result.details.append(
                f"links of {addr[:8]}… carry first_transfer_at {copies} != marker {str(marker_at)[:19]}"
            )
    result.leaked_locks = sum(1 for _ in redis_client.scan_iter(match=f"{TOKEN_LOCK_PREFIX}*", count=1000))
    result.leaked_slots = pool_slots(instance)
    unsettled = Counter(d.get("state") for d in inbox.values() if d.get("state") != STUCK)
    result.inbox_unsettled = sum(unsettled.values())
    if unsettled:
        result.details.append(f"inbox entries not stuck: {dict(unsettled)}")
    result.rss_growth_pct, _ = rss_growth(rss_samples)
    return result


def print_audit(result: Audit, per_role: dict[str, float]) -> None:
    for line in result.details[:30]:
        print(f"  {line}")
    if len(result.details) > 30:
        print(f"  … {len(result.details) - 30} more")
    print(
        "rss growth of long-lived processes (first → last quarter of each one's life): "
        + ", ".join(f"{k} {v:+.1f}%" for k, v in per_role.items())
    )
    print(f"soak_recorded_total: {result.recorded}")
    print(f"soak_stuck_total: {result.stuck}")
    print(f"soak_pending_total: {result.pending}")
    print(f"soak_inbox_unsettled: {result.inbox_unsettled}")
    print(f"soak_lost_total: {result.lost}")
    print(f"soak_duplicated_total: {result.duplicated}")
    print(f"soak_inconsistent_total: {result.inconsistent}")
    print(f"soak_leaked_locks: {result.leaked_locks}")
    print(f"soak_leaked_slots: {result.leaked_slots}")
    print(f"soak_rss_growth_pct: {result.rss_growth_pct:.1f}")


# -- processes ------------------------------------------------------------------------------------


def proc_table() -> list[tuple[int, int, int, str, float, int]]:
    """(pid, ppid, pgid, cmdline, age in s, rss bytes) of every live process."""
    now = uptime_s()
    return [
        (p.pid, p.ppid, p.pgid, " ".join(command_line(p.pid)), now - p.started_s, p.rss_bytes) for p in processes()
    ]


class Soak:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.rng = random.Random(args.seed)
        base = args.port_base
        self.redis = OwnRedis(base)
        self.mongo = OwnSecantus(base + 10)
        self.rabbit: OwnRabbit | None = None
        self.rabbit_url = SHARED_RABBITMQ_URL
        self.broker_note = ""
        self.stand_ins = SoakStandIns(base + 40)
        self.env_name = f"soak{uuid.uuid4().hex[:8]}"
        self.exchange = f"{EXCHANGE}.{self.env_name}"
        self.queue = queue_name_for(self.env_name)
        self.celery_queue = f"socialrec-runs-{self.env_name}"
        self.db_name = f"soak_{uuid.uuid4().hex[:6]}"
        self.home = Path(tempfile.mkdtemp(prefix="socialrec-soak-home-"))
        self.daemon: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []
        self.pgids: set[int] = set()  # every process group this bench started for Dagster
        self.ledger = Ledger()
        self.faults_ran: list[str] = []
        self.rss: dict[str, list[tuple[float, int]]] = defaultdict(list)
        self.stop_stream = threading.Event()
        self.sampling = threading.Event()
        self.lock = threading.Lock()
        self.now_hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
        self.stand_ins_started = False
        self.settled_in: float | None = None
        self.instance: dg.DagsterInstance | None = None

    # -- set-up -----------------------------------------------------------------------------------
    def start_services(self) -> None:
        self.redis.start()
        self.mongo.start()
        base = self.args.port_base
        self.rabbit, why_not = start_own_rabbit(base + 20, base + 21, nodename=f"soak{base}")
        if self.rabbit is not None:
            self.rabbit_url = self.rabbit.url
        self.broker_note = why_not or ""
        self.stand_ins.start()
        self.stand_ins_started = True
        connection = self._connection()
        try:
            connection.channel().exchange_declare(self.exchange, exchange_type="topic", durable=True)
            declare_topology(connection, self.queue, self.exchange)
        finally:
            connection.close()

    def env(self) -> dict[str, str]:
        url = self.stand_ins.url
        return {
            **os.environ,
            "DAGSTER_HOME": str(self.home),
            "MONGODB_URI": self.mongo.uri,
            "MONGODB_DATABASE": self.db_name,
            "SOCIALREC_ENV": self.env_name,
            "RABBITMQ_URL": self.rabbit_url,
            "RABBITMQ_EXCHANGE": self.exchange,
            "REDIS_URL": self.redis.url,
            "SOL_TRACKER_BASE_URL": url("soltracker"),
            "SOL_TRACKER_API_KEY": SOLTRACKER_KEY,
            "TWITTERAPI_BASE_URL": url("x"),
            "TWITTERAPI_API_KEY": X_KEY,
            "GITHUB_API_BASE_URL": url("github"),
            "TELEGRAM_BASE_URL": url("telegram"),
            "APIFY_BASE_URL": url("apify"),
            "APIFY_TOKEN": apify.DEMO_TOKEN,
            "REDDIT_BASE_URL": url("reddit"),
            "URLSCAN_BASE_URL": url("urlscan"),
            "SOCIALREC_RETRY_MIN_INTERVAL_MINUTES": "1",
            "SOCIALREC_RECONCILE_START": (self.now_hour - timedelta(hours=3)).strftime("%Y-%m-%d-%H:%M"),
            "SOAK_RELAUNCH_SCALE": str(self.args.relaunch_scale),
            "SOAK_SCHEDULE_MINUTES": str(self.args.schedule_minutes),
            "SOCIALREC_CELERY_BROKER_URL": self.rabbit_url,
            "SOCIALREC_CELERY_RUN_QUEUE": self.celery_queue,
            "SOCIALREC_CELERY_BACKEND_URL": self.redis.url,
        }

    def write_home(self) -> None:
        config = yaml.safe_load((ROOT / "dagster.yaml").read_text())
        if self.args.process_per_run:
            config["run_launcher"] = {"module": "dagster.core.launcher", "class": "DefaultRunLauncher"}
        (self.home / "dagster.yaml").write_text(yaml.safe_dump(config))
        (self.home / "workspace.yaml").write_text(yaml.safe_dump({
            "load_from": [{"python_file": {
                "relative_path": str(ROOT / "bench" / "soak_location.py"),
                "working_directory": str(ROOT),
                "location_name": "socialrec_pipeline",
            }}]
        }))  # fmt: skip

    def start_daemon(self) -> None:
        self.daemon = spawn([str(BIN / "dagster-daemon"), "run", "-w", str(self.home / "workspace.yaml")],
                            self.env(), self.home / f"daemon-{len(self.pgids)}.log", self.home)  # fmt: skip
        self.pgids.add(self.daemon.pid)

    def start_workers(self) -> None:
        for i in range(self.args.run_workers):
            env = {**self.env(), "SOCIALREC_RUN_WORKER_NAME": f"run{i}-{self.env_name}"}
            worker = spawn(["bash", str(ROOT / "scripts" / "run_workers.sh")], env, self.home / f"worker{i}.log", ROOT)
            self.workers.append(worker)
            self.pgids.add(worker.pid)

    # -- broker -----------------------------------------------------------------------------------
    def _connection(self) -> pika.BlockingConnection:
        params = pika.URLParameters(self.rabbit_url)
        params.socket_timeout = 5
        params.connection_attempts = 1
        return pika.BlockingConnection(params)

    def publish(self, body: bytes | dict, kind: str) -> bool:
        """One persistent, confirmed message; retried while the broker restarts (up to 90 s)."""
        if isinstance(body, dict):
            body = json.dumps(body).encode()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                connection = self._connection()
                try:
                    channel = connection.channel()
                    channel.confirm_delivery()
                    channel.basic_publish(self.exchange, ROUTING_KEY, body, pika.BasicProperties(delivery_mode=2))
                finally:
                    with contextlib.suppress(Exception):
                        connection.close()
                with self.lock:
                    self.ledger.events[kind] += 1
                return True
            except Exception:  # noqa: BLE001 - the broker is restarting: the producer tries again
                time.sleep(1)
        with self.lock:
            self.ledger.events[f"{kind} (not confirmed)"] += 1
        return False

    def queue_depth(self) -> int:
        try:
            connection = self._connection()
        except Exception:  # noqa: BLE001
            return -1
        try:
            return connection.channel().queue_declare(self.queue, passive=True).method.message_count
        finally:
            connection.close()

    # -- the stream -------------------------------------------------------------------------------
    def new_token(self, kind: str, **socials) -> Planned:
        base = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=30)
        times = sorted({base + timedelta(seconds=self.rng.randint(0, 1200)) for _ in range(3)})
        reconcilable = self.rng.random() < 0.5
        hour = self.now_hour - timedelta(hours=1) if reconcilable else self.now_hour
        last = hour + timedelta(minutes=self.rng.randint(0, 59))
        addr = address()
        self.stand_ins.soltracker.put(upstream_token(
            addr, symbol="SOAK", website="https://project.example/",
            first_flow=times[0].isoformat().replace("+00:00", "Z"),
            last_transfer=last.isoformat().replace("+00:00", "Z"), **socials,
        ))  # fmt: skip
        planned = Planned(addr, times, kind=kind, reconcilable=reconcilable)
        with self.lock:
            self.ledger.tokens[addr] = planned
        return planned

    def publish_time(self, planned: Planned, kind: str) -> None:
        """One of the token's remaining times, in a random order and form (ISO or epoch ms)."""
        left = [t for t in planned.times if t not in planned.published]
        if not left:
            left = planned.times
        at = self.rng.choice(left)
        stamp: str | int = (
            int(at.timestamp() * 1000) if self.rng.random() < 0.4 else at.isoformat().replace("+00:00", "Z")
        )
        if self.publish({"tokenAddress": planned.address, "totalInvestedAlphaFinders": 6,
                         "firstFlowTimestamp": stamp}, kind):  # fmt: skip
            planned.published.append(at)

    def one_event(self) -> None:
        roll = self.rng.random()
        sink = int(self.stand_ins.sink.url.rsplit(":", 1)[1])
        if roll < 0.35:
            self.publish_time(self.new_token("qualifying", twitter="x.com/kolguy", telegram="t.me/pumpchannel"),
                              "qualifying")  # fmt: skip
        elif roll < 0.60:
            with self.lock:
                open_tokens = [p for p in self.ledger.tokens.values() if p.published and len(p.published) < 3]
            if open_tokens:
                self.publish_time(self.rng.choice(open_tokens), "duplicate")
            else:
                self.publish_time(self.new_token("qualifying", twitter="x.com/kolguy"), "qualifying")
        elif roll < 0.70:
            self.publish({"tokenAddress": address(), "totalInvestedAlphaFinders": self.rng.randint(0, 4)},
                         "below_threshold")  # fmt: skip
        elif roll < 0.78:
            self.publish(self.rng.choice(POISON), "poison")
        elif roll < 0.86:
            hostile = self.rng.choice([
                f"http://127.0.0.1:{sink}/admin", f"https://x.com@127.0.0.1:{sink}/", "file:///etc/passwd",
                f"http://0x7f000001:{sink}/", "https://t.me/\u202eevil", "javascript:alert(1)",
            ])  # fmt: skip
            self.publish_time(self.new_token("hostile", twitter="x.com/kolguy", telegram=hostile), "hostile_url")
        elif roll < 0.93:
            self.publish_time(self.new_token("slow_platform", twitter=f"x.com/{SLOW_HANDLE}"), "slow_platform")
        else:
            self.publish_time(self.new_token("failing_platform", twitter=f"x.com/{FAILING_HANDLE}"),
                              "failing_platform")  # fmt: skip

    def stream(self, until: float) -> None:
        interval = 60.0 / self.args.rate
        next_at = time.monotonic()
        while not self.stop_stream.is_set() and time.monotonic() < until:
            self.one_event()
            next_at += interval
            self.stop_stream.wait(max(0.0, next_at - time.monotonic()))

    def flush_duplicates(self) -> None:
        """Every time not yet published goes out now, so the earliest time of each token is known."""
        with self.lock:
            left = [(p, t) for p in self.ledger.tokens.values() if p.published for t in p.times if t not in p.published]
        self.rng.shuffle(left)
        for planned, at in left:
            if self.publish({"tokenAddress": planned.address, "totalInvestedAlphaFinders": 6,
                             "firstFlowTimestamp": int(at.timestamp() * 1000)}, "duplicate (final)"):  # fmt: skip
                planned.published.append(at)

    # -- faults -----------------------------------------------------------------------------------
    def run_faults(self, plan: list[tuple[float, str]], started: float) -> None:
        for at, name in plan:
            if self.stop_stream.wait(max(0.0, started + at - time.monotonic())):
                return
            began = time.monotonic()
            try:
                what = getattr(self, f"fault_{name}")()
            except Exception as exc:  # noqa: BLE001 - a fault that could not be injected is reported
                what = f"not injected: {type(exc).__name__}: {exc}"
            line = f"+{began - started:5.0f}s {name}: {what} ({time.monotonic() - began:.1f} s)"
            self.faults_ran.append(line)
            log(f"fault {line}")

    def _wait_for(self, check: Callable[[], object], timeout: float, step: float = 0.05):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                found = check()
                if found:
                    return found
            time.sleep(step)
        return None

    def fault_worker_sigkill(self) -> str:
        def victim():
            mine = [r for r in proc_table() if r[2] in self.pgids]
            if not self.args.process_per_run:  # a pool child of a run worker runs the run
                started = self.instance is not None and self.instance.get_runs_count(
                    filters=dg.RunsFilter(job_name="record_token_job", statuses=[dg.DagsterRunStatus.STARTED])
                )
                parents = {w.pid for w in self.workers}
                return started and [r for r in mine if r[1] in parents and r[4] > 1.5]
            # The default launcher's code server starts each run in a multiprocessing child.
            return [r for r in mine if ("spawn_main" in r[3] or "execute_run" in r[3]) and r[4] > 1.5]

        found = self._wait_for(victim, 60, 0.2)
        if not found:
            return "no run worker was running within 60 s"
        pid = found[0][0]
        os.kill(pid, signal.SIGKILL)
        return f"SIGKILL run worker pid {pid} ({found[0][4]:.1f} s old)"

    def fault_daemon_restart(self) -> str:
        assert self.daemon is not None
        old = self.daemon.pid
        os.kill(old, signal.SIGTERM)  # the daemon only: its run workers keep running
        try:
            self.daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.kill(old, signal.SIGKILL)
            self.daemon.wait(timeout=10)
        self.start_daemon()
        return f"daemon pid {old} stopped (SIGTERM), new daemon pid {self.daemon.pid}"

    def fault_redis_restart(self) -> str:
        self.redis.kill()
        time.sleep(3)
        self.redis.start()
        return "Redis SIGKILL, 3 s down, started empty (no persistence)"

    def _mongo_kill_when(self, check: Callable[[], object], what: str) -> str:
        client = MongoClient(self.mongo.uri, serverSelectionTimeoutMS=2000)
        try:
            found = self._wait_for(lambda: check(client[self.db_name]), 90)
        finally:
            client.close()
        if not found:
            return f"nothing seen within 90 s ({what}); not injected"
        self.mongo.kill()
        time.sleep(3)
        self.mongo.start()
        return f"SecantusDB SIGKILL right after {what} {found}, 3 s down"

    def fault_mongo_kill_after_tick(self) -> str:
        before = set()
        client = MongoClient(self.mongo.uri, serverSelectionTimeoutMS=2000)
        with contextlib.suppress(Exception):
            before = {d["token_address"] for d in client[self.db_name]["record_inbox"].find({}, {"token_address": 1})}
        client.close()
        planned = self.new_token("qualifying", twitter="x.com/kolguy")
        self.publish_time(planned, "qualifying")

        def written(db):
            doc = db["record_inbox"].find_one({"token_address": planned.address}, {"token_address": 1})
            return doc and doc["token_address"][:8] + "…"

        return self._mongo_kill_when(written, f"a tick wrote the inbox ({len(before)} entries before)")

    def fault_mongo_kill_after_marker(self) -> str:
        client = MongoClient(self.mongo.uri, serverSelectionTimeoutMS=2000)
        try:
            known = {d["address"] for d in client[self.db_name]["tokens"].find({}, {"address": 1})}
        finally:
            client.close()

        def new_marker(db):
            for doc in db["tokens"].find({}, {"address": 1}):
                if doc["address"] not in known:
                    return doc["address"][:8] + "…"
            return None

        return self._mongo_kill_when(new_marker, "a new marker appeared")

    def fault_broker_restart(self) -> str:
        if self.rabbit is None:
            return f"skipped: {self.broker_note}"
        self.rabbit.stop()
        self.rabbit.start()
        return f"own RabbitMQ node {self.rabbit.node} stopped and started"

    def fault_soltracker_outage(self) -> str:
        self.stand_ins.soltracker_down_until = time.monotonic() + 30
        return "SolTracker answers 503 for 30 s"

    def fault_platform_burst(self) -> str:
        self.stand_ins.x_burst_until = time.monotonic() + 30
        return "X answers 429/503 alternately for 30 s"

    # -- watching ---------------------------------------------------------------------------------
    def sample_rss(self) -> None:
        while not self.sampling.is_set():
            table = proc_table()
            workers = {w.pid for w in self.workers}
            now = time.monotonic()
            for pid, _ppid, pgid, cmd, _age, rss in table:
                role = None
                if pgid in self.pgids and "dagster-daemon" in cmd:
                    role = "daemon"
                elif pgid in self.pgids and " api grpc" in cmd:
                    role = "code server"
                elif pid in workers:
                    role = "celery worker"
                elif self.mongo.pid and pid == self.mongo.pid:
                    role = "secantusdb"
                elif self.redis.pid and pid == self.redis.pid:
                    role = "redis"
                elif self.rabbit is not None and self.rabbit.pid and pgid == self.rabbit.pid and "beam" in cmd:
                    role = "rabbitmq"
                if role is not None:
                    self.rss[f"{role} {pid}"].append((now, rss))
            self.sampling.wait(5)

    def settled(self, instance: dg.DagsterInstance) -> str | None:
        """None when nothing is left to do, else what is still going on."""
        client = MongoClient(self.mongo.uri, serverSelectionTimeoutMS=3000)
        try:
            states = Counter(d["state"] for d in client[self.db_name]["record_inbox"].find({}, {"state": 1}))
        finally:
            client.close()
        open_states = {k: v for k, v in states.items() if k in ("pending", "launched", "retrying")}
        active = instance.get_runs_count(
            filters=dg.RunsFilter(job_name="record_token_job", statuses=[
                dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED,
                dg.DagsterRunStatus.NOT_STARTED])
        )  # fmt: skip
        depth = self.queue_depth()
        if open_states or active or depth:
            return f"inbox {open_states}, active runs {active}, queue {depth}"
        return None

    # -- the whole soak ---------------------------------------------------------------------------
    def run(self) -> int:
        args = self.args
        stream_seconds = args.minutes * 60
        plan = fault_plan(self.rng, stream_seconds, args.fault_rounds)
        print(f"seed {args.seed}; stream {args.minutes:g} min at {args.rate:g} events/min; settle up to "
              f"{args.settle_minutes:g} min")  # fmt: skip
        launcher = "a process per run" if args.process_per_run else f"run workers x{args.run_workers} (2 runs each)"
        print(f"run launcher: {launcher}; code location bench/soak_location.py (the project's definitions)")
        grace, steps = 300 * args.relaunch_scale, [m * 60 * args.relaunch_scale for m in (1, 5, 15, 60, 60, 60)]
        print(f"deploy-time settings of this bench: relaunch grace and backoff x{args.relaunch_scale:g} "
              f"(grace {grace:.0f} s, steps {', '.join(f'{s:.0f}' for s in steps)} s); retry (error) and "
              f"reconcile (last closed hour) schedules every {args.schedule_minutes} min; "
              "SOCIALREC_RETRY_MIN_INTERVAL_MINUTES=1")
        print("fault schedule (seconds after the stream starts):")
        for at, name in plan:
            print(f"  +{at:5.0f}s {name}")
        try:
            self.start_services()
            print(f"broker: own RabbitMQ node {self.rabbit.node}" if self.rabbit else
                  f"broker: shared, exchange and queues of the bench's own ({self.broker_note})")  # fmt: skip
            self.write_home()
            # The instance's storage is created here, before any Dagster process starts: a daemon
            # and its code server creating a fresh SQLite storage at once can leave two alembic heads.
            os.environ["DAGSTER_HOME"] = str(self.home)
            instance = dg.DagsterInstance.get()
            instance.get_runs(limit=1)
            self.instance = instance
            if not args.process_per_run:
                self.start_workers()
            self.start_daemon()
            warm = self.new_token("warm-up", twitter="x.com/kolguy")
            self.publish_time(warm, "warm-up")
            client = MongoClient(self.mongo.uri, serverSelectionTimeoutMS=5000)
            started = time.monotonic()
            def warm_recorded():
                if self.daemon is None or self.daemon.poll() is not None:
                    raise SystemExit(f"the daemon exited; see {self.home}/daemon-0.log")
                return client[self.db_name]["tokens"].find_one({"address": warm.address})

            if not self._wait_for(warm_recorded, 300, 1):
                raise SystemExit(f"warm-up token never recorded; see {self.home}/daemon-0.log")
            client.close()
            log(f"warm-up recorded after {time.monotonic() - started:.0f} s; stream starts")
            sampler = threading.Thread(target=self.sample_rss, daemon=True)
            sampler.start()
            load_from = os.getloadavg()
            started = time.monotonic()
            faults = threading.Thread(target=self.run_faults, args=(plan, started), daemon=True)
            faults.start()
            self.stream(started + stream_seconds)
            faults.join(timeout=180)
            self.stop_stream.set()
            self.flush_duplicates()
            log(f"stream over ({sum(self.ledger.events.values())} events); settling")
            settle_from = time.monotonic()
            deadline = settle_from + args.settle_minutes * 60
            why: str | None = "not checked yet"
            quiet = 0
            while time.monotonic() < deadline:
                time.sleep(10)
                try:
                    why = self.settled(instance)
                except Exception as exc:  # noqa: BLE001
                    why = f"cannot tell ({type(exc).__name__})"
                quiet = quiet + 1 if why is None else 0
                if quiet >= 3:  # 30 s with nothing open, no active run, empty queue
                    break
            self.settled_in = time.monotonic() - settle_from if why is None else None
            log(f"settled after {self.settled_in:.0f} s" if why is None else f"settle timed out: {why}")
            load_to = os.getloadavg()
            self.sampling.set()
            sampler.join(timeout=10)
            self.stop_dagster()
            client = MongoClient(self.mongo.uri, tz_aware=True, serverSelectionTimeoutMS=10_000)
            db = client[self.db_name]
            result = audit(db, redis_lib.Redis.from_url(self.redis.url), instance, self.ledger, self.rss)
            runs = Counter(
                (r.job_name, r.status.value) for r in instance.get_runs(filters=dg.RunsFilter(), limit=100_000)
            )
            instance.dispose()
            client.close()
        finally:
            self.stop_stream.set()
            self.sampling.set()
            self.stop_dagster()
            self.cleanup()
        print(f"load average before: {' '.join(f'{x:.2f}' for x in load_from)}, "
              f"after: {' '.join(f'{x:.2f}' for x in load_to)} (2 cores, shared)")  # fmt: skip
        print("events published: " + ", ".join(f"{k} {v}" for k, v in sorted(self.ledger.events.items())))
        kinds = Counter(p.kind for p in self.ledger.published_tokens())
        print(f"qualifying tokens published: {sum(kinds.values())} {dict(kinds)}; "
              f"{sum(p.reconcilable for p in self.ledger.published_tokens())} also visible to reconcile")  # fmt: skip
        print("runs: " + ", ".join(f"{job} {status} {n}" for (job, status), n in sorted(runs.items())))
        print("faults run:")
        for line in self.faults_ran:
            print(f"  {line}")
        _, per_role = rss_growth(self.rss)
        print_audit(result, per_role)
        breaches = result.breaches()
        print(f"soak_settled: {'yes' if self.settled_in is not None else 'no'}")
        if self.settled_in is None:
            breaches.append("not settled")
        print(f"soak_breaches: {', '.join(breaches) if breaches else 'none'}")
        return 1 if breaches else 0

    def stop_dagster(self) -> None:
        for proc in [*self.workers, *([self.daemon] if self.daemon else [])]:
            with contextlib.suppress(Exception):
                stop(proc)
        for pgid in self.pgids:  # what an earlier daemon left (run workers of a restarted daemon)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
        self.workers, self.daemon = [], None

    def cleanup(self) -> None:
        with contextlib.suppress(Exception):
            connection = self._connection()
            channel = connection.channel()
            for queue in (self.queue, self.queue + ".dlq", self.celery_queue):
                channel.queue_delete(queue)
            channel.exchange_delete(self.exchange)
            channel.exchange_delete(self.celery_queue)  # Celery's, of the queue's name
            connection.close()
        if self.stand_ins_started:
            self.stand_ins.stop()
        for service in (self.rabbit, self.mongo, self.redis):
            if service is not None:
                service.cleanup()
        if not self.args.keep_home:
            shutil.rmtree(self.home, ignore_errors=True)


# -- self-test ------------------------------------------------------------------------------------


def self_test(args: argparse.Namespace) -> int:
    """Record a few tokens for real (in process), audit them clean, then plant one breach per row."""
    from socialrec_pipeline.defs.record_token import record_token_job
    from socialrec_pipeline.defs.resources import RecordingSettingsResource
    from socialrec_pipeline.defs.token_flow import run_request
    from socialrec_pipeline.sandbox.resources import stand_in_resources
    from socialrec_pipeline.stream.intake import Launch

    base = args.port_base
    rows: list[tuple[str, bool, str]] = []
    with OwnRedis(base) as own_redis, OwnSecantus(base + 10) as own_mongo, contextlib.ExitStack() as stack:
        stand_ins = SoakStandIns(base + 40)
        stand_ins.start()
        stack.callback(stand_ins.stop)
        home = Path(tempfile.mkdtemp(prefix="socialrec-soak-selftest-"))
        stack.callback(shutil.rmtree, home, True)
        (home / "dagster.yaml").write_text(yaml.safe_dump({"concurrency": {"pools": {"default_limit": 2}},
                                                           "telemetry": {"enabled": False}}))  # fmt: skip
        instance = dg.DagsterInstance.from_config(str(home))
        stack.callback(instance.dispose)
        db_name = f"soak_selftest_{uuid.uuid4().hex[:6]}"
        resources = stand_in_resources(
            stand_ins.url, mongo_uri=own_mongo.uri, database=db_name, redis_url=own_redis.url,
            soltracker_key=SOLTRACKER_KEY, x_key=X_KEY, recording=RecordingSettingsResource(),
        )  # fmt: skip
        ledger = Ledger()
        base_at = datetime(2026, 11, 29, 21, 0, tzinfo=UTC)
        for i in range(args.self_test_tokens):
            addr = address()
            times = [base_at + timedelta(minutes=i), base_at + timedelta(minutes=30 + i)]
            stand_ins.soltracker.put(upstream_token(addr, website="https://project.example/", twitter="x.com/kolguy",
                                                    first_flow=times[0].isoformat()))  # fmt: skip
            ledger.tokens[addr] = Planned(addr, times, published=list(times))
            request = run_request(Launch(addr, "selftest", 0, "SOAK", times[0]), sandbox=False)
            result = record_token_job.execute_in_process(run_config=request.run_config, resources=resources,
                                                         instance=instance, raise_on_error=False)  # fmt: skip
            if not result.success:
                raise SystemExit(f"self-test: recording token {i} failed")
        client = MongoClient(own_mongo.uri, tz_aware=True, serverSelectionTimeoutMS=5000)
        stack.callback(client.close)
        db = client[db_name]
        redis_client = redis_lib.Redis.from_url(own_redis.url)
        flat = {"daemon": [(float(i), 100_000_000) for i in range(8)]}

        def check(name: str, counter: str, plant: Callable[[], object], undo: Callable[[], object], rss=flat) -> None:
            before = getattr(audit(db, redis_client, instance, ledger, flat), counter)
            plant()
            try:
                found = audit(db, redis_client, instance, ledger, rss)
            finally:
                undo()
            after = getattr(found, counter)
            detected = after > before and counter in found.breaches()
            rows.append((name, detected, f"{counter} {before} -> {after}"))

        clean = audit(db, redis_client, instance, ledger, flat)
        rows.append(("clean recording: no breach", not clean.breaches(),
                     f"breaches {clean.breaches() or 'none'}; {clean.details[:3]}"))  # fmt: skip
        first, second = list(ledger.tokens)[:2]
        marker = db["tokens"].find_one({"address": first})
        link = db["token_links"].find_one({"token_address": second})
        check("a deleted marker", "lost",
              lambda: db["tokens"].delete_one({"_id": marker["_id"]}), lambda: db["tokens"].insert_one(marker))
        check("a stuck entry without a reason", "lost",
              lambda: (db["tokens"].delete_one({"_id": marker["_id"]}),
                       db["record_inbox"].insert_one({"token_address": first, "state": STUCK, "failures": 0})),
              lambda: (db["tokens"].insert_one(marker), db["record_inbox"].delete_many({"token_address": first})))
        copy = {k: v for k, v in link.items() if k != "_id"}
        check("a duplicated link", "duplicated",
              lambda: db["token_links"].insert_one(dict(copy)),
              lambda: db["token_links"].delete_many({**copy, "_id": {"$ne": link["_id"]}}))
        later = datetime(2026, 12, 1, tzinfo=UTC)
        check("a link with a later first_transfer_at copy", "inconsistent",
              lambda: db["token_links"].update_one({"_id": link["_id"]}, {"$set": {"first_transfer_at": later}}),
              lambda: db["token_links"].update_one({"_id": link["_id"]},
                                                   {"$set": {"first_transfer_at": link.get("first_transfer_at")}}))
        check("a marker that kept a later first_transfer_at", "inconsistent",
              lambda: db["tokens"].update_one({"_id": marker["_id"]}, {"$set": {"first_transfer_at": later}}),
              lambda: db["tokens"].update_one({"_id": marker["_id"]},
                                              {"$set": {"first_transfer_at": marker["first_transfer_at"]}}))
        check("a leftover token lock", "leaked_locks",
              lambda: redis_client.set(f"{TOKEN_LOCK_PREFIX}{first}", "dead-owner"),
              lambda: redis_client.delete(f"{TOKEN_LOCK_PREFIX}{first}"))
        storage = instance.event_log_storage
        run_id = str(uuid.uuid4())
        check("a claimed paid-pool slot", "leaked_slots",
              lambda: (storage.set_concurrency_slots(PAID_POOL, 2),
                       storage.claim_concurrency_slot(PAID_POOL, run_id, "record_paid_url")),
              lambda: storage.free_concurrency_slots_for_run(run_id))
        check("a pending inbox entry of a recorded token", "inbox_unsettled",
              lambda: db["record_inbox"].insert_one({"token_address": first, "state": "pending"}),
              lambda: db["record_inbox"].delete_many({"token_address": first}))
        growing = {"daemon": [(float(i), 100_000_000 + i * 10_000_000) for i in range(8)]}
        check("a process whose RSS grows 60 %", "rss_growth_pct", lambda: None, lambda: None, rss=growing)
    passed = sum(1 for _, ok, _ in rows if ok)
    for name, ok, what in rows:
        print(f"{'ok  ' if ok else 'MISS'} {name:48} {what}")
    print(f"bench_self_test: {passed}/{len(rows)} rows detect their breach")
    return 0 if passed == len(rows) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=5)
    parser.add_argument("--rate", type=float, default=12, help="events per minute")
    parser.add_argument("--schedule-minutes", type=int, default=2, help="retry / reconcile schedule interval")
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--settle-minutes", type=float, default=8)
    parser.add_argument("--fault-rounds", type=int, default=1, help="inject every fault this many times, spread")
    parser.add_argument("--relaunch-scale", type=float, default=0.01, help="relaunch grace and backoff multiplier")
    parser.add_argument("--run-workers", type=int, default=1, help="warm run workers (scripts/run_workers.sh)")
    parser.add_argument("--process-per-run", action="store_true", help="Dagster's default launcher instead")
    parser.add_argument("--port-base", type=int, default=int(os.environ.get("SOCIALREC_SOAK_PORT_BASE", "21700")))
    parser.add_argument("--keep-home", action="store_true", help="keep DAGSTER_HOME (logs) afterwards")
    parser.add_argument("--self-test", action="store_true")
    parser.add_argument("--self-test-tokens", type=int, default=2)
    args = parser.parse_args()
    if args.fault_rounds < 1:
        parser.error("--fault-rounds must be at least 1")
    if args.self_test:
        return self_test(args)
    return Soak(args).run()


if __name__ == "__main__":
    sys.exit(main())
