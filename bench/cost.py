"""Paid calls on every path, counted at the paid provider's stand-in.

Drives each path that can reach a paid platform against loopback stand-ins (SolTracker, X,
Telegram, Apify, and a short-link host whose redirects the guarded resolver follows) with the
real Redis, RabbitMQ and MongoDB, and counts the runs that reach the Apify stand-in:

while paid is off (each must be 0):
  - stream, direct paid URLs: token.flow events → `token_flow_sensor` tick → its `record_token_job` runs;
  - stream, short links to paid targets (`t.co` → TikTok, reddit share → Instagram, `vm.tiktok.com`);
  - reconcile: `reconcile_job` for the hour of tokens with paid URLs;
  - retry of `skipped_paid`: `retry_job`;
  - metric refresh: `metric_refresh_job` over links to paid objects (recorded beforehand with paid on);
  - run config that tries to enable paid: every job launched with
    `resources: {recording: {config: {enable_paid: true}}}` (refused before the run starts).

with paid on and a provider that runs out of credit after its first call: two `record_token_job`
runs in flight at once (4 paid URLs each, one behind a short link); the calls that reached the
provider after its first out-of-credit answer, and how many of those had already passed the
credit guard before it was set (in flight).

    .venv/bin/python bench/cost.py

Needs Redis (REDIS_URL), RabbitMQ (RABBITMQ_URL) and MongoDB (MONGODB_URI, else an embedded
SecantusDB). Last line: `paid_calls_while_off: N`.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from datetime import UTC, datetime

# WINDOW must be a reconcile partition: without a setting they start on the day the code loads.
os.environ.setdefault("SOCIALREC_RECONCILE_START", "2026-11-01-00:00")

import dagster as dg  # noqa: E402

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


def job_with(name: str, resources: dict) -> dg.JobDefinition:
    """One of JOBS bound to `resources`, as the code location resolves it (`reconcile_job` is an
    asset job: it runs only resolved together with its asset)."""
    defs = dg.Definitions(assets=[reconcile_window], jobs=list(JOBS.values()), resources=resources)
    return defs.resolve_job_def(name)


def address() -> str:
    import secrets

    return "".join(secrets.choice(_BASE58) for _ in range(44))


def resources(server_url: str, uri: str, db: str, *, paid: bool) -> dict:
    recording = RecordingSettingsResource(enable_paid="true" if paid else "false", retry_min_interval_minutes="0")
    return stand_in_resources(
        lambda _service: server_url, mongo_uri=uri, database=db, redis_url=REDIS_URL,
        soltracker_key=ST_KEY, x_key="bench-x-key", recording=recording,
    )


class Bench:
    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.server = FixtureServer().start()
        self.soltracker = SolTrackerFixture([], api_key=ST_KEY)
        self.soltracker.install(self.server)
        demo_fixtures().register(self.server)
        self.apify = apify_fixtures.MeteredApify().register(self.server)
        register_short_link(self.server, "/TkVid01", VIDEO.format("7350000000000000001"))
        register_short_link(self.server, "/r/solana/s/IgPost01", POST)
        telegram_fixtures.register(self.server)  # catch-all: last
        self.guard = PaidCreditGuard(
            open_redis(REDIS_URL), scope=paid_account_scope(self.server.url, apify_fixtures.DEMO_TOKEN)
        )
        self.client = open_client(uri)
        self.db = open_database(self.client, f"bench_cost_{uuid.uuid4().hex[:6]}")
        self.instance = dg.DagsterInstance.ephemeral()

    def close(self) -> None:
        self.guard.clear()
        self.client.drop_database(self.db.name)
        self.instance.dispose()
        self.server.stop()

    def res(self, *, paid: bool) -> dict:
        return resources(self.server.url, self.uri, self.db.name, paid=paid)

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

    def counted(self, name: str, work) -> int:
        before = len(self.apify.calls)
        detail = work()
        calls = len(self.apify.calls) - before
        print(f"{name}: paid_calls_while_off={calls}" + (f" ({detail})" if detail else ""), flush=True)
        return calls


def stream(bench: Bench, tokens: list[str]) -> str:
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
                resources=bench.res(paid=False),
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


def refused_run_configs(bench: Bench) -> str:
    refused = 0
    attempt = {"resources": {"recording": {"config": {"enable_paid": "true"}}}}
    a = bench.token(discord=VIDEO.format("7350000000000000001"))
    configs = {
        "record_token_job": {**attempt, "ops": {"prepare": {"config": {"token_address": a}}}},
        "reconcile_job": attempt,
        "retry_job": attempt,
        "metric_refresh_job": attempt,
    }
    for name in JOBS:
        kwargs = {"partition_key": WINDOW} if name == "reconcile_job" else {}
        kwargs = {"partition_key": "skipped_paid"} if name == "retry_job" else kwargs
        try:
            job_with(name, bench.res(paid=False)).execute_in_process(
                run_config=configs[name], instance=bench.instance, **kwargs
            )
        except dg.DagsterInvalidConfigError:
            refused += 1
    return f"{refused} of {len(JOBS)} jobs refused the run config before starting"


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


def main() -> None:
    from socialrec_pipeline.store.embedded import configured_or_embedded_mongo

    print(f"# {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; loopback stand-ins, real Redis/RabbitMQ/MongoDB", flush=True)
    with configured_or_embedded_mongo(os.environ.get("MONGODB_URI")) as uri:
        bench = Bench(uri)
        try:
            with short_links_resolved_by(bench.server.url):
                total = 0
                direct = [
                    bench.token(
                        discord=VIDEO.format("7350000000000000001"), website=POST, last_transfer="2026-11-30T02:10:00Z"
                    ),
                    bench.token(twitter="https://www.instagram.com/moonproject", last_transfer="2026-11-30T02:20:00Z"),
                ]
                total += bench.counted("stream, direct paid URLs", lambda: stream(bench, direct))
                short = [
                    bench.token(
                        twitter="https://t.co/TkVid01",
                        telegram="https://vm.tiktok.com/ZMabc123/",
                        discord="https://www.reddit.com/r/solana/s/IgPost01",
                    )
                ]
                total += bench.counted(
                    "stream, short links to paid targets",
                    lambda: (
                        f"{stream(bench, short)}; attempts counted {attempts(bench, short)}; short-link requests "
                        f"t.co {len(bench.server.calls('/TkVid01'))}, "
                        f"vm.tiktok.com {len(bench.server.calls('/ZMabc123'))}"
                    ),
                )
                # A token the stream missed: only the upstream knows it, so only the reconcile records it.
                bench.token(
                    discord=VIDEO.format("7350000000000000002"),
                    twitter="https://t.co/TkVid01",
                    last_transfer="2026-11-30T02:40:00Z",
                )

                def reconcile() -> str:
                    run = job_with("reconcile_job", bench.res(paid=False)).execute_in_process(
                        partition_key=WINDOW, instance=bench.instance
                    )
                    # an asset step: its counts are the materialization's metadata, not an output
                    (materialization,) = run.asset_materializations_for_node("reconcile_window")
                    md = {k: getattr(v, "value", v) for k, v in materialization.metadata.items()}
                    return "window " + ", ".join(f"{k} {v}" for k, v in md.items())

                total += bench.counted("reconcile", reconcile)

                def retry() -> str:
                    run = retry_job.execute_in_process(
                        partition_key="skipped_paid", resources=bench.res(paid=False), instance=bench.instance
                    )
                    return f"URL statuses {run.output_for_node('retry_urls')}"

                total += bench.counted("retry of skipped_paid", retry)
                # Links to paid objects exist only if recorded with paid on (set-up, not counted).
                linked = bench.token(discord=VIDEO.format("7350000000000000001"), twitter="https://t.co/TkVid01")
                assert bench.record(linked, paid=True).success

                def refresh() -> str:
                    run = metric_refresh_job.execute_in_process(
                        resources=bench.res(paid=False), instance=bench.instance
                    )
                    return f"{run.output_for_node('refresh_metrics')}"

                total += bench.counted("metric refresh", refresh)
                total += bench.counted("run config that tries to enable paid", lambda: refused_run_configs(bench))
                calls, after, in_flight = out_of_credit_race(bench)
                print(
                    f"paid on, out of credit after the first call, two runs in flight: {calls} paid calls; "
                    f"calls_after_out_of_credit={after} (in flight when the guard tripped: {in_flight}, "
                    f"started after it: {after - in_flight})",
                    flush=True,
                )
        finally:
            bench.close()
    print(f"paid_calls_while_off: {total}")


if __name__ == "__main__":
    main()
