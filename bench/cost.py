"""Paid calls on every path, counted at the paid provider's host.

Drives each path that can reach a paid platform against loopback stand-ins (SolTracker, X,
Telegram and a short-link host whose redirects the guarded resolver follows, on one server) with
the real Redis, RabbitMQ and MongoDB. The paid provider (Apify) has a server of its own: the
meter counts every request that reaches it (any method, path or token) and every connection that
sent it something else (reported apart), so a call by another route, actor or key is counted too.

while paid is off (each must be 0):
  - stream, direct paid URLs: token.flow events → `token_flow_sensor` tick → its `record_token_job` runs;
  - stream, short links to paid targets (`t.co` → TikTok, reddit share → Instagram, `vm.tiktok.com`);
  - reconcile: `reconcile_job` for the hour of a token only the upstream knows;
  - retry of `skipped_paid`: `retry_job` over a token recorded with paid off;
  - metric refresh: `metric_refresh_job` over links to paid objects (recorded beforehand with paid on),
    their series back-dated past the minimum interval so they are due (the row shows the candidates,
    and a control run with paid on shows the calls it would count);
  - run config at launch: for every job of the code location (`socialrec_pipeline.defs.definitions`,
    bound to its environment as deployed), every field of its run-config schema under
    `resources.*.config` and `ops.*.config`, one launch each with a value that would open the gate or
    point the field at the paid host (the endpoint's URL moved to the meter, flags true, numbers
    huge); a launch the schema refuses starts nothing, an accepted one runs and is metered;
  - run tags at launch: for every environment variable the code location reads, a
    `dagster-k8s/config` tag setting it; the launch gate's `tag_refusals` (what the run coordinator
    refuses before queueing), else dagster-k8s's own `K8sContainerContext.create_for_run` with the
    run launcher of deploy/helm-values.yaml says what the run pod would receive; a run with that
    environment is metered.

with paid on and a provider that runs out of credit after its first call: two `record_token_job`
runs in flight at once (4 paid URLs each, one behind a short link); the calls that reached the
provider after its first out-of-credit answer, and how many of those had already passed the
credit guard before it was set (in flight).

    .venv/bin/python bench/cost.py [--jobs a,b] [--fields prefix,prefix] [--env-names A,B]
    .venv/bin/python bench/cost.py --self-test [--jobs record_token_job] [--fields resources.recording]

Exits 1 when any row counted a call. `--self-test` injects, per row, the breach the row exists for
(its runs secretly paid on; an opened `recording.enable_paid` field; no launch gate and a launcher
that passes tag env through) and exits non-zero unless every row counts it; last line
`bench_self_test: N/N rows detect their breach`. Needs Redis (REDIS_URL), RabbitMQ (RABBITMQ_URL)
and MongoDB (MONGODB_URI, else an embedded SecantusDB). Last line otherwise: `paid_calls_while_off: N`.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import re
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit, urlunsplit

# WINDOW must be a reconcile partition: without a setting they start on the day the code loads.
os.environ.setdefault("SOCIALREC_RECONCILE_START", "2026-11-01-00:00")
# A run whose resource was pointed elsewhere fails; its step retries need not wait.
os.environ.setdefault("SOCIALREC_STEP_RETRY_DELAY_S", "0")

import dagster as dg  # noqa: E402
import yaml  # noqa: E402

from socialrec_pipeline.defs.metric_refresh import metric_refresh_job  # noqa: E402
from socialrec_pipeline.defs.reconcile import reconcile_job, reconcile_window  # noqa: E402
from socialrec_pipeline.defs.record_token import record_token_job  # noqa: E402
from socialrec_pipeline.defs.resources import (  # noqa: E402
    MongoResource,
    RabbitMQResource,
    RecordingSettingsResource,
    paid_account_scope,
)
from socialrec_pipeline.defs.retry import retry_job  # noqa: E402
from socialrec_pipeline.defs.token_flow import token_flow_sensor  # noqa: E402
from socialrec_pipeline.recording.locks import PaidCreditGuard, open_redis  # noqa: E402
from socialrec_pipeline.recording.settings import ENV_NAMES, RecordingSettings  # noqa: E402
from socialrec_pipeline.sandbox.fixture_server import FixtureServer  # noqa: E402
from socialrec_pipeline.sandbox.platforms import apify as apify_fixtures  # noqa: E402
from socialrec_pipeline.sandbox.platforms import telegram as telegram_fixtures  # noqa: E402
from socialrec_pipeline.sandbox.platforms.x import demo_fixtures  # noqa: E402
from socialrec_pipeline.sandbox.resources import stand_in_resources  # noqa: E402
from socialrec_pipeline.sandbox.shortlinks import register_short_link, short_links_resolved_by  # noqa: E402
from socialrec_pipeline.sandbox.soltracker import SolTrackerFixture, upstream_token  # noqa: E402
from socialrec_pipeline.store.client import open_client, open_database  # noqa: E402
from socialrec_pipeline.stream.broker import (  # noqa: E402
    EXCHANGE,
    ROUTING_KEY,
    dead_letter_queue,
    declare_topology,
    open_connection,
    queue_name_for,
)

ROOT = Path(__file__).resolve().parent.parent
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
RABBITMQ_URL = os.environ.get("RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/%2F")
ST_KEY = "bench-soltracker-key"
WINDOW = "2026-11-30-02:00"
_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
VIDEO = "https://www.tiktok.com/@moonkol/video/{}"
POST = "https://www.instagram.com/p/C1aBcDeFgHi/"
JOBS = {
    "record_token_job": record_token_job,
    "reconcile_job": reconcile_job,
    "retry_job": retry_job,
    "metric_refresh_job": metric_refresh_job,
}
K8S_CONFIG_TAG = "dagster-k8s/config"
#: A text field or variable whose name holds one of these is a switch: a launch tries "true".
FLAG_WORDS = ("enable", "paid", "force", "allow")


def job_with(name: str, resources: dict) -> dg.JobDefinition:
    """One of JOBS bound to `resources`, as the code location resolves it (`reconcile_job` is an
    asset job: it runs only resolved together with its asset)."""
    defs = dg.Definitions(assets=[reconcile_window], jobs=list(JOBS.values()), resources=resources)
    return defs.resolve_job_def(name)


def address() -> str:
    import secrets

    return "".join(secrets.choice(_BASE58) for _ in range(44))


def resources(url_of: Callable[[str], str], uri: str, db: str, *, paid: bool) -> dict:
    recording = RecordingSettingsResource(enable_paid="true" if paid else "false", retry_min_interval_minutes="0")
    return stand_in_resources(
        url_of, mongo_uri=uri, database=db, redis_url=REDIS_URL,
        soltracker_key=ST_KEY, x_key="bench-x-key", recording=recording,
    )  # fmt: skip


class Meter:
    """The paid provider's host: a server of its own; every HTTP request that reaches it counts, any
    method, path or token. Connections that sent no HTTP request (a Mongo, Redis or AMQP client
    pointed at it) are reported apart: clients left open by a failed run keep reconnecting, so they
    cannot be told apart per launch, and they carry no paid call."""

    def __init__(self) -> None:
        self.server = FixtureServer().start()
        self.apify = apify_fixtures.MeteredApify().register(self.server)

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def count(self) -> int:
        return len(self.server.requests)

    def other_connections(self) -> int:
        return self.server.connections_without_request

    def stop(self) -> None:
        self.server.stop()


class Bench:
    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.server = FixtureServer().start()
        self.meter = Meter()
        self.apify = self.meter.apify
        self.soltracker = SolTrackerFixture([], api_key=ST_KEY)
        self.soltracker.install(self.server)
        demo_fixtures().register(self.server)
        register_short_link(self.server, "/TkVid01", VIDEO.format("7350000000000000001"))
        register_short_link(self.server, "/r/solana/s/IgPost01", POST)
        telegram_fixtures.register(self.server)  # catch-all: last
        self.guard = PaidCreditGuard(
            open_redis(REDIS_URL), scope=paid_account_scope(self.meter.url, apify_fixtures.DEMO_TOKEN)
        )
        self.client = open_client(uri)
        self.db = open_database(self.client, f"bench_cost_{uuid.uuid4().hex[:6]}")
        self.instance = dg.DagsterInstance.ephemeral()
        self.tmp = tempfile.TemporaryDirectory(prefix="bench-cost-")
        #: Meter counts a row made outside what it measures (its set-up, its control run).
        self.control_calls = 0
        #: What a launch sets a plain text field to (a database or queue name it may create: dropped on close).
        self.launch_value = f"benchlaunch{uuid.uuid4().hex[:6]}"

    def close(self) -> None:
        self.guard.clear()
        self.client.drop_database(self.db.name)
        self.client.drop_database(self.launch_value)
        self.instance.dispose()
        self.server.stop()
        self.meter.stop()
        self.tmp.cleanup()

    def url_of(self, service: str) -> str:
        return self.meter.url if service == "apify" else self.server.url

    def res(self, *, paid: bool) -> dict:
        res = resources(self.url_of, self.uri, self.db.name, paid=paid)
        res["generators"] = short_links_resolved_by(res["generators"], self.server.url)
        return res

    def token(self, **fields) -> str:
        a = address()
        self.soltracker.put(upstream_token(a, **fields))
        return a

    def record(self, a: str, *, paid: bool) -> dg.ExecuteInProcessResult:
        return record_token_job.execute_in_process(
            run_config={"ops": {"prepare": {"config": {"token_address": a}}}},
            resources=self.res(paid=paid),
            instance=self.instance,
        )

    def deployment_env(self) -> dict[str, str]:
        """The code location's environment as deployed against the stand-ins, paid off."""
        return {
            "MONGODB_URI": self.uri, "MONGODB_DATABASE": self.db.name, "REDIS_URL": REDIS_URL,
            "RABBITMQ_URL": RABBITMQ_URL, "SOCIALREC_ENV": f"benchcost{self.db.name[-6:]}",
            "RABBITMQ_EXCHANGE": f"{EXCHANGE}.benchcost{self.db.name[-6:]}",
            "SOL_TRACKER_BASE_URL": self.server.url, "SOL_TRACKER_API_KEY": ST_KEY,
            "TWITTERAPI_BASE_URL": self.server.url, "TWITTERAPI_API_KEY": "bench-x-key",
            "GITHUB_API_BASE_URL": self.server.url, "TELEGRAM_BASE_URL": self.server.url,
            "REDDIT_BASE_URL": self.server.url, "URLSCAN_BASE_URL": self.server.url,
            "APIFY_BASE_URL": self.meter.url, "APIFY_TOKEN": apify_fixtures.DEMO_TOKEN,
            "SOCIALREC_ENABLE_PAID": "false", "SOCIALREC_RETRY_MIN_INTERVAL_MINUTES": "0",
        }  # fmt: skip


@contextlib.contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


# -- the paths --------------------------------------------------------------------------------------


def stream(bench: Bench, tokens: list[str], *, paid: bool) -> str:
    """Publish one qualifying token.flow event per token, tick the sensor, run what it requests."""
    env = f"bench{uuid.uuid4().hex[:8]}"
    queue, exchange = queue_name_for(env), f"{EXCHANGE}.{env}"
    connection = open_connection(RABBITMQ_URL)
    channel = declare_topology(connection, queue, exchange)
    try:
        for a in tokens:
            body = {
                "tokenAddress": a,
                "totalInvestedAlphaFinders": 6,
                "firstFlowTimestamp": "2026-11-29T21:14:03.512Z",
                "symbol": "BENCH",
                "afGroupId": "g-main",
                "flowAt": 1796245200000,
            }
            channel.basic_publish(exchange, ROUTING_KEY, json.dumps(body).encode())
        sensor_resources = {
            "mongo": MongoResource(uri=bench.uri, database=bench.db.name),
            "rabbitmq": RabbitMQResource(url=RABBITMQ_URL, env=env, exchange=exchange),
            "recording": RecordingSettingsResource(enable_paid="false"),
        }
        requests = []
        deadline = time.monotonic() + 30
        while len(requests) < len(tokens) and time.monotonic() < deadline:
            result = token_flow_sensor(dg.build_sensor_context(instance=bench.instance, resources=sensor_resources))
            requests += list(result.run_requests or [])
        statuses: dict[str, int] = {}
        for request in requests:
            run = record_token_job.execute_in_process(
                run_config=request.run_config,
                resources=bench.res(paid=paid),
                instance=bench.instance,
                tags=request.tags,
            )
            assert run.success
            for status, n in run.output_for_node("write_marker").items():
                statuses[status] = statuses.get(status, 0) + n
        return f"{len(requests)} runs, URL statuses {dict(sorted(statuses.items()))}"
    finally:
        for name in (queue, dead_letter_queue(queue)):
            channel.queue_delete(name)
        channel.exchange_delete(exchange)
        connection.close()


def attempts(bench: Bench, tokens: list[str]) -> int:
    return sum(u["attempts"] for a in tokens for u in bench.db["tokens"].find_one({"address": a})["social_urls"])


def row_stream_direct(bench: Bench, paid: bool, opts: argparse.Namespace) -> str:
    direct = [
        bench.token(discord=VIDEO.format("7350000000000000001"), website=POST, last_transfer="2026-11-30T02:10:00Z"),
        bench.token(twitter="https://www.instagram.com/moonproject", last_transfer="2026-11-30T02:20:00Z"),
    ]
    return stream(bench, direct, paid=paid)


def row_stream_short(bench: Bench, paid: bool, opts: argparse.Namespace) -> str:
    short = [
        bench.token(
            twitter="https://t.co/TkVid01",
            telegram="https://vm.tiktok.com/ZMabc123/",
            discord="https://www.reddit.com/r/solana/s/IgPost01",
        )
    ]
    detail = stream(bench, short, paid=paid)
    return (
        f"{detail}; attempts counted {attempts(bench, short)}; short-link requests "
        f"t.co {len(bench.server.calls('/TkVid01'))}, vm.tiktok.com {len(bench.server.calls('/ZMabc123'))}"
    )


def row_reconcile(bench: Bench, paid: bool, opts: argparse.Namespace) -> str:
    # A token the stream missed: only the upstream knows it, so only the reconcile records it.
    bench.token(
        discord=VIDEO.format("7350000000000000002"),
        twitter="https://t.co/TkVid01",
        last_transfer="2026-11-30T02:40:00Z",
    )
    run = job_with("reconcile_job", bench.res(paid=paid)).execute_in_process(
        partition_key=WINDOW, instance=bench.instance
    )
    # an asset step: its counts are the materialization's metadata, not an output
    (materialization,) = run.asset_materializations_for_node("reconcile_window")
    md = {k: getattr(v, "value", v) for k, v in materialization.metadata.items()}
    return "window " + ", ".join(f"{k} {v}" for k, v in md.items())


def row_retry(bench: Bench, paid: bool, opts: argparse.Namespace) -> str:
    # set-up, paid off (not metered: nothing reaches the paid host): a token whose URLs are skipped_paid
    skipped = bench.token(discord=VIDEO.format("7350000000000000003"), website=POST)
    assert bench.record(skipped, paid=False).success
    run = retry_job.execute_in_process(
        partition_key="skipped_paid", resources=bench.res(paid=paid), instance=bench.instance
    )
    return f"URL statuses {run.output_for_node('retry_urls')}"


def back_date_series(bench: Bench, hours: float = 3) -> int:
    """Every series' last point (and its queue key) `hours` ago: past the minimum interval, so due."""
    then = datetime.now(UTC) - timedelta(hours=hours)
    result = bench.db["metric_series"].update_many(
        {}, {"$set": {"last_point_at": then, "refresh_at": then, "points.$[].at": then}}
    )
    return result.modified_count


def row_metric_refresh(bench: Bench, paid: bool, opts: argparse.Namespace) -> str:
    # Links to paid objects exist only if recorded with paid on (set-up, metered separately).
    before = bench.meter.count()
    linked = bench.token(discord=VIDEO.format("7350000000000000004"), twitter="https://t.co/TkVid01")
    assert bench.record(linked, paid=True).success
    setup_calls = bench.meter.count() - before
    due = back_date_series(bench)
    started = bench.meter.count()
    run = metric_refresh_job.execute_in_process(resources=bench.res(paid=paid), instance=bench.instance)
    counted = bench.meter.count() - started
    summary = run.output_for_node("refresh_metrics")
    # The control: the same due objects with paid on reach the meter (not counted in the row).
    back_date_series(bench)
    control_start = bench.meter.count()
    control = metric_refresh_job.execute_in_process(resources=bench.res(paid=True), instance=bench.instance)
    control_calls = bench.meter.count() - control_start
    bench.control_calls += control_calls + setup_calls  # the row's delta must not include them
    return (
        f"{due} series back-dated past the minimum interval; paid {'on' if paid else 'off'}: {summary}, "
        f"{counted} at the meter; control with paid on: {control.output_for_node('refresh_metrics')}, "
        f"{control_calls} at the meter"
    )


# -- launch-time fields: run config -------------------------------------------------------------------


def _unwrap(config_type: Any) -> Any:
    while type(config_type).__name__ == "Noneable":
        config_type = config_type.inner_type
    return config_type


def config_leaves(job: dg.JobDefinition) -> Iterator[tuple[list[str], Any]]:
    """(path, leaf type) of every field of the job's run-config schema under resources / ops."""

    def walk(config_type: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
        config_type = _unwrap(config_type)
        fields = getattr(config_type, "fields", None)
        if fields:
            for name, f in fields.items():
                yield from walk(f.config_type, [*path, name])
        elif len(path) >= 3:
            yield path, config_type

    root = job.run_config_schema.config_type
    for section in ("resources", "ops"):
        if section in root.fields:
            yield from walk(root.fields[section].config_type, [section])


def _moved(current: str, meter_port: int) -> str:
    """`current` (a URL or connection string) pointed at the meter, keeping scheme, credentials, path."""
    parts = urlsplit(current)
    credentials = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
    moved = urlunsplit(parts._replace(netloc=f"{credentials}127.0.0.1:{meter_port}"))
    return moved


def attack_value(bench: Bench, defs: dg.Definitions, path: list[str], leaf: Any) -> Any:
    """A launch-time value for the field at `path` that would reach the paid host or open a gate."""
    kind = type(leaf).__name__.lower()
    name = path[-1].lower()
    if "bool" in kind:
        return True
    if "int" in kind:
        return 1_000_000
    if "float" in kind:
        return 1e6
    if "string" not in kind:
        return None
    if "dir" in name or "path" in name:
        return bench.tmp.name
    if path[0] == "resources" and ("url" in name or "uri" in name):
        resource = defs.resources.get(path[1]) if isinstance(defs.resources, dict) else None
        current = getattr(resource, path[-1], None) if resource is not None else None
        if isinstance(current, dg.EnvVar):
            current = current.get_value()
        if isinstance(current, str) and "://" in current:
            return _moved(current, bench.meter.port)
        return bench.meter.url
    return "true" if any(word in name for word in FLAG_WORDS) else bench.launch_value


def _deep_set(config: dict, path: list[str], value: Any) -> dict:
    config = copy.deepcopy(config)
    node = config
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    return config


def base_run(job: dg.JobDefinition, linked: str) -> tuple[dict, dict]:
    """(run config, execute kwargs) a launch of `job` needs anyway."""
    config: dict = {}
    if "prepare" in {node.name for node in job.graph.nodes}:
        config = {"ops": {"prepare": {"config": {"token_address": linked}}}}
    kwargs: dict = {}
    partitions = job.partitions_def
    if partitions is not None:
        if isinstance(partitions, dg.StaticPartitionsDefinition):
            keys = partitions.get_partition_keys()
            kwargs["partition_key"] = "skipped_paid" if "skipped_paid" in keys else keys[0]
        elif partitions.has_partition_key(WINDOW):
            kwargs["partition_key"] = WINDOW
        else:  # another time axis (signals_job's days): its newest partition
            kwargs["partition_key"] = partitions.get_last_partition_key()
    return config, kwargs


@dataclass
class LaunchRow:
    tried: int = 0
    refused: int = 0
    accepted: list[str] = field(default_factory=list)
    reached: list[str] = field(default_factory=list)

    def detail(self, what: str) -> str:
        reached = ", ".join(self.reached) or "none"
        return (
            f"{self.tried} {what} tried, {self.refused} refused before the run started, "
            f"{len(self.accepted)} accepted ({', '.join(self.accepted) or 'none'}); "
            f"reached the paid host: {reached}"
        )


def code_location(bench: Bench, open_field: bool) -> dg.Definitions:
    """The code location's Definitions, loaded with the deployment's environment (as the webserver
    and the run workers load it). `open_field`: the breach the self-test injects, a `recording`
    resource whose `enable_paid` is a run-config field."""
    with environment(bench.deployment_env()):
        import importlib

        import socialrec_pipeline.defs.definitions as definitions

        defs = importlib.reload(definitions).defs
    if not open_field:
        return defs

    class OpenRecording(dg.ConfigurableResource):
        """The breach: paid settings a launch can set."""

        enable_paid: str = "false"

        def settings(self) -> RecordingSettings:
            return RecordingSettings.from_env({"SOCIALREC_ENABLE_PAID": self.enable_paid})

    return dg.Definitions(
        assets=list(defs.assets or []),
        asset_checks=list(defs.asset_checks or []),
        jobs=list(defs.jobs or []),
        resources={**dict(defs.resources or {}), "recording": OpenRecording()},
    )


def prime(bench: Bench) -> str:
    """Work for one launch, whatever the job: a token with paid URLs that nothing recorded yet (in the
    reconcile window, for the record and reconcile jobs) and every series due (for the metric refresh);
    `skipped_paid` URLs stay from the earlier rows (for the retry). Returns the token's address."""
    back_date_series(bench)
    return bench.token(discord=VIDEO.format("7350000000000000005"), website=POST, last_transfer="2026-11-30T02:50:00Z")


def row_run_config(bench: Bench, paid: bool, opts: argparse.Namespace) -> str:
    from socialrec_pipeline.defs.launch_gate import launch_refusals

    defs = code_location(bench, open_field=paid)
    row = LaunchRow()
    wanted_jobs = [j for j in opts.jobs.split(",") if j]
    prefixes = [f for f in opts.fields.split(",") if f]
    with environment(bench.deployment_env()):
        for job in defs.get_repository_def().get_all_jobs():
            if job.name.startswith("__") or (wanted_jobs and job.name not in wanted_jobs):
                continue  # the implicit asset job runs through the named jobs' assets
            for path, leaf in config_leaves(job):
                dotted = ".".join(path)
                if prefixes and not dotted.startswith(tuple(prefixes)):
                    continue
                value = attack_value(bench, defs, path, leaf)
                if value is None:
                    continue
                base, kwargs = base_run(job, prime(bench))
                config = _deep_set(base, path, value)
                row.tried += 1
                try:
                    dg.validate_run_config(job, config)
                except dg.DagsterInvalidConfigError:
                    row.refused += 1
                    continue
                # The launch gate (GatedRunCoordinator) refuses it before the run is queued; the breach
                # (paid: a field the schema opens) has no gate either.
                if not paid and launch_refusals(config, job_name=job.name):
                    row.refused += 1
                    continue
                row.accepted.append(f"{job.name}:{dotted}")
                before = bench.meter.count()
                with contextlib.suppress(dg.DagsterInvalidConfigError):  # refused at launch after all
                    job.execute_in_process(run_config=config, instance=bench.instance, raise_on_error=False, **kwargs)
                calls = bench.meter.count() - before
                if calls:
                    row.reached.append(f"{job.name}:{dotted} ({calls})")
    return row.detail("launch-time fields")


# -- launch-time fields: run tags --------------------------------------------------------------------


def env_names_read() -> list[str]:
    """Every environment variable the code location reads: the recording settings and each name the
    resource bindings take from the environment (defs/resources.py)."""
    source = (ROOT / "socialrec_pipeline" / "defs" / "resources.py").read_text()
    bound = re.findall(r"(?:env_or|EnvVar|environ\.get)\(\s*\"([A-Z][A-Z0-9_]+)\"", source)
    return sorted(set(ENV_NAMES) | set(bound))


def env_attack_value(bench: Bench, name: str, deployed: dict[str, str]) -> str:
    if name.endswith(("_URL", "_URI")):
        current = deployed.get(name, "")
        return _moved(current, bench.meter.port) if "://" in current else bench.meter.url
    if "PLATFORMS" in name:
        return "gh"  # no paid platform: TikTok and Instagram would count as free
    if any(word.upper() in name for word in FLAG_WORDS):
        return "true"
    return bench.launch_value


def helm_launcher() -> SimpleNamespace:
    """The K8sRunLauncher deploy/helm-values.yaml configures, as `create_for_run` reads it
    (camelCase chart keys → the launcher's snake_case attributes; absent ones unset)."""
    values = yaml.safe_load((ROOT / "deploy" / "helm-values.yaml").read_text())
    k8s = values["runLauncher"]["config"]["k8sRunLauncher"]

    def snake(key: str) -> str:
        return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()

    attributes = {
        name: None
        for name in (
            "image_pull_policy", "image_pull_secrets", "service_account_name", "env_config_maps", "env_secrets",
            "env_vars", "volume_mounts", "volumes", "labels", "job_namespace", "resources", "scheduler_name",
            "security_context", "run_k8s_config", "only_allow_user_defined_k8s_config_fields",
            "only_allow_user_defined_env_vars",
        )
    }  # fmt: skip
    for key, value in k8s.items():
        attributes[snake(key)] = value
    run_k8s = attributes.get("run_k8s_config") or {}
    attributes["run_k8s_config"] = {snake(k): v for k, v in run_k8s.items()}
    attributes["env_secrets"] = [s["name"] if isinstance(s, dict) else s for s in attributes["env_secrets"] or []]
    return SimpleNamespace(**attributes)


def pod_env_from_tags(launcher: SimpleNamespace, tags: dict[str, str]) -> dict[str, str]:
    """The environment variables a run with `tags` would get from them, by dagster-k8s's own code."""
    from dagster_k8s.container_context import K8sContainerContext

    run = dg.DagsterRun(job_name="record_token_job", run_id=str(uuid.uuid4()), tags=tags)
    try:
        context = K8sContainerContext.create_for_run(run, launcher, include_run_tags=True)  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - the launcher refuses the run: nothing reaches a pod
        return {}
    env = list(context.run_k8s_config.container_config.get("env") or [])
    return {e["name"]: e.get("value", "") for e in env if isinstance(e, dict) and "name" in e}


def row_run_tags(bench: Bench, paid: bool, opts: argparse.Namespace) -> str:
    from socialrec_pipeline.defs.launch_gate import tag_refusals

    launcher = helm_launcher()
    if paid:  # the breach: no launch gate, and a launcher with no allowlist, which passes a tag's env on
        launcher.only_allow_user_defined_env_vars = None
        launcher.only_allow_user_defined_k8s_config_fields = None
    deployed = bench.deployment_env()
    wanted = [n for n in opts.env_names.split(",") if n]
    row = LaunchRow()
    for name in env_names_read():
        if wanted and name not in wanted:
            continue
        value = env_attack_value(bench, name, deployed)
        tags = {K8S_CONFIG_TAG: json.dumps({"container_config": {"env": [{"name": name, "value": value}]}})}
        row.tried += 1
        # The launch gate (GatedRunCoordinator) refuses the tag before the run is queued; the
        # launcher's own allowlist is what is left when a run gets past it.
        through = {} if not paid and tag_refusals(tags, "record_token") else pod_env_from_tags(launcher, tags)
        if name not in through:
            row.refused += 1
            continue
        row.accepted.append(name)
        before = bench.meter.count()
        with environment({**deployed, **through}):
            from socialrec_pipeline.defs.resources import resources_from_env

            with contextlib.suppress(Exception):  # a setting the run refuses fails the run: no call
                record_token_job.execute_in_process(
                    run_config={"ops": {"prepare": {"config": {"token_address": prime(bench)}}}},
                    resources=resources_from_env(),
                    instance=bench.instance,
                    tags=tags,
                    raise_on_error=False,
                )
        calls = bench.meter.count() - before
        if calls:
            row.reached.append(f"{name} ({calls})")
    return row.detail(f"`{K8S_CONFIG_TAG}` env tags")


# -- the run ---------------------------------------------------------------------------------------------

ROWS: dict[str, Callable[[Bench, bool, argparse.Namespace], str]] = {
    "stream, direct paid URLs": row_stream_direct,
    "stream, short links to paid targets": row_stream_short,
    "reconcile": row_reconcile,
    "retry of skipped_paid": row_retry,
    "metric refresh": row_metric_refresh,
    "run config at launch": row_run_config,
    "run tags at launch": row_run_tags,
}


def counted(bench: Bench, name: str, row: Callable[[Bench, bool, argparse.Namespace], str], paid: bool,
            opts: argparse.Namespace) -> int:  # fmt: skip
    bench.control_calls = 0
    before, others = bench.meter.count(), bench.meter.other_connections()
    detail = row(bench, paid, opts)
    calls = bench.meter.count() - before - bench.control_calls
    others = bench.meter.other_connections() - others
    if others:
        detail += f"; {others} non-HTTP connection(s) to the paid host (clients pointed at it)"
    label = "calls_with_breach_injected" if paid else "paid_calls_while_off"
    print(f"{name}: {label}={calls} ({detail})", flush=True)
    return calls


def out_of_credit_race(bench: Bench) -> tuple[int, int, int]:
    """Two record_token_job runs in flight; the provider answers its first call, then out-of-credit."""
    bench.guard.clear()
    bench.apify.reset()
    bench.apify.ok_calls, bench.apify.ok_delay_s = 1, 0.3
    tokens = []
    for base in (7350000000000000301, 7350000000000000401):
        tokens.append(
            bench.token(
                website=VIDEO.format(base),
                twitter=VIDEO.format(base + 1),
                telegram=VIDEO.format(base + 2),
                discord="https://t.co/TkVid01",
            )
        )
    barrier = threading.Barrier(len(tokens))
    outcomes = []

    def run(a: str) -> None:
        with dg.DagsterInstance.ephemeral() as own:
            barrier.wait()
            result = record_token_job.execute_in_process(
                run_config={"ops": {"prepare": {"config": {"token_address": a}}}},
                resources=bench.res(paid=True),
                instance=own,
            )
            outcomes.append(result.success)

    threads = [threading.Thread(target=run, args=(a,)) for a in tokens]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert outcomes == [True, True], outcomes
    after = bench.apify.calls_after_refusal()
    state = bench.guard.state()
    tripped = state.tripped_at.timestamp() if state and state.tripped_at else None
    in_flight = sum(1 for t in after if tripped is not None and t <= tripped)
    return len(bench.apify.calls), len(after), in_flight


def main() -> int:
    from socialrec_pipeline.store.embedded import configured_or_embedded_mongo

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--self-test", action="store_true", help="inject each row's breach; every row must count it")
    parser.add_argument("--jobs", default="", help="run-config row: only these jobs (comma-separated)")
    parser.add_argument("--fields", default="", help="run-config row: only fields starting with these paths")
    parser.add_argument("--env-names", default="", help="run-tag row: only these environment variables")
    parser.add_argument("--rows", default="", help="only the rows whose name starts with one of these")
    opts = parser.parse_args()
    rows = {n: r for n, r in ROWS.items() if not opts.rows or n.startswith(tuple(opts.rows.split(",")))}
    print(
        f"# {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; loopback stand-ins, the paid host on a server of its own, "
        f"real Redis/RabbitMQ/MongoDB; load {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    results: dict[str, int] = {}
    with configured_or_embedded_mongo(os.environ.get("MONGODB_URI")) as uri:
        bench = Bench(uri)
        try:
            for name, row in rows.items():
                results[name] = counted(bench, name, row, opts.self_test, opts)
            if not opts.self_test:
                calls, after, in_flight = out_of_credit_race(bench)
                print(
                    f"paid on, out of credit after the first call, two runs in flight: {calls} paid calls; "
                    f"calls_after_out_of_credit={after} (in flight when the guard tripped: {in_flight}, "
                    f"started after it: {after - in_flight})",
                    flush=True,
                )
        finally:
            bench.close()
    if opts.self_test:
        detected = sum(1 for calls in results.values() if calls > 0)
        blind = [name for name, calls in results.items() if calls == 0]
        if blind:
            print(f"rows blind to their breach: {blind}")
        print(f"bench_self_test: {detected}/{len(results)} rows detect their breach")
        return 0 if detected == len(results) else 1
    total = sum(results.values())
    print(f"paid_calls_while_off: {total}")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
