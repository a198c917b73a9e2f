"""`tokens`: the recording marker and the per-URL results (`social_urls[]`).

The retry queue lives in the same document: `oldest_attempt.<status>` holds the oldest
`attempted_at` among the token's URLs in that status, one field per retry partition, `NO_ATTEMPT`
(9999-01-01) when the token has none. Each field has its own plain index
(`idx_tokens_oldest_<status>`), so the retry selection reads tokens oldest attempt first with an
exact-prefix range scan, and a token whose URLs were just attempted moves to the back: nothing
starves.

The queue is the database's truth about `social_urls`, not a second truth (SPEC §8): every
update that writes `social_urls` sets `queue_fields()` of the array it writes in the same
update — the marker in its upsert, a per-URL result or a merge through `_change_urls`, a
compare-and-set on the array it read. A token whose field is missing (written before the queue
existed) is found through the same indexes (`oldest_attempt.<status>: null`) and brought up to
date by `backfill_oldest_attempt`, which every retry run calls first; `check_retry_queue_exact`
(store/integrity.py) proves the invariant on every token.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from pymongo import DESCENDING, UpdateOne
from pymongo.database import Database

from socialrec_pipeline.domain.enums import RETRY_PARTITIONS, FetchStatus
from socialrec_pipeline.domain.models import SocialUrlRecord, Token, utc_now
from socialrec_pipeline.store.collections import TOKENS, collection
from socialrec_pipeline.store.durability import DurableWrites

log = logging.getLogger(__name__)

#: Fields a marker write may set only when it creates the document. `discovered_at` is the
#: reconcile/backfill entry point; `fingerprints` / `web` belong to the (separate) web work.
_INSERT_ONLY = ("_id", "discovered_at", "fingerprints", "web")

#: How many documents one cursor batch of the retry selection pulls.
_SCAN_BATCH = 200

#: The derived retry-queue field (see the module docstring); never part of the `Token` model.
OLDEST_ATTEMPT = "oldest_attempt"
#: `oldest_attempt.<status>` of a token with no URL in that status: later than any cutoff, so the
#: token is never selected for it, and present, so a missing field always means "not derived yet".
NO_ATTEMPT = datetime(9999, 1, 1, tzinfo=UTC)
_FAR_FUTURE = NO_ATTEMPT
#: Compare-and-set rounds of `_change_urls` before it gives up (callers hold the token lock, so a
#: second round is already rare).
_CAS_ROUNDS = 5
#: Addresses per batch when bringing old markers' queue up to date.
_BACKFILL_BATCH = 500


#: What a change of `social_urls` says (see `TokenRepository._change_urls`): the array it leaves,
#: the update that makes it so, and that update's array filters.
_UrlsChange = tuple[list[SocialUrlRecord], dict[str, Any], list[dict[str, Any]] | None]


def oldest_attempt_index(status: FetchStatus | str) -> str:
    return f"idx_tokens_oldest_{FetchStatus(status).value}"


def derive_oldest_attempt(urls: Iterable[tuple[object, object]]) -> dict[str, datetime]:
    """The one derivation of the retry queue from `(status, attempted_at)` of a token's URLs: per
    retry partition, the oldest `attempted_at` in that status, `NO_ATTEMPT` when there is none.
    Pairs that are not a known status and a datetime are ignored (the integrity check reads raw
    documents)."""
    oldest = {status.value: NO_ATTEMPT for status in RETRY_PARTITIONS}
    for status, attempted_at in urls:
        key = str(status)
        if key in oldest and isinstance(attempted_at, datetime) and attempted_at < oldest[key]:
            oldest[key] = attempted_at
    return oldest


def oldest_attempts(records: Iterable[SocialUrlRecord]) -> dict[str, datetime]:
    """`oldest_attempt` of a URL list (see `derive_oldest_attempt`)."""
    return derive_oldest_attempt((r.status, r.attempted_at) for r in records)


def queue_fields(records: Iterable[SocialUrlRecord]) -> dict[str, Any]:
    """What every update that writes `social_urls` also sets: the queue derived from the array it
    writes (SPEC §8: the derived queue is kept exact by every write)."""
    return {OLDEST_ATTEMPT: oldest_attempts(records)}


def _token(doc: dict[str, Any]) -> Token:
    doc = dict(doc)
    doc.pop(OLDEST_ATTEMPT, None)
    return Token.from_document(doc)


class TokenRepository:
    def __init__(self, db: Database[dict[str, Any]]) -> None:
        self._col = collection(db, TOKENS)
        self._durable = DurableWrites(self._col)

    def exists(self, address: str) -> bool:
        return self._col.find_one({"address": address}, {"_id": 1}) is not None

    def find_by_address(self, address: str) -> Token | None:
        doc = self._col.find_one({"address": address})
        return _token(doc) if doc else None

    def find_by_fingerprint(self, fingerprint: str, limit: int = 1000) -> list[Token]:
        """Tokens carrying `fingerprint` (e.g. `domain:knowyourmeme.com`: the domain-sharing
        count), through `idx_tokens_fingerprints`."""
        cursor = self._col.find({"fingerprints": fingerprint}, limit=limit).hint("idx_tokens_fingerprints")
        return [_token(d) for d in cursor]

    def find_existing_addresses(self, addresses: Iterable[str]) -> set[str]:
        """Which of `addresses` already have a marker: one `$in` on uniq_tokens_address."""
        wanted = list(dict.fromkeys(addresses))
        if not wanted:
            return set()
        cursor = self._col.find({"address": {"$in": wanted}}, {"_id": 0, "address": 1})
        return {d["address"] for d in cursor}

    def write_marker(self, token: Token) -> bool:
        """Write the token document (last step of recording). Returns True when it was created.

        `discovered_at`, `fingerprints` and `web` are written on insert only and never overwritten;
        `social_urls` is the result of this recording and replaces the array; `symbol` is set when
        known (a manual path may not know it); `first_transfer_at` only ever moves earlier (`$min`:
        the earliest `firstFlowTimestamp` seen wins, whatever order duplicates arrive in).
        """
        now = utc_now()
        doc = token.to_document()
        on_insert = {k: doc[k] for k in _INSERT_ONLY if k in doc}
        on_insert.setdefault("fingerprints", [])
        on_insert["created_at"] = now
        to_set = {"social_urls": doc["social_urls"], **queue_fields(token.social_urls), "updated_at": now}
        if "symbol" in doc:
            to_set["symbol"] = doc["symbol"]
        update = {"$setOnInsert": on_insert, "$set": to_set}
        if "first_transfer_at" in doc:
            update["$min"] = {"first_transfer_at": doc["first_transfer_at"]}
        # Durable before the run may report "recorded" (store/durability.py): journaled, majority
        # on a replica set. On one server the journal is written in order, so this also makes the
        # links, rows and metrics written before it durable.
        result = self._durable.collection.update_one({"address": token.address}, update, upsert=True)
        return result.upserted_id is not None

    def lower_first_transfer_at(self, earliest: Mapping[str, datetime]) -> int:
        """Move markers' `first_transfer_at` earlier where a later-arriving duplicate event carried
        an earlier `firstFlowTimestamp` (never later; one write per marker through its address)."""
        ops = [
            UpdateOne(
                # Missing or later only: a marker that already holds this time or an earlier one is
                # left alone (its updated_at too).
                {"address": address, "first_transfer_at": {"$not": {"$lte": at}}},
                {"$set": {"first_transfer_at": at, "updated_at": utc_now()}},
                hint="uniq_tokens_address",
            )
            for address, at in earliest.items()
        ]
        if not ops:
            return 0
        # Durable like the marker: the inbox entry that asked for it is removed right after.
        return self._durable.collection.bulk_write(ops, ordered=False).modified_count

    @staticmethod
    def oldest_attempt_filter(status: FetchStatus | str, attempted_before: datetime | None) -> dict[str, Any]:
        """One retry partition's due tokens: a range on `idx_tokens_oldest_<status>`."""
        field = f"{OLDEST_ATTEMPT}.{FetchStatus(status).value}"
        return {field: {"$lt": attempted_before or _FAR_FUTURE}}

    def find_due_urls(
        self,
        statuses: Collection[FetchStatus],
        attempted_before: datetime | None,
        limit: int,
    ) -> list[tuple[Token, list[SocialUrlRecord]]]:
        """The `limit` URLs in `statuses` last attempted longest ago (before the cutoff), oldest
        first, grouped by token: `[(token, its selected URLs)]`, the token of the oldest URL first.

        One index range scan per status (`idx_tokens_oldest_<status>`, sorted by it), merged. A
        token's key is its oldest URL in that status, so once `limit` URLs are in hand and the next
        token's key is not older than the newest of them, no unread URL can be older: the scan stops.
        """
        if not statuses or limit <= 0:
            return []
        wanted = {FetchStatus(s) for s in statuses}
        cursors = []
        heap: list[tuple[datetime, int, dict[str, Any]]] = []
        for i, status in enumerate(sorted(wanted)):
            field = f"{OLDEST_ATTEMPT}.{status.value}"
            # Every token in the range holds at least one due URL of this status, so `limit`
            # tokens already hold `limit` URLs no later than any token after them: the one
            # after is only needed to peek at its key. The server then stops reading there.
            cursor = (
                self._col.find(self.oldest_attempt_filter(status, attempted_before))
                .sort(field, 1)
                .hint(oldest_attempt_index(status))
                .limit(limit + 1)
                .batch_size(min(_SCAN_BATCH, limit + 1))
            )
            cursors.append(cursor)
            self._push_next(heap, cursor, status, i)
        candidates: dict[tuple[str, str], tuple[datetime, SocialUrlRecord]] = {}
        tokens: dict[str, Token] = {}
        try:
            while heap:
                key, i, doc = heapq.heappop(heap)
                if len(candidates) >= limit and key >= sorted(t for t, _ in candidates.values())[limit - 1]:
                    break
                token = _token(doc)
                tokens[token.address] = token
                for record in token.social_urls:
                    if _due(record, wanted, attempted_before):
                        candidates[(token.address, record.url)] = (record.attempted_at, record)
                self._push_next(heap, cursors[i], sorted(wanted)[i], i)
        finally:
            for cursor in cursors:
                cursor.close()
        chosen = sorted(candidates.items(), key=lambda item: (item[1][0], item[0]))[:limit]
        grouped: dict[str, list[SocialUrlRecord]] = {}
        for (address, _), (_, record) in chosen:
            grouped.setdefault(address, []).append(record)
        return [(tokens[address], records) for address, records in grouped.items()]

    def find_by_url_statuses(
        self,
        statuses: Collection[FetchStatus],
        attempted_before: datetime | None,
        limit: int,
    ) -> list[Token]:
        """Tokens holding the `limit` longest-waiting URLs in `statuses` (see `find_due_urls`)."""
        return [token for token, _ in self.find_due_urls(statuses, attempted_before, limit)]

    @staticmethod
    def _push_next(
        heap: list[tuple[datetime, int, dict[str, Any]]], cursor: Iterator[dict[str, Any]], status: FetchStatus, i: int
    ) -> None:
        doc = next(cursor, None)
        if doc is not None:
            heapq.heappush(heap, (doc[OLDEST_ATTEMPT][status.value], i, doc))

    def backfill_oldest_attempt(self, batch: int = _BACKFILL_BATCH) -> int:
        """Bring every marker whose queue field is missing up to date: written before the queue
        existed, or before it held a key for every retry partition. Returns tokens updated.

        Found through the queue's own indexes (`oldest_attempt.<status>: null`), so on a database
        that is up to date this costs one empty index range per partition: every retry run calls
        it before selecting (nothing for an operator to remember; `socialrec backfill-queues`
        runs the same). Each token is rewritten by `_change_urls`, from its array as it is now.
        """
        updated = 0
        for status in RETRY_PARTITIONS:
            missing = {OLDEST_ATTEMPT + "." + status.value: None}
            while True:
                cursor = self._col.find(missing, {"_id": 0, "address": 1}).hint(oldest_attempt_index(status))
                addresses = [d["address"] for d in cursor.limit(batch) if isinstance(d.get("address"), str)]
                done = sum(self._change_urls(a, lambda records: (records, {}, None)) for a in addresses)
                updated += done
                if len(addresses) < batch or done == 0:
                    break
        return updated

    def record_social_url_result(self, address: str, url: str, result: SocialUrlRecord) -> bool:
        """Replace the one element whose url is `url` with `result` (arrayFilters), nothing else.

        The element is set as a whole, so a result under a new url (retry re-routes old URLs)
        lands complete: setting it field by field, the embedded server stops matching the
        arrayFilter once `url` changed and leaves the other fields half-written. A new url that
        another element already holds is refused (one result per URL, or the token would no
        longer read back). Returns False when nothing was written: no such token or element, or
        that refusal.
        """

        def replace(records: list[SocialUrlRecord]) -> _UrlsChange | None:
            urls = [r.url for r in records]
            if url not in urls or (result.url != url and result.url in urls):
                return None
            after = [result if r.url == url else r for r in records]
            update = {"$set": {"social_urls.$[target]": result.to_document()}}
            return after, update, [{"target.url": url}]

        return self._change_urls(address, replace)

    def merge_social_url(self, address: str, url: str, into: str) -> bool:
        """Remove the element `url`: it now routes to `into`, which another element of the token
        holds (one element per target, SPEC §3). `into` is left as it is. Returns False when
        nothing was removed (no such token, no element `url`, or no element `into`)."""

        def drop(records: list[SocialUrlRecord]) -> _UrlsChange | None:
            urls = {r.url for r in records}
            if url == into or url not in urls or into not in urls:
                return None
            return [r for r in records if r.url != url], {"$pull": {"social_urls": {"url": url}}}, None

        return self._change_urls(address, drop)

    def _change_urls(self, address: str, change: Callable[[list[SocialUrlRecord]], _UrlsChange | None]) -> bool:
        """The one way `social_urls` changes after the marker: read the array, let `change` say the
        array it becomes and the update that makes it so, and send that update with
        `queue_fields()` of the new array, conditioned on the array still being the one read
        (compare-and-set). A write that came in between makes it read and try again. False when
        `change` refuses (None), the token is gone, or the array kept changing."""
        for _ in range(_CAS_ROUNDS):
            doc = self._col.find_one({"address": address}, {"social_urls": 1}, hint="uniq_tokens_address")
            if doc is None:
                return False
            held = doc.get("social_urls")
            records = [SocialUrlRecord.model_validate(r) for r in held or []]
            planned = change(records)
            if planned is None:
                return False
            after, update, array_filters = planned
            update = {**update, "$set": {**update.get("$set", {}), **queue_fields(after)}}
            unchanged = held if held is not None else {"$exists": False}
            outcome = self._col.update_one(
                {"address": address, "social_urls": unchanged},
                update,
                array_filters=array_filters,
                hint="uniq_tokens_address",
            )
            if outcome.matched_count == 1:
                return True
        log.warning("tokens: %s social_urls kept changing; %d attempts to update it gave up", address, _CAS_ROUNDS)
        return False

    def find_recently_discovered(self, limit: int = 100) -> list[Token]:
        cursor = self._col.find({}).sort("discovered_at", DESCENDING).limit(limit)
        return [_token(d) for d in cursor]


def _due(record: SocialUrlRecord, statuses: set[FetchStatus], before: datetime | None) -> bool:
    return record.status in statuses and (before is None or record.attempted_at < before)
