"""`socialrec`: operator commands. Each subcommand is a thin shell over a service."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="socialrec", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    route = sub.add_parser("route", help="print how URLs are routed, one JSON object per URL")
    route.add_argument("urls", nargs="*", help="URLs to route; read from stdin, one per line, when none")

    _add_sandbox(sub)
    _add_queue_commands(sub)
    _add_doctor(sub)
    pools = sub.add_parser(
        "pool-limits",
        help="set the op pools' limits in the Dagster instance ($DAGSTER_HOME), so Deployment → Concurrency "
        "lists them (run by scripts/run.sh before Dagster starts)",
    )
    pools.add_argument(
        "--limit", type=int, default=None, help="the limit of every pool (default: concurrency.pools.default_limit)"
    )
    return parser


def _add_sandbox(sub: argparse._SubParsersAction) -> None:
    sandbox = sub.add_parser("sandbox", help="offline demo: local API stand-ins and sample token.flow events")
    sandbox_sub = sandbox.add_subparsers(dest="sandbox_command", required=True)
    serve = sandbox_sub.add_parser("serve", help="start loopback stand-ins for SolTracker and every platform API")
    serve.add_argument("--port-base", type=int, default=18080, help="first of 8 consecutive loopback ports")
    serve.add_argument("--env-file", help="also write the export lines to this file")
    serve.add_argument(
        "--env", default="sandbox", help="SOCIALREC_ENV of this sandbox: its queue suffix (sandbox or sandbox-<name>)"
    )
    publish = sandbox_sub.add_parser(
        "publish",
        help="publish sample token.flow events (fresh addresses) to the queue of the sandbox started by "
        "scripts/run.sh --sandbox",
    )
    _add_sandbox_target(publish)
    publish.add_argument("--fixed", action="store_true", help="use the fixed demo addresses instead of fresh ones")
    release = sandbox_sub.add_parser(
        "release",
        help="remove a stopped sandbox's queues and exchanges from RabbitMQ, each only if unused and empty "
        "(scripts/run.sh --sandbox does it when it stops)",
    )
    _add_sandbox_target(release)
    release.add_argument(
        "--run-queue", default=os.environ.get("SOCIALREC_CELERY_RUN_QUEUE"),
        help="the sandbox's Celery run queue (default: SOCIALREC_CELERY_RUN_QUEUE)",
    )  # fmt: skip


def _add_sandbox_target(parser: argparse.ArgumentParser) -> None:
    """The broker and the sandbox a `publish` or `release` is for."""
    parser.add_argument(
        "--rabbitmq-url", default=os.environ.get("RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/%2F")
    )
    parser.add_argument(
        "--env-file",
        default=os.path.join(os.environ.get("DAGSTER_HOME") or os.path.join(".local", "dagster_home"), "sandbox.env"),
        help="the sandbox's environment, written by run.sh --sandbox into its DAGSTER_HOME (default: "
        "$DAGSTER_HOME/sandbox.env, else .local/dagster_home/sandbox.env); gives the queue and the SolTracker stand-in",
    )
    parser.add_argument("--env", help="target queue suffix (SOCIALREC_ENV); default: the env file's, else sandbox")


def _add_queue_commands(sub: argparse._SubParsersAction) -> None:
    """The queues and the guard an operator may need to look at or fix by hand."""

    sub.add_parser(
        "backfill-queues",
        help="derive the retry queue (tokens.oldest_attempt) and the metric refresh queue "
        "(metric_series.refresh_at) for rows written before they existed (MONGODB_URI, MONGODB_DATABASE); "
        "every retry run derives the retry queue by itself first",
    )
    credit = sub.add_parser(
        "paid-credit",
        help="show or clear the paid credit guard (set when a paid provider answers out-of-credit)",
        description="The guard of the paid account named by APIFY_BASE_URL / APIFY_TOKEN, in REDIS_URL. "
        "While it is set no paid call runs in any job; it clears by itself one hour after it was set.",
    )
    credit.add_argument("action", choices=["status", "reset"], help="status: print it; reset: clear it now")

    dlq = sub.add_parser(
        "dlq",
        help="read, requeue, purge or acknowledge the token.flow dead-letter queue",
        description="The dead-letter queue of the queue this deployment consumes (RABBITMQ_URL, SOCIALREC_ENV). "
        "`ack` records that you reviewed it (REDIS_URL): the dead_letters_reviewed check turns green until a "
        "newer message arrives.",
    )
    dlq.add_argument("action", choices=["list", "requeue", "purge", "ack"])
    dlq.add_argument("--limit", type=int, default=None, help="list: at most this many (default 20); requeue: this many")
    dlq.add_argument("--yes", action="store_true", help="purge: really drop every dead letter")


def _add_doctor(sub: argparse._SubParsersAction) -> None:
    doctor = sub.add_parser(
        "doctor",
        help="check every dependency of this deployment for real and say what to do (docs/doctor.md)",
        description="One row per check: ok / warn / fail, the finding, and what to do. Exit 0 when nothing "
        "fails, 1 on a failure, 2 when the doctor could not run. Reads the same environment as the code location.",
    )
    doctor.add_argument("--json", action="store_true", help="print the rows as JSON (scripts, CI)")
    doctor.add_argument("--spend-quota", action="store_true", help="also check the YouTube key (costs 1 quota unit)")
    doctor.add_argument("--timeout", type=float, default=10.0, help="seconds each check may take (default 10)")
    doctor.add_argument("--summary", action="store_true", help="print only the one-line verdict and the non-ok rows")


def doctor(args: argparse.Namespace, stdout) -> int:
    """`socialrec doctor`: exit 0 (no failure), 1 (a failure) or 2 (could not run)."""
    try:
        from socialrec_pipeline.defs import doctor as checks

        rows = checks.run_checks(checks.DoctorContext(spend_quota=args.spend_quota, timeout_s=args.timeout))
    except Exception as exc:  # the code location does not even load: say so, exit 2
        print(f"socialrec doctor could not run: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(checks.render_json(rows), file=stdout)
    elif args.summary:
        print(checks.render_table(rows, problems_only=True), file=stdout)
    else:
        print(checks.render_table(rows), file=stdout)
    return checks.exit_code(rows)


def paid_credit(action: str, env, stdout) -> int:
    """`socialrec paid-credit status|reset` against the deployment's Redis and paid account."""
    from socialrec_pipeline.defs.resources import paid_account_scope
    from socialrec_pipeline.recording.locks import PaidCreditGuard, open_redis

    scope = paid_account_scope(env.get("APIFY_BASE_URL") or "https://api.apify.com", env.get("APIFY_TOKEN") or None)
    guard = PaidCreditGuard(open_redis(env.get("REDIS_URL") or "redis://127.0.0.1:6379/0"), scope=scope)
    state = guard.state()
    if action == "reset":
        cleared = guard.clear()
        print(
            "paid credit guard cleared: paid calls run again" if cleared else "paid credit guard was clear", file=stdout
        )
        return 0
    print(f"paid credit guard {state.describe()}" if state else "paid credit guard clear", file=stdout)
    return 0


def dead_letter_command(action: str, limit: int | None, yes: bool, env, stdout) -> int:
    """`socialrec dlq list|requeue|purge|ack` against the deployment's broker and Redis."""
    from datetime import UTC, datetime

    from socialrec_pipeline.recording.locks import open_redis
    from socialrec_pipeline.stream import dead_letters
    from socialrec_pipeline.stream.broker import queue_name_for

    url = env.get("RABBITMQ_URL") or "amqp://guest:guest@127.0.0.1:5672/%2F"
    queue = queue_name_for(env.get("SOCIALREC_ENV") or "dev")
    if limit is not None and limit < 1:
        print("--limit must be 1 or more", file=sys.stderr)
        return 2
    if action == "list":
        letters = dead_letters.peek(url, queue)
        print(f"{len(letters)} dead letter(s) in {queue}.dlq", file=stdout)
        for reason, count in dead_letters.counts_by_reason(letters).items():
            print(f"  {count:>5}  {reason}", file=stdout)
        for letter in letters[-(limit or 20) :]:
            at = letter.dead_lettered_at.isoformat(timespec="seconds") if letter.dead_lettered_at else "-"
            print(f"{at}  {letter.reason}  {letter.preview}", file=stdout)
        return 0
    if action == "requeue":
        print(f"requeued {dead_letters.requeue(url, queue, limit)} message(s) to {queue}", file=stdout)
        return 0
    if action == "purge":
        if not yes:
            print("purge drops every dead letter for good: add --yes", file=sys.stderr)
            return 2
        print(f"purged {dead_letters.purge(url, queue)} message(s) from {queue}.dlq", file=stdout)
        return 0
    mark = dead_letters.ReviewMark(open_redis(env.get("REDIS_URL") or "redis://127.0.0.1:6379/0"), queue)
    now = datetime.now(UTC)
    mark.set(now)
    print(f"dead letters of {queue} reviewed as of {now.isoformat(timespec='seconds')}", file=stdout)
    return 0


def pool_limits(limit: int | None, stdout) -> int:
    """`socialrec pool-limits`: exit 0, or 2 when the instance cannot hold the limits."""
    from dagster import DagsterInstance

    from socialrec_pipeline.defs.pool_limits import set_pool_limits

    with DagsterInstance.get() as instance:
        try:
            limits = set_pool_limits(instance, limit)
        except ValueError as exc:
            print(f"socialrec pool-limits: {exc}", file=sys.stderr)
            return 2
    shown = " ".join(f"{pool}={value}" for pool, value in limits.items())
    print(f"==> pool limits: {shown} (Deployment → Concurrency)", file=stdout)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    if args.command == "route":
        from socialrec_pipeline.routing.cli import run_route

        return run_route(args.urls, stdin=sys.stdin, stdout=sys.stdout)
    if args.command == "sandbox":
        from socialrec_pipeline.sandbox import demo

        if args.sandbox_command == "serve":
            return demo.serve(sys.stdout, port_base=args.port_base, env_file=args.env_file, env=args.env)
        sandbox_env = demo.read_env_file(args.env_file) if os.path.exists(args.env_file) else {}
        env = args.env or sandbox_env.get("SOCIALREC_ENV") or "sandbox"
        if args.sandbox_command == "release":
            exchange = sandbox_env.get("RABBITMQ_EXCHANGE") if env == sandbox_env.get("SOCIALREC_ENV") else None
            return demo.release(
                sys.stdout, rabbitmq_url=args.rabbitmq_url, env=env, exchange=exchange, run_queue=args.run_queue
            )
        soltracker = None if args.fixed else sandbox_env.get("SOL_TRACKER_BASE_URL")
        if not sandbox_env and not args.fixed:
            sys.stderr.write(
                f"{args.env_file} not found (is scripts/run.sh --sandbox running?): "
                "publishing the fixed demo addresses\n"
            )
        exchange = sandbox_env.get("RABBITMQ_EXCHANGE") if env == sandbox_env.get("SOCIALREC_ENV") else None
        return demo.publish(
            sys.stdout, rabbitmq_url=args.rabbitmq_url, env=env, exchange=exchange, soltracker_url=soltracker
        )
    if args.command == "backfill-queues":
        from socialrec_pipeline.store import Store
        from socialrec_pipeline.store.client import open_client, open_database

        uri = os.environ.get("MONGODB_URI")
        if not uri:
            print("MONGODB_URI is not set", file=sys.stderr)
            return 2
        client = open_client(uri)
        try:
            store = Store(open_database(client, os.environ.get("MONGODB_DATABASE", "socialrec")))
            store.ensure_indexes()
            print(f"tokens updated: {store.tokens.backfill_oldest_attempt()}")
            print(f"metric series updated: {store.metrics.backfill_refresh_queue()}")
        finally:
            client.close()
        return 0
    if args.command == "paid-credit":
        return paid_credit(args.action, os.environ, sys.stdout)
    if args.command == "dlq":
        return dead_letter_command(args.action, args.limit, args.yes, os.environ, sys.stdout)
    if args.command == "doctor":
        return doctor(args, sys.stdout)
    if args.command == "pool-limits":
        return pool_limits(args.limit, sys.stdout)
    raise AssertionError(f"unhandled command {args.command}")


if __name__ == "__main__":
    raise SystemExit(main())
