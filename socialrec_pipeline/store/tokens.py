"""`tokens`: the recording marker and the per-URL results (`social_urls[]`).

The retry queue lives in the same document: `oldest_attempt.<status>` holds the oldest
`attempted_at` among the token's URLs in that status (one field per retry partition, absent when
the token has none). Each field has its own plain index (`idx_tokens_oldest_<status>`), so the
retry selection reads tokens oldest attempt first with an exact-prefix range scan, and a token
whose URLs were just attempted moves to the back: nothing starves. It is derived from
`social_urls` and rewritten by every write of it (the marker, a per-URL result).
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from bson import ObjectId
from pymongo import DESCENDING, UpdateOne
from pymongo.database import Database

from socialrec_pipeline.domain.enums import RETRY_PARTITIONS, FetchStatus
from socialrec_pipeline.domain.models import SocialUrlRecord, Token, utc_now
from socialrec_pipeline.store.collections import TOKENS, collection

#: Fields a marker write may set only when it creates the document. `discovered_at` is the
#: reconcile/backfill entry point; `fingerprints` / `web` belong to the (separate) web work.
_INSERT_ONLY = ("_id", "discovered_at", "fingerprints", "web")

#: How many documents one cursor batch of the retry selection pulls.
_SCAN_BATCH = 200

#: The derived retry-queue field (see the module docstring); never part of the `Token` model.
OLDEST_ATTEMPT = "oldest_attempt"
_FAR_FUTURE = datetime(9999, 1, 1, tzinfo=UTC)


def oldest_attempt_index(status: FetchStatus | str) -> str:
    return f"idx_tokens_oldest_{FetchStatus(status).value}"


def oldest_attempts(records: Iterable[SocialUrlRecord]) -> dict[str, datetime]:
    """`oldest_attempt` of a URL list: per retry-partition status, its oldest `attempted_at`."""
    oldest: dict[str, datetime] = {}
    for record in records:
        if record.status in RETRY_PARTITIONS:
            key = str(record.status)
            if key not in oldest or record.attempted_at < oldest[key]:
                oldest[key] = record.attempted_at
    return oldest


def _token(doc: dict[str, Any]) -> Token:
    doc = dict(doc)
    doc.pop(OLDEST_ATTEMPT, None)
    return Token.from_document(doc)


class TokenRepository:
    def __init__(self, db: Database[dict[str, Any]]) -> None:
        self._col = collection(db, TOKENS)

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
        to_set = {
            "social_urls": doc["social_urls"],
            OLDEST_ATTEMPT: oldest_attempts(token.social_urls),
            "updated_at": now,
        }
        if "symbol" in doc:
            to_set["symbol"] = doc["symbol"]
        update = {"$setOnInsert": on_insert, "$set": to_set}
        if "first_transfer_at" in doc:
            update["$min"] = {"first_transfer_at": doc["first_transfer_at"]}
        result = self._col.update_one({"address": token.address}, update, upsert=True)
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
        return self._col.bulk_write(ops, ordered=False).modified_count

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
                self._heal_oldest_attempt(doc, token)
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

    def _heal_oldest_attempt(self, doc: dict[str, Any], token: Token) -> None:
        """A derived field left stale (a crash between two writes) is rewritten when met."""
        expected = oldest_attempts(token.social_urls)
        if doc.get(OLDEST_ATTEMPT) != expected:
            self._col.update_one(
                {"address": token.address}, {"$set": {OLDEST_ATTEMPT: expected}}, hint="uniq_tokens_address"
            )

    def backfill_oldest_attempt(self, batch: int = 500) -> int:
        """One-off migration for markers written before `oldest_attempt` existed: derive it for
        every token holding a URL in a retry partition that lacks it. Returns tokens updated."""
        updated = 0
        cursor = (
            self._col.find(
                {"social_urls.status": {"$in": [s.value for s in RETRY_PARTITIONS]}},
                {"address": 1, "social_urls": 1, OLDEST_ATTEMPT: 1},
            )
            .hint("idx_tokens_social_url_status")
            .batch_size(batch)
        )
        seen: set[ObjectId] = set()
        for doc in cursor:
            if doc["_id"] in seen or OLDEST_ATTEMPT in doc:
                continue
            seen.add(doc["_id"])
            records = [SocialUrlRecord.model_validate(r) for r in doc.get("social_urls", [])]
            self._col.update_one(
                {"address": doc["address"]},
                {"$set": {OLDEST_ATTEMPT: oldest_attempts(records)}},
                hint="uniq_tokens_address",
            )
            updated += 1
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
        held = url if result.url == url else {"$eq": url, "$ne": result.url}
        outcome = self._col.update_one(
            {"address": address, "social_urls.url": held},
            {"$set": {"social_urls.$[target]": result.to_document()}},
            array_filters=[{"target.url": url}],
            hint="uniq_tokens_address",
        )
        if outcome.matched_count != 1:
            return False
        # The retry queue follows the element (callers hold the token lock: nobody else writes it).
        doc = self._col.find_one({"address": address}, {"social_urls": 1})
        records = [SocialUrlRecord.model_validate(r) for r in (doc or {}).get("social_urls", [])]
        self._col.update_one(
            {"address": address}, {"$set": {OLDEST_ATTEMPT: oldest_attempts(records)}}, hint="uniq_tokens_address"
        )
        return True

    def find_recently_discovered(self, limit: int = 100) -> list[Token]:
        cursor = self._col.find({}).sort("discovered_at", DESCENDING).limit(limit)
        return [_token(d) for d in cursor]


def _due(record: SocialUrlRecord, statuses: set[FetchStatus], before: datetime | None) -> bool:
    return record.status in statuses and (before is None or record.attempted_at < before)
