"""Integrity checks on a store holding 100,000 token_links (and the rows and markers they imply).

Seeds a consistent graph — `--tokens` tokens, each with a marker, one content, one account and
`--links-per-token` links (depth 0 and 1) — then runs every check of store/integrity.py once and
prints the seconds each took. The last line is the total: `integrity_check_s_100k_links: N`.
Runs on the embedded SecantusDB unless MONGODB_URI is set.

    .venv/bin/python bench/integrity.py [--tokens 20000] [--links-per-token 5]
"""

from __future__ import annotations

import argparse
import os
import time
import uuid
from datetime import UTC, datetime, timedelta

from bson import ObjectId

from socialrec_pipeline.store import Store, integrity
from socialrec_pipeline.store.client import open_client, open_database
from socialrec_pipeline.store.embedded import configured_or_embedded_mongo
from socialrec_pipeline.stream.inbox import RecordInbox

BATCH = 5_000


def seed(db, tokens: int, links_per_token: int, days: int = 1) -> int:
    """`days` > 1 spreads token i (its rows and links) over that many days back (bench/signals.py)."""
    start = datetime.now(UTC) - timedelta(days=1)
    run = uuid.uuid4().hex[:6]
    contents, accounts, markers, links = [], [], [], []
    for i in range(tokens):
        at = start - timedelta(days=i % days)
        address = f"{run}Tok{i:07d}"
        url = f"https://x.com/kol{run}{i}/status/{i}"
        content_id, account_id = ObjectId(), ObjectId()
        contents.append(
            {
                "_id": content_id,
                "platform": "x",
                "subtype": "tweet",
                "platform_key": f"{run}{i}",
                "source_urls": [{"url": url, "status": "ok", "observed_at": at}],
                "observed_at": at,
                "creator_id": account_id,
                "created_at": at,
                "updated_at": at,
            }
        )
        accounts.append(
            {
                "_id": account_id,
                "platform": "x",
                "platform_key": f"{run}a{i}",
                "observed_at": at,
                "created_at": at,
                "updated_at": at,
            }
        )
        markers.append(
            {
                "address": address,
                "discovered_at": at,
                "fingerprints": [],
                "created_at": at,
                "updated_at": at,
                "social_urls": [
                    {"url": url, "raw_url": url, "platform": "x", "status": "ok", "attempted_at": at, "attempts": 1}
                ],
            }
        )
        for j in range(links_per_token):
            kind, object_id = ("contents", content_id) if j % 2 == 0 else ("accounts", account_id)
            links.append(
                {
                    "token_address": address,
                    "object": kind,
                    "object_id": object_id,
                    "source_url": url,
                    "platform": "x",
                    "link_depth": 0 if j < 2 else 1,
                    "linked_at": at,
                    "observed_at": at,
                    "created_at": at,
                    "updated_at": at,
                }
            )
    for name, docs in (("contents", contents), ("accounts", accounts), ("tokens", markers), ("token_links", links)):
        for i in range(0, len(docs), BATCH):
            db[name].insert_many(docs[i : i + BATCH], ordered=False)
    return len(links)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tokens", type=int, default=20_000)
    parser.add_argument("--links-per-token", type=int, default=5)
    args = parser.parse_args()
    with configured_or_embedded_mongo(os.environ.get("MONGODB_URI")) as uri:
        client = open_client(uri)
        name = f"bench_integrity_{uuid.uuid4().hex[:8]}"
        headline = ""
        db = open_database(client, name)
        try:
            Store(db).ensure_indexes()
            RecordInbox(db).ensure_indexes()
            started = time.perf_counter()
            links = seed(db, args.tokens, args.links_per_token)
            print(
                f"seeded {links} links, {args.tokens} tokens/contents/accounts in {time.perf_counter() - started:.1f} s"
            )
            total = 0.0
            for check, (_, fn) in integrity.ALL_CHECKS.items():
                started = time.perf_counter()
                outcome = fn(db)
                took = time.perf_counter() - started
                total += took
                assert outcome.passed, outcome.summary()
                print(f"{check}: {took:.2f} s ({outcome.coverage})")
            print(
                f"server: {'MONGODB_URI' if os.environ.get('MONGODB_URI') else 'embedded SecantusDB'}; "
                "all checks passed"
            )
            headline = f"integrity_check_s_{links // 1000}k_links: {total:.1f}"
        finally:
            if os.environ.get("MONGODB_URI"):  # the embedded server's data directory goes with it
                client.drop_database(name)
            client.close()
    print(headline, flush=True)


if __name__ == "__main__":
    main()
