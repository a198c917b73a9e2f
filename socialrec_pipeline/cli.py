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

    sandbox = sub.add_parser("sandbox", help="offline demo: local API stand-ins and sample token.flow events")
    sandbox_sub = sandbox.add_subparsers(dest="sandbox_command", required=True)
    serve = sandbox_sub.add_parser("serve", help="start loopback stand-ins for SolTracker and every platform API")
    serve.add_argument("--port-base", type=int, default=18080, help="first of 8 consecutive loopback ports")
    serve.add_argument("--env-file", help="also write the export lines to this file")
    publish = sandbox_sub.add_parser("publish", help="publish sample token.flow events to the exchange")
    publish.add_argument("--rabbitmq-url", default=os.environ.get("RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/%2F"))
    publish.add_argument("--env", default=os.environ.get("SOCIALREC_ENV", "sandbox"), help="queue suffix (default sandbox)")
    credit = sub.add_parser(
        "paid-credit",
        help="show or clear the paid credit guard (set when a paid provider answers out-of-credit)",
        description="The guard of the paid account named by APIFY_BASE_URL / APIFY_TOKEN, in REDIS_URL. "
        "While it is set no paid call runs in any job; it clears by itself one hour after it was set.",
    )
    credit.add_argument("action", choices=["status", "reset"], help="status: print it; reset: clear it now")
    return parser


def paid_credit(action: str, env, stdout) -> int:
    """`socialrec paid-credit status|reset` against the deployment's Redis and paid account."""
    from socialrec_pipeline.defs.resources import paid_account_scope
    from socialrec_pipeline.recording.locks import PaidCreditGuard, open_redis

    scope = paid_account_scope(env.get("APIFY_BASE_URL") or "https://api.apify.com", env.get("APIFY_TOKEN") or None)
    guard = PaidCreditGuard(open_redis(env.get("REDIS_URL") or "redis://127.0.0.1:6379/0"), scope=scope)
    state = guard.state()
    if action == "reset":
        cleared = guard.clear()
        print("paid credit guard cleared: paid calls run again" if cleared else "paid credit guard was clear", file=stdout)
        return 0
    print(f"paid credit guard {state.describe()}" if state else "paid credit guard clear", file=stdout)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    if args.command == "route":
        from socialrec_pipeline.routing.cli import run_route

        return run_route(args.urls, stdin=sys.stdin, stdout=sys.stdout)
    if args.command == "sandbox":
        from socialrec_pipeline.sandbox import demo

        if args.sandbox_command == "serve":
            return demo.serve(sys.stdout, port_base=args.port_base, env_file=args.env_file)
        return demo.publish(sys.stdout, rabbitmq_url=args.rabbitmq_url, env=args.env)
    if args.command == "paid-credit":
        return paid_credit(args.action, os.environ, sys.stdout)
    raise AssertionError(f"unhandled command {args.command}")


if __name__ == "__main__":
    raise SystemExit(main())
