"""The derived signals (SPEC §11) on the 100,000-link data set of bench/integrity.py.

Seeds that set (`--tokens` tokens, each with a marker, a content, an account and `--links-per-token`
links) spread over `--days` days, then adds what the signals read: an `account_created_at` on every
account (ages 0–399 days), a metric series of three points on every content, and a `domain:`
fingerprint shared by groups of four tokens. Then, in one run and on the same server:

- `scan_s_100k_links:` one plain full read of token_links (the reference);
- `signals_day_s_100k_links:` one day partition of content_link_stats + token_signals (the middle
  day): goal ≤ 0.5 × the scan, which it can only meet by reading through indexes;
- `clusters_s_100k_links:` one token_clusters partition (all tokens up to the last day): goal ≤ 3 ×
  the scan.

`--days 1` puts every token on one day: the day partition then reads the whole set and the first
goal is breached (the figure is not a constant). Runs on the embedded SecantusDB unless
MONGODB_URI is set.

    .venv/bin/python bench/signals.py [--tokens 20000] [--links-per-token 5] [--days 30]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from integrity import BATCH, seed  # noqa: E402  (bench/integrity.py: the same data set)

from socialrec_pipeline.signals.clusters import compute_clusters  # noqa: E402
from socialrec_pipeline.signals.link_stats import compute_link_stats  # noqa: E402
from socialrec_pipeline.signals.token_signals import compute_token_signals  # noqa: E402
from socialrec_pipeline.signals.window import DayWindow  # noqa: E402
from socialrec_pipeline.store import Store  # noqa: E402
from socialrec_pipeline.store.client import open_client, open_database  # noqa: E402
from socialrec_pipeline.store.embedded import configured_or_embedded_mongo  # noqa: E402
from socialrec_pipeline.store.signals import SignalStore  # noqa: E402


def _rewrite(db, name: str, docs: list[dict]) -> None:
    """Replace a collection's rows with `docs` (the same `_id`s): dropped and inserted again, which
    the embedded server does far faster than one update per row; its indexes are created again."""
    db[name].drop()
    Store(db).ensure_indexes()
    for i in range(0, len(docs), BATCH):
        db[name].insert_many(docs[i : i + BATCH], ordered=False)


def enrich(db) -> None:
    """Account ages, metric series and shared domains on top of the integrity data set (untimed)."""
    accounts = list(db.accounts.find({}))
    for i, a in enumerate(accounts):
        a["account_created_at"] = a["created_at"] - timedelta(days=i % 400)
    _rewrite(db, "accounts", accounts)
    contents = list(db.contents.find({}, {"_id": 1, "created_at": 1}))
    series = [
        {
            "object": "contents",
            "object_id": c["_id"],
            "platform": "x",
            "points": [
                {"at": c["created_at"] + timedelta(hours=h), "metrics": {"likeCount": 10 + h * (i % 50)}}
                for h in (0, 6, 12)
            ],
        }
        for i, c in enumerate(contents)
    ]
    for i in range(0, len(series), BATCH):
        db.metric_series.insert_many(series[i : i + BATCH], ordered=False)
    tokens = list(db.tokens.find({}).sort("address", 1))
    for i, t in enumerate(tokens):
        t["fingerprints"] = [f"domain:site{i // 4}.io"]
    _rewrite(db, "tokens", tokens)


class TimedWrites(SignalStore):
    """The store the partitions use, with the time of their writes kept apart from their reads: the
    goals are about reading through indexes, and an update costs the embedded server far more than a
    read (it rewrites every index entry of the row, 8 on contents), so the split says which dominates."""

    write_s = 0.0

    def write_link_stats(self, stats: dict[Any, dict[str, Any]]) -> int:
        started = time.perf_counter()
        try:
            return super().write_link_stats(stats)
        finally:
            self.write_s += time.perf_counter() - started

    def write_token_signals(self, docs: Sequence[dict[str, Any]]) -> int:
        started = time.perf_counter()
        try:
            return super().write_token_signals(docs)
        finally:
            self.write_s += time.perf_counter() - started

    def replace_clusters(self, cutoff: datetime, docs: Sequence[dict[str, Any]]) -> int:
        started = time.perf_counter()
        try:
            return super().replace_clusters(cutoff, docs)
        finally:
            self.write_s += time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tokens", type=int, default=20_000)
    parser.add_argument("--links-per-token", type=int, default=5)
    parser.add_argument("--days", type=int, default=30)
    args = parser.parse_args()
    lines: list[str] = []
    with configured_or_embedded_mongo(os.environ.get("MONGODB_URI")) as uri:
        # a 5,000-row seed batch can take longer than the default 30 s socket timeout on a loaded
        # machine. (At load 30+ a seed batch was still once retried by the driver after it had been
        # applied and failed on duplicate keys: rerun the bench when that happens.)
        client = open_client(uri, timeout_ms=60_000)
        name = f"bench_signals_{uuid.uuid4().hex[:8]}"
        db = open_database(client, name)
        try:
            Store(db).ensure_indexes()
            started = time.perf_counter()
            links = seed(db, args.tokens, args.links_per_token, days=args.days).links
            enrich(db)
            print(f"seeded {links} links, {args.tokens} tokens over {args.days} day(s) in "
                  f"{time.perf_counter() - started:.1f} s")
            newest = max(d["discovered_at"] for d in db.tokens.find({}, {"discovered_at": 1}).sort(
                "discovered_at", -1).limit(1))
            last_day = DayWindow.containing(newest)
            middle = DayWindow.of(last_day.day - timedelta(days=args.days // 2))
            reads = TimedWrites(db)

            started = time.perf_counter()
            scanned = sum(1 for _ in db.token_links.find({}))
            scan = time.perf_counter() - started
            print(f"scan: {scanned} token_links in {scan:.2f} s")

            started = time.perf_counter()
            stats = compute_link_stats(reads, middle)
            signals = compute_token_signals(reads, middle)
            day = time.perf_counter() - started
            day_writes, reads.write_s = reads.write_s, 0.0
            day_reads = day - day_writes
            print(f"day {middle.day}: {len(stats.stats)} link_stats, {len(signals.docs)} token_signals in {day:.2f} s "
                  f"(reads {day_reads:.2f} s = {day_reads / scan:.2f}x the scan, writes {day_writes:.2f} s)")

            started = time.perf_counter()
            clusters = compute_clusters(reads, last_day)
            took = time.perf_counter() - started
            figures = clusters.figures()
            print(f"clusters as of {last_day.day}: {figures['clusters']} clusters of {figures['tokens']} tokens "
                  f"(largest {figures['largest_cluster']}) in {took:.2f} s (writes {reads.write_s:.2f} s)")
            print(f"server: {'MONGODB_URI' if os.environ.get('MONGODB_URI') else 'embedded SecantusDB'}; "
                  f"day/scan = {day / scan:.2f} (goal ≤ 0.5), clusters/scan = {took / scan:.2f} (goal ≤ 3)")
            k = links // 1000
            lines = [
                f"scan_s_{k}k_links: {scan:.2f}",
                f"signals_day_s_{k}k_links: {day:.2f}",
                f"clusters_s_{k}k_links: {took:.2f}",
            ]
        finally:
            if os.environ.get("MONGODB_URI"):
                client.drop_database(name)
            client.close()
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
