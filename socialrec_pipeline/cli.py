"""`socialrec`: operator commands. Each subcommand is a thin shell over a service."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="socialrec", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    route = sub.add_parser("route", help="print how URLs are routed, one JSON object per URL")
    route.add_argument("urls", nargs="*", help="URLs to route; read from stdin, one per line, when none")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    if args.command == "route":
        from socialrec_pipeline.routing.cli import run_route

        return run_route(args.urls, stdin=sys.stdin, stdout=sys.stdout)
    raise AssertionError(f"unhandled command {args.command}")


if __name__ == "__main__":
    raise SystemExit(main())
