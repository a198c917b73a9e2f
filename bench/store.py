"""Store throughput: contents inserts/s, account upserts/s, and find_existing_addresses latency.

Runs on the embedded SecantusDB and, when MONGODB_URI is set, on that server too. The last line
is always `find_existing_1000_ms: <number>` for the embedded server (the default deployment).

    .venv/bin/python bench/store.py [--contents 2000] [--accounts 2000] [--tokens 20000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid
from collections.abc import Callable

from pymongo.database import Database

from socialrec_pipeline.domain.enums import ContentSubtype, FetchStatus, Platform
from socialrec_pipeline.domain.models import Account, Content, SourceUrlEntry, Token, utc_now
from socialrec_pipeline.store import Store
from socialrec_pipeline.store.client import open_client, open_database
from socialrec_pipeline.store.collections import TOKENS, collection
from socialrec_pipeline.store.embedded import embedded_mongo

#: Rows per write call: about one social graph's worth (tweet + quoted original + 2 authors).
GRAPH_BATCH = 4


def _contents(n: int) -> list[Content]:
    now = utc_now()
    run = uuid.uuid4().hex[:8]
    return [
        Content.of(
            platform=Platform.X,
            subtype=ContentSubtype.TWEET,
            platform_key=f"{run}-{i}",
            source_urls=[
                SourceUrlEntry(url=f"https://x.com/kol/status/{run}{i}", status=FetchStatus.OK, observed_at=now)
            ],
            observed_at=now,
            metrics={"viewCount": i, "likeCount": i // 3},
        )
        for i in range(n)
    ]


def _accounts(n: int) -> list[Account]:
    now = utc_now()
    run = uuid.uuid4().hex[:8]
    return [
        Account.of(platform=Platform.X, platform_key=f"{run}-{i}", observed_at=now, handle=f"kol{i}", followers=i)
        for i in range(n)
    ]


def _rate(count: int, batches: list, write: Callable[[list], object]) -> float:
    started = time.perf_counter()
    for batch in batches:
        write(batch)
    return count / (time.perf_counter() - started)


def _chunks(rows: list, size: int) -> list[list]:
    return [rows[i : i + size] for i in range(0, len(rows), size)]


def run(db: Database, label: str, n_contents: int, n_accounts: int, n_tokens: int) -> float:
    store = Store(db)
    store.ensure_indexes()

    contents = _contents(n_contents)
    contents_rate = _rate(n_contents, _chunks(contents, GRAPH_BATCH), store.contents.insert_many)

    accounts = _accounts(n_accounts)
    new_rate = _rate(n_accounts, _chunks(accounts, GRAPH_BATCH // 2), store.accounts.upsert_many)
    # Re-observation: every key exists, so each call is an upsert that matches plus one read.
    again_rate = _rate(n_accounts, _chunks(accounts, GRAPH_BATCH // 2), store.accounts.upsert_many)

    now = utc_now()
    run_id = uuid.uuid4().hex[:8]
    addresses = [f"{run_id}{i:08d}pump" for i in range(n_tokens)]
    tokens = collection(db, TOKENS)
    for chunk in _chunks(addresses, 1000):
        tokens.insert_many([Token.of(address=a, discovered_at=now).to_document() for a in chunk])
    # Half of the asked addresses exist, spread over the collection; half are unknown.
    asked = addresses[:: max(1, n_tokens // 500)][:500] + [f"{run_id}-missing-{i}" for i in range(500)]
    timings = []
    for _ in range(7):
        started = time.perf_counter()
        found = store.tokens.find_existing_addresses(asked)
        timings.append((time.perf_counter() - started) * 1000)
    assert len(found) == 500, len(found)
    find_ms = statistics.median(timings)

    print(f"[{label}] contents_inserts_per_s: {contents_rate:.0f} (batches of {GRAPH_BATCH})")
    print(f"[{label}] account_upserts_per_s_new: {new_rate:.0f} (batches of {GRAPH_BATCH // 2})")
    print(f"[{label}] account_upserts_per_s_existing: {again_rate:.0f}")
    print(f"[{label}] find_existing_1000_ms_median_of_7: {find_ms:.1f} (against {n_tokens} tokens)")
    return find_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contents", type=int, default=2000)
    parser.add_argument("--accounts", type=int, default=2000)
    parser.add_argument("--tokens", type=int, default=20000)
    args = parser.parse_args()
    sizes = (args.contents, args.accounts, args.tokens)

    uri = os.environ.get("MONGODB_URI")
    if uri:
        client = open_client(uri)
        name = f"bench_store_{uuid.uuid4().hex[:8]}"
        try:
            run(open_database(client, name), "MONGODB_URI", *sizes)
        finally:
            client.drop_database(name)
            client.close()

    with embedded_mongo() as embedded_uri:
        client = open_client(embedded_uri)
        embedded_ms = run(open_database(client, "bench_store"), "embedded", *sizes)
        client.close()
    print(f"find_existing_1000_ms: {embedded_ms:.1f}")


if __name__ == "__main__":
    main()
