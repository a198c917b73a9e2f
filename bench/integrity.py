"""Integrity checks on a store holding 100,000 token_links, with known violations planted.

Seeds a consistent graph — `--tokens` tokens, each with a marker, one content, one account and
`--links-per-token` links (depth 0 and 1) — plus every other collection a check reads: venues,
metric series (one per account), `record_inbox` entries in every state, and markers holding a URL
in every FetchStatus. Then plants `--planted` violations for each check (the unique indexes a
planted duplicate would hit are dropped first), runs every check of store/integrity.py once and
prints, per check, the seconds it took and the violations it found against the number planted.
Exits 1 unless every check found exactly its planted violations and read everything. The last
line is the total: `integrity_check_s_100k_links: N`. Runs on the embedded SecantusDB unless
MONGODB_URI is set.

    .venv/bin/python bench/integrity.py [--tokens 20000] [--links-per-token 5] [--planted 3]
    .venv/bin/python bench/integrity.py --self-test [--tokens 300]

`--self-test` then plants one more violation per check, unannounced, and exits non-zero unless
every check's row reports the breach (found one more than it was told to expect); last line
`bench_self_test: N/N rows detect their breach`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bson import ObjectId

from socialrec_pipeline.domain.enums import FetchStatus
from socialrec_pipeline.store import Store, integrity
from socialrec_pipeline.store.client import open_client, open_database
from socialrec_pipeline.store.embedded import configured_or_embedded_mongo
from socialrec_pipeline.store.tokens import OLDEST_ATTEMPT, derive_oldest_attempt
from socialrec_pipeline.stream.inbox import RecordInbox

BATCH = 5_000
INBOX_STATES = sorted(integrity.INBOX_STATES)


@dataclass
class Seeded:
    links: int
    #: (address, url, content_id, account_id) of the first tokens: what planted violations hang off.
    graphs: list[tuple[str, str, ObjectId, ObjectId]]


def seed(db, tokens: int, links_per_token: int, days: int = 1) -> Seeded:
    """`days` > 1 spreads token i (its rows and links) over that many days back (bench/signals.py)."""
    start = datetime.now(UTC) - timedelta(days=1)
    run = uuid.uuid4().hex[:6]
    contents, accounts, markers, links = [], [], [], []
    graphs: list[tuple[str, str, ObjectId, ObjectId]] = []
    venues, series, inbox = [], [], []
    statuses = [str(s) for s in FetchStatus]
    for i in range(tokens):
        at = start - timedelta(days=i % days)
        address = f"{run}Tok{i:07d}"
        url = f"https://x.com/kol{run}{i}/status/{i}"
        content_id, account_id = ObjectId(), ObjectId()
        if len(graphs) < 64:
            graphs.append((address, url, content_id, account_id))
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
        # Besides its linked `ok` URL, a marker holds one URL in another status (every status in turn):
        # no links for it, as the recording leaves it.
        other = statuses[i % len(statuses)]
        other_url = f"https://t.me/{run}ch{i}"
        markers.append(
            {
                "address": address,
                "discovered_at": at,
                "fingerprints": [],
                "created_at": at,
                "updated_at": at,
                "social_urls": [
                    {"url": url, "raw_url": url, "platform": "x", "status": "ok", "attempted_at": at, "attempts": 1},
                    {"url": other_url, "raw_url": other_url, "platform": "tg", "status": other, "attempted_at": at,
                     "attempts": 1},
                ],
                # the retry queue as every write of social_urls keeps it (SPEC §8)
                OLDEST_ATTEMPT: derive_oldest_attempt([("ok", at), (other, at)]),
            }
        )  # fmt: skip
        venues.append(
            {"platform": "tg", "subtype": "channel", "platform_key": f"{run}ch{i}", "observed_at": at,
             "created_at": at, "updated_at": at}
        )  # fmt: skip
        series.append(
            {"object": "accounts", "object_id": account_id, "platform": "x", "linked_at": at,
             "points": [{"at": at - timedelta(hours=h), "metrics": {"followers": h}} for h in (3, 2, 1)],
             "last_point_at": at - timedelta(hours=1), "refresh_at": at - timedelta(hours=1)}
        )  # fmt: skip
        if i % 10 == 0:  # entries in every state, none stuck unnoticed
            state = INBOX_STATES[(i // 10) % len(INBOX_STATES)]
            # open entries heard from just now; the surfaced ones (stuck, idle) long ago, which is allowed
            heard = at - timedelta(days=3) if state in integrity.INBOX_SURFACED_STATES else datetime.now(UTC)
            inbox.append(
                {"token_address": f"{run}Wait{i:07d}", "state": state, "generation": 1,
                 "received_at": heard, "last_event_at": heard}
            )  # fmt: skip
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
    for name, docs in (
        ("contents", contents), ("accounts", accounts), ("tokens", markers), ("token_links", links),
        ("venues", venues), ("metric_series", series), (integrity.INBOX, inbox),
    ):  # fmt: skip
        for i in range(0, len(docs), BATCH):
            db[name].insert_many(docs[i : i + BATCH], ordered=False)
    return Seeded(len(links), graphs)


#: The unique indexes a planted duplicate would hit (the breach the duplicate checks are for).
PLANT_DROPS = {
    "contents": ["uniq_contents_source_url", "uniq_contents_platform_key"],
    "accounts": ["uniq_accounts_platform_key"],
    "venues": ["uniq_venues_platform_key"],
}


def plant(db, graphs: list[tuple[str, str, ObjectId, ObjectId]], k: int, tag: str) -> dict[str, int]:
    """`k` violations of every check (`tag` keeps each round's keys apart); returns check → planted."""
    for name, indexes in PLANT_DROPS.items():
        existing = db[name].index_information()
        for index in indexes:
            if index in existing:
                db[name].drop_index(index)
    at = datetime.now(UTC) - timedelta(days=1)
    stale = datetime.now(UTC) - timedelta(days=3)

    def content(key: str, url: str) -> dict:
        return {"platform": "x", "subtype": "tweet", "platform_key": key,
                "source_urls": [{"url": url, "status": "ok", "observed_at": at}], "observed_at": at}  # fmt: skip

    def link(address: str, object_id, url: str, *, kind: str = "contents", depth: int = 0) -> dict:
        return {"token_address": address, "object": kind, "object_id": object_id, "source_url": url,
                "platform": "x", "link_depth": depth, "linked_at": at, "observed_at": at}  # fmt: skip

    rows: dict[str, list[dict]] = {name: [] for name in ("contents", "accounts", "venues", "token_links",
                                                          "metric_series", integrity.INBOX)}  # fmt: skip
    for n in range(k):
        address, url, content_id, account_id = graphs[n]
        # a second row holding a source URL another row has; a second row with another's platform key
        rows["contents"].append(content(f"{tag}dupurl{n}", url))
        first_key = db.contents.find_one({"_id": content_id}, {"platform_key": 1})["platform_key"]
        rows["contents"].append(content(first_key, f"https://x.com/{tag}dupkey/status/{n}"))
        rows["accounts"].append({"platform": "x", "observed_at": at})  # no platform_key
        rows["venues"].append({"platform": "tg", "platform_key": "", "observed_at": at})  # an empty one
        rows["token_links"].append(link(address, ObjectId(), url))  # points at no row
        rows["token_links"].append(link(address, account_id, url, kind="accounts", depth=7))  # depth out of range
        # a link for a URL whose marker status allows none
        error_url = f"https://x.com/{tag}err/status/{n}"
        db.tokens.update_one(
            {"address": address},
            {"$push": {"social_urls": {"url": error_url, "raw_url": error_url, "platform": "x", "status": "error",
                                       "attempted_at": at, "attempts": 1}}},
        )  # fmt: skip
        rows["token_links"].append(link(address, content_id, error_url))
        rows["token_links"].append(link(f"{tag}NoMarker{n}", content_id, url))  # a token without a marker
        bogus_address = graphs[k + n][0]  # a marker with a status that is not a FetchStatus (its unlinked URL)
        db.tokens.update_one({"address": bogus_address}, {"$set": {"social_urls.1.status": f"{tag}bogus"}})
        # The two markers above keep an exact retry queue (they plant other checks' violations) ...
        for changed in (address, bogus_address):
            doc = db.tokens.find_one({"address": changed}, {"social_urls": 1})
            queue = derive_oldest_attempt((e.get("status"), e.get("attempted_at")) for e in doc["social_urls"])
            db.tokens.update_one({"address": changed}, {"$set": {OLDEST_ATTEMPT: queue}})
        # ... and this one's queue is wrong: its due time no longer matches its URLs.
        db.tokens.update_one({"address": graphs[2 * k + n][0]}, {"$set": {OLDEST_ATTEMPT: {"error": stale}}})
        rows["metric_series"].append(
            {"object": "accounts", "object_id": ObjectId(), "platform": "x",
             "points": [{"at": at}, {"at": at - timedelta(hours=1)}]}  # out of order
        )  # fmt: skip
        rows[integrity.INBOX].append(
            {"token_address": f"{tag}Forgotten{n}", "state": "pending", "generation": 1, "received_at": stale,
             "last_event_at": stale}
        )  # fmt: skip
    for name, docs in rows.items():
        db[name].insert_many(docs)
    return {
        "contents_unique_source_url": k,
        "contents_unique_platform_key": k,
        "accounts_identity_keys": k,
        "venues_identity_keys": k,
        "links_point_at_rows": k,
        "link_depth": k,
        "links_have_linkable_status": k,
        "linked_tokens_have_markers": k,
        "marker_statuses_valid": k,
        "retry_queue_exact": k,
        "metric_series_points": k,
        "inbox_entries_moving": k,
    }


def run_checks(db, expected: dict[str, int]) -> tuple[float, list[str]]:
    """Every check once: prints its row; returns the total seconds and the checks whose row is a breach
    (found other than planted, or did not read everything)."""
    total = 0.0
    breached = []
    for check, (_, fn) in integrity.ALL_CHECKS.items():
        started = time.perf_counter()
        outcome = fn(db)
        took = time.perf_counter() - started
        total += took
        want = expected[check]
        ok = outcome.violations == want and outcome.complete
        if not ok:
            breached.append(check)
        verdict = "ok" if ok else "BREACH"
        print(
            f"{check}: {took:.2f} s; found {outcome.violations} of {want} planted "
            f"({'read everything' if outcome.complete else 'NOT everything read'}) {verdict}; {outcome.coverage}",
            flush=True,
        )
    return total, breached


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=20_000)
    parser.add_argument("--links-per-token", type=int, default=5)
    parser.add_argument("--planted", type=int, default=3, help="violations planted per check")
    parser.add_argument("--self-test", action="store_true", help="then plant one more each, unannounced")
    args = parser.parse_args()
    if args.tokens < 64 or 3 * (args.planted + 1) > 64:
        parser.error("--tokens must be at least 64 and --planted at most 20 (three markers per planted violation)")
    exit_code = 0
    with configured_or_embedded_mongo(os.environ.get("MONGODB_URI")) as uri:
        client = open_client(uri)
        name = f"bench_integrity_{uuid.uuid4().hex[:8]}"
        headline = ""
        db = open_database(client, name)
        try:
            Store(db).ensure_indexes()
            RecordInbox(db).ensure_indexes()
            started = time.perf_counter()
            seeded = seed(db, args.tokens, args.links_per_token)
            expected = plant(db, seeded.graphs, args.planted, "p")
            print(
                f"seeded {seeded.links} links, {args.tokens} tokens/contents/accounts/venues/series, "
                f"{args.planted} violations planted per check, in {time.perf_counter() - started:.1f} s"
            )
            total, breached = run_checks(db, expected)
            print(
                f"server: {'MONGODB_URI' if os.environ.get('MONGODB_URI') else 'embedded SecantusDB'}; "
                + ("every check found exactly its planted violations" if not breached else f"BREACH: {breached}")
            )
            exit_code = 1 if breached else 0
            headline = f"integrity_check_s_{seeded.links // 1000}k_links: {total:.1f}"
            if args.self_test:
                print("self-test: one more violation per check, the rows still expect the planted number")
                plant(db, seeded.graphs[3 * args.planted :], 1, "s")
                _, breached_now = run_checks(db, expected)
                detected = len(breached_now)
                headline = f"bench_self_test: {detected}/{len(expected)} rows detect their breach"
                exit_code = 0 if detected == len(expected) and not breached else 1
        finally:
            if os.environ.get("MONGODB_URI"):  # the embedded server's data directory goes with it
                client.drop_database(name)
            client.close()
    print(headline, flush=True)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
