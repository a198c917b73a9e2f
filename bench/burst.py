"""Burst: N qualifying `token.flow` events published at once, the real daemon drains them.

Starts `dagster-daemon run` (with its code server) on a temporary DAGSTER_HOME; the SolTracker and
platform stand-ins run in this process on loopback and answer after --latency-ms per call. After a
warm-up token, N tokens are published at once (each once). Reports tokens per minute from the
publish to the last marker, the queue / process-start / run phases, CPU seconds per token (the
daemon, its code server, the run workers and any Celery workers) and runs per token. The last line
is `burst_tokens_per_min: <number>`; exit 1 when that is under `--min-tokens-per-min` (the goal:
60 for the local instance, 120 for production) or a token got other than one run and one marker.

    .venv/bin/python bench/burst.py --tokens 200 [--latency-ms 300]
        [--instance local|production]   # repo dagster.yaml on SQLite | deploy/dagster.yaml on Postgres
        [--direct-postgres]             # production without PgBouncer
        [--run-workers K] [--worker-concurrency C] | [--process-per-run] [--min-tokens-per-min N]
    .venv/bin/python bench/burst.py --self-test [--instance local|production]

`--self-test` publishes 4 tokens to stand-ins that answer each call after `SELF_TEST_LATENCY_MS` (a
slow upstream holds every run longer than the goal allows) and fails unless the bench reports the
rate under the goal; last line `bench_self_test: N/N rows detect their breach`.

`--instance production` needs scripts/postgres.sh (started if it is not up, and stopped again then); a database of the
bench's own is created and dropped, and Dagster reaches it through a PgBouncer of the bench's own
(scripts/pgbouncer.sh, as docker-compose runs it) unless `--direct-postgres` (the A/B: what the
pooler saves; PostgreSQL's own CPU is not in `cpu_s_per_token`: `pg_cpu_s_per_token` counts it).
Needs RabbitMQ, Redis, and MongoDB (MONGODB_URI, else an embedded SecantusDB served from here).
The machine may be shared: the load average is printed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.daemon_bench import (  # noqa: E402
    RABBITMQ_URL,
    ROOT,
    address,
    celery_env,
    group_cpu_seconds,
    mongo,
    percentile,
    pipeline_env,
    publish,
    reproducibility_lines,
    stand_ins,
    start_deployment,
    stop,
    write_instance,
)
from bench.own_services import OwnPgBouncer, start_on_free_port  # noqa: E402
from bench.procs import processes  # noqa: E402
from socialrec_pipeline.store.client import open_client, open_database  # noqa: E402
from socialrec_pipeline.stream.broker import (  # noqa: E402
    EXCHANGE,
    dead_letter_queue,
    declare_topology,
    open_connection,
    queue_name_for,
)


@contextlib.contextmanager
def postgres_database(pooled: bool):
    """A database of the bench's own on the helper's PostgreSQL: the DAGSTER_POSTGRES_* values,
    pointing at a PgBouncer of the bench's own in front of it when `pooled`."""
    import psycopg2
    from psycopg2.extensions import parse_dsn

    script = ["bash", str(ROOT / "scripts" / "postgres.sh")]
    was_running = subprocess.run([*script, "status"], capture_output=True, timeout=60).returncode == 0
    subprocess.run([*script, "start"], check=True, timeout=120)
    url = subprocess.run(
        ["bash", str(ROOT / "scripts" / "postgres.sh"), "url"], capture_output=True, text=True, check=True
    ).stdout.strip()
    parts, name = parse_dsn(url), f"dagster_bench_{uuid.uuid4().hex[:8]}"
    admin = psycopg2.connect(url, connect_timeout=10)
    admin.autocommit = True
    with admin.cursor() as cur:
        cur.execute(f'CREATE DATABASE "{name}"')
    host, port = parts.get("host", "127.0.0.1"), parts.get("port", "5432")
    try:
        with contextlib.ExitStack() as stack:
            if pooled:
                upstream = (host, int(port), parts.get("user", "postgres"))
                pooler = start_on_free_port(lambda p: OwnPgBouncer(p, *upstream), range(26432, 26532), "pgbouncer")
                stack.callback(pooler.cleanup)
                host, port = "127.0.0.1", str(pooler.port)
            yield {
                "DAGSTER_POSTGRES_HOST": host,
                "DAGSTER_POSTGRES_PORT": port,
                "DAGSTER_POSTGRES_USER": parts.get("user", "postgres"),
                "DAGSTER_POSTGRES_PASSWORD": parts.get("password") or "unused-with-trust-auth",
                "DAGSTER_POSTGRES_DB": name,
            }
    finally:
        with admin.cursor() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()
        if not was_running:  # the bench started it: nothing of it outlives the bench
            subprocess.run([*script, "stop"], check=False, timeout=120)


def postgres_cpu_seconds() -> float:
    """CPU of the helper's PostgreSQL: the postmaster with the backends it has reaped, plus the live
    ones (a connection per storage call means a backend per call: this is where that cost shows)."""
    pid_file = ROOT / ".local" / "postgres" / "data" / "postmaster.pid"
    try:
        postmaster = int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return -1.0
    total = 0.0
    for proc in processes():
        if proc.pid == postmaster:
            total += proc.cpu_s + proc.reaped_children_cpu_s
        elif proc.ppid == postmaster:
            total += proc.cpu_s
    return total


#: The goal per instance: tokens per minute of a 200-token burst.
GOAL_TOKENS_PER_MIN = {"local": 60.0, "production": 120.0}
#: The self-test's breach: each stand-in call answers this late, so with two runs at a time a
#: handful of tokens cannot come near the goal.
SELF_TEST_LATENCY_MS = 2000


def run(args: argparse.Namespace) -> tuple[float, bool]:
    """Start the deployment, publish the burst, print the figures; (tokens per minute, whether every
    token got exactly one run and one marker)."""
    production = args.instance == "production"

    env_name = f"bench{uuid.uuid4().hex[:8]}"
    queue, exchange = queue_name_for(env_name), f"{EXCHANGE}.{env_name}"
    warmup, measured = address(), [address() for _ in range(args.tokens)]
    home = Path(tempfile.mkdtemp(prefix="socialrec-burst-home-"))
    instance_file = write_instance(home, production=args.instance == "production", process_per_run=args.process_per_run)
    workers = 0 if args.process_per_run else args.run_workers
    db_name = f"bench_burst_{uuid.uuid4().hex[:6]}"
    procs: list[subprocess.Popen] = []
    with contextlib.ExitStack() as stack:
        uri = stack.enter_context(mongo())
        urls = stack.enter_context(stand_ins([warmup, *measured], args.latency_ms))
        pg_env = stack.enter_context(postgres_database(pooled=not args.direct_postgres)) if production else {}
        client = open_client(uri)
        db = open_database(client, db_name)
        connection = open_connection(RABBITMQ_URL)
        channel = declare_topology(connection, queue, exchange)
        env = {
            **pipeline_env(uri, db_name, env_name, exchange, urls),
            **pg_env,
            **celery_env(env_name),
            "DAGSTER_HOME": str(home),
        }
        try:
            procs = start_deployment(home, env, run_workers=workers, concurrency=args.worker_concurrency)

            def wait_markers(addrs: list[str], seen: dict[str, float], deadline: float) -> None:
                pending = set(addrs)
                while pending and time.time() < deadline:
                    connection.process_data_events(time_limit=0)
                    for doc in db["tokens"].find({"address": {"$in": list(pending)}}, {"address": 1}):
                        seen[doc["address"]] = time.time()
                        pending.discard(doc["address"])
                    if any(p.poll() is not None for p in procs):
                        raise SystemExit(f"a process exited; see {home}")
                    time.sleep(0.5)

            started = time.time()
            publish(channel, exchange, warmup)
            warm: dict[str, float] = {}
            wait_markers([warmup], warm, started + 300)
            if not warm:
                raise SystemExit(f"warm-up token never recorded; see {home}/daemon.log")
            print(f"warm-up (daemon start + first run): {warm[warmup] - started:.1f} s", flush=True)
            time.sleep(3)  # the warm-up run's process exits
            pgids = {p.pid for p in procs}
            cpu_from, load_from, own_from = group_cpu_seconds(pgids), os.getloadavg(), time.process_time()
            pg_from = postgres_cpu_seconds() if production else 0.0
            published_at = time.time()
            for addr in measured:
                publish(channel, exchange, addr)
            seen: dict[str, float] = {}
            wait_markers(measured, seen, published_at + args.timeout)
            time.sleep(2)  # the last runs finish writing their events
            cpu = group_cpu_seconds(pgids) - cpu_from
            own_cpu = time.process_time() - own_from
            pg_cpu = postgres_cpu_seconds() - pg_from if production else 0.0
            load_to = os.getloadavg()
        finally:
            for proc in reversed(procs):
                stop(proc)
            channel.queue_delete(queue)
            channel.queue_delete(dead_letter_queue(queue))
            channel.exchange_delete(exchange)
            if workers:
                channel.queue_delete(env["SOCIALREC_CELERY_RUN_QUEUE"])
                channel.exchange_delete(env["SOCIALREC_CELERY_RUN_QUEUE"])  # Celery's, of the queue's name
            connection.close()

        from dagster import DagsterEventType, DagsterInstance, RunsFilter

        os.environ.update({k: v for k, v in env.items() if k.startswith("DAGSTER_")})
        phases: dict[str, list[float]] = {
            "queue (created->launched)": [],
            "process start (launched->started)": [],
            "run (started->ended)": [],
        }
        with DagsterInstance.get() as instance:
            records = instance.get_run_records(filters=RunsFilter(job_name="record_token_job"))
            wanted = set(measured)
            runs_of: dict[str, int] = {a: 0 for a in measured}
            statuses: dict[str, int] = {}
            for rec in records:
                addrs = [a for a in rec.dagster_run.tags.get("socialrec/token_address", "").split(",") if a in wanted]
                if not addrs:
                    continue
                for a in addrs:
                    runs_of[a] += 1
                statuses[rec.dagster_run.status.value] = statuses.get(rec.dagster_run.status.value, 0) + 1
                created = rec.create_timestamp.timestamp()
                starting = instance.get_records_for_run(
                    rec.dagster_run.run_id, of_type=DagsterEventType.RUN_STARTING, limit=1
                ).records
                if starting and rec.start_time and rec.end_time:
                    phases["queue (created->launched)"].append(starting[0].timestamp - created)
                    phases["process start (launched->started)"].append(rec.start_time - starting[0].timestamp)
                    phases["run (started->ended)"].append(rec.end_time - rec.start_time)
        markers = {a: db["tokens"].count_documents({"address": a}) for a in measured}
        reproducibility = reproducibility_lines(instance_file, home)
        client.drop_database(db_name)
        client.close()
    shutil.rmtree(home, ignore_errors=True)

    if len(seen) < len(measured):
        raise SystemExit(f"only {len(seen)} of {len(measured)} markers within {args.timeout:.0f} s")
    elapsed = max(seen.values()) - published_at
    per_min = len(measured) / elapsed * 60
    launcher = "a process per run" if args.process_per_run else f"run workers {workers}x{args.worker_concurrency}"
    print(f"instance={args.instance} launcher={launcher} tokens={len(measured)} latency_ms={args.latency_ms:g}")
    if production:
        print(f"postgres: {'direct' if args.direct_postgres else 'through PgBouncer (session pooling)'}")
    for line in reproducibility:
        print(line)
    before, after = (" ".join(f"{v:.2f}" for v in load) for load in (load_from, load_to))
    print(f"load average (1, 5, 15 min) before: {before}, after: {after}")
    print(f"last marker after {elapsed:.1f} s; markers per token: {sorted(set(markers.values()))}")
    print(f"runs: {sum(statuses.values())} {statuses}; runs per token: {sorted(set(runs_of.values()))}")
    for phase, values in phases.items():
        if values:
            print(
                f"  {phase}: p50 {percentile(values, 0.5):.1f} s, p95 {percentile(values, 0.95):.1f} s, "
                f"sum {sum(values):.0f} s"
            )
    print(f"CPU seconds per token (daemon, code server, run workers; not the databases): {cpu / len(measured):.2f}")
    print(
        f"this process (stand-ins{', embedded MongoDB' if not os.environ.get('MONGODB_URI') else ''}): "
        f"{own_cpu / elapsed:.2f} cores over the burst"
    )
    if production:
        print(f"PostgreSQL's backends: {pg_cpu / len(measured):.2f} CPU s per token")
        print(f"pg_cpu_s_per_token: {pg_cpu / len(measured):.2f}")
    print(f"cpu_s_per_token: {cpu / len(measured):.2f}")
    return per_min, set(markers.values()) == {1} and set(runs_of.values()) == {1}


def breached(per_min: float, min_per_min: float) -> bool:
    """The one verdict on the rate, for the measurement and the self-test alike."""
    return per_min < min_per_min


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=None, help="default 200 (4 with --self-test)")
    parser.add_argument("--latency-ms", type=float, default=0, help="each stand-in answers after this long")
    parser.add_argument("--instance", choices=("local", "production"), default="local")
    parser.add_argument("--run-workers", type=int, default=1, help="run worker processes (scripts/run_workers.sh)")
    parser.add_argument("--worker-concurrency", type=int, default=2, help="runs at once per run worker")
    parser.add_argument(
        "--process-per-run", action="store_true", help="Dagster's default launcher instead of the run workers"
    )
    parser.add_argument(
        "--direct-postgres", action="store_true", help="production: Dagster on PostgreSQL directly, without PgBouncer"
    )
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--min-tokens-per-min", type=float, default=None, help="the goal (default: per instance)")
    parser.add_argument("--self-test", action="store_true", help="inject a slow upstream; the bench must report it")
    args = parser.parse_args()
    goal = args.min_tokens_per_min or GOAL_TOKENS_PER_MIN[args.instance]
    if args.self_test:
        args.tokens, args.latency_ms = args.tokens or 4, SELF_TEST_LATENCY_MS
        per_min, _ = run(args)
        caught = breached(per_min, goal)
        print(f"slow_upstream ({SELF_TEST_LATENCY_MS} ms per call): {per_min:.1f} tokens/min (goal ≥ {goal:g}) -> "
              f"{'breach reported' if caught else 'BLIND'}")
        print(f"bench_self_test: {int(caught)}/1 rows detect their breach")
        return 0 if caught else 1
    args.tokens = args.tokens or 200
    per_min, once_each = run(args)
    over = [f"burst_tokens_per_min {per_min:.1f} < {goal:g}"] * breached(per_min, goal)
    over += ["a token got other than one run and one marker"] * (not once_each)
    if over:
        print("BREACH: " + "; ".join(over))
    print(f"burst_tokens_per_min: {per_min:.1f}")
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
