"""Retry selection: the cost of picking the `limit` URLs waiting longest, as the queue grows.

Seeds markers whose URLs are all due (two per token, half `unsupported`, half `error`, random
`attempted_at`), then times `find_due_urls([status], cutoff, limit)` — the retry run's selection —
on the embedded SecantusDB (and on MONGODB_URI when set). The selection asks for about `limit`
documents through `idx_tokens_oldest_<status>` (a sorted range with a limit); on MongoDB that reads
about `limit` index entries. The embedded server answers every range query (hinted or not) in time
that grows with the collection, so there the figure grows with the number of due tokens. The last lines
are `retry_select_50_of_largest_ms: <p50 on the embedded server at the largest size>` and
`retry_queue_probe_of_largest_ms: <p50>`, what every retry run pays first to find markers whose
queue field is missing (`backfill_oldest_attempt` on an up-to-date database: one empty index range
per retry partition).

    .venv/bin/python bench/retry_queue.py [--sizes 500,4000] [--limit 50] [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
import uuid
from datetime import UTC, datetime, timedelta

from socialrec_pipeline.domain.enums import FetchStatus
from socialrec_pipeline.domain.models import SocialUrlRecord, Token
from socialrec_pipeline.store import Store
from socialrec_pipeline.store.client import open_client, open_database
from socialrec_pipeline.store.embedded import embedded_mongo

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def seed(store: Store, tokens: int, rng: random.Random) -> None:
    run = uuid.uuid4().hex[:8]
    for i in range(tokens):
        records = [
            SocialUrlRecord(
                url=f"https://x.com/a/status/{run}{i}{j}", raw_url="x", status=status,
                attempted_at=NOW - timedelta(minutes=rng.randint(61, 60 * 24 * 30)), attempts=0,
            )
            for j, status in enumerate((FetchStatus.UNSUPPORTED, FetchStatus.ERROR))
        ]
        store.tokens.write_marker(Token.of(address=f"So{run}{i}", discovered_at=NOW, social_urls=records))


def time_selection(store: Store, limit: int, repeat: int) -> float:
    cutoff = NOW - timedelta(minutes=60)
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        picked = store.tokens.find_due_urls([FetchStatus.UNSUPPORTED], cutoff, limit)
        samples.append((time.perf_counter() - started) * 1000)
        assert sum(len(urls) for _, urls in picked) == limit
    return statistics.median(samples)


def time_probe(store: Store, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        assert store.tokens.backfill_oldest_attempt() == 0
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def time_plain_in(store: Store, limit: int, repeat: int) -> float:
    """For comparison: the first `limit` documents of the previous selection (a pure `$in` on the
    status index, in index order — cheap, but unfair: the same tokens came first every run)."""
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        cursor = store.db.tokens.find({"social_urls.status": {"$in": [FetchStatus.UNSUPPORTED.value]}})
        cursor = cursor.batch_size(limit)
        docs = [doc for _, doc in zip(range(limit), cursor, strict=False)]
        cursor.close()
        samples.append((time.perf_counter() - started) * 1000)
        assert len(docs) == limit
    return statistics.median(samples)


def measure(uri: str, label: str, sizes: list[int], limit: int, repeat: int) -> tuple[float, float]:
    client = open_client(uri)
    name = f"bench_retry_{uuid.uuid4().hex[:8]}"
    rng = random.Random(7)
    last = probe = 0.0
    try:
        store = Store(open_database(client, name))
        store.ensure_indexes()
        seeded = 0
        for size in sizes:
            seed(store, size - seeded, rng)
            seeded = size
            last = time_selection(store, limit, repeat)
            plain = time_plain_in(store, limit, repeat)
            probe = time_probe(store, repeat)
            print(f"{label}: {size} due tokens ({size} unsupported URLs): select {limit} oldest p50 {last:.1f} ms "
                  f"(first {limit} of the plain $in, unordered: {plain:.1f} ms); "
                  f"missing-queue probe p50 {probe:.1f} ms")
    finally:
        client.drop_database(name)
        client.close()
    return last, probe


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="500,4000")
    parser.add_argument("--limit", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    if os.environ.get("MONGODB_URI"):
        measure(os.environ["MONGODB_URI"], "MONGODB_URI", sizes, args.limit, args.repeat)
    with embedded_mongo() as uri:
        headline, probe = measure(uri, "embedded", sizes, args.limit, args.repeat)
    print(f"retry_select_{args.limit}_of_largest_ms: {headline:.1f}")
    print(f"retry_queue_probe_of_largest_ms: {probe:.1f}")


if __name__ == "__main__":
    main()
