"""`tokens`: the recording marker and the per-URL results (`social_urls[]`)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from datetime import datetime

from pymongo import DESCENDING, UpdateOne
from pymongo.database import Database

from socialrec_pipeline.domain.enums import FetchStatus
from socialrec_pipeline.domain.models import SocialUrlRecord, Token, utc_now
from socialrec_pipeline.store.collections import TOKENS, collection

#: Fields a marker write may set only when it creates the document. `discovered_at` is the
#: reconcile/backfill entry point; `fingerprints` / `web` belong to the (separate) web work.
_INSERT_ONLY = ("_id", "discovered_at", "fingerprints", "web")

#: How many documents one cursor batch of the retry selection pulls.
_SCAN_BATCH = 200


class TokenRepository:
    def __init__(self, db: Database) -> None:
        self._col = collection(db, TOKENS)

    def exists(self, address: str) -> bool:
        return self._col.find_one({"address": address}, {"_id": 1}) is not None

    def find_by_address(self, address: str) -> Token | None:
        doc = self._col.find_one({"address": address})
        return Token.from_document(doc) if doc else None

    def find_by_fingerprint(self, fingerprint: str, limit: int = 1000) -> list[Token]:
        """Tokens carrying `fingerprint` (e.g. `domain:knowyourmeme.com`: the domain-sharing
        count), through `idx_tokens_fingerprints`."""
        cursor = self._col.find({"fingerprints": fingerprint}, limit=limit).hint("idx_tokens_fingerprints")
        return [Token.from_document(d) for d in cursor]

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
        to_set = {"social_urls": doc["social_urls"], "updated_at": now}
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
    def url_statuses_filter(statuses: Iterable[FetchStatus]) -> dict:
        """The retry selection's query: a pure `$in` on idx_tokens_social_url_status."""
        return {"social_urls.status": {"$in": [str(s) for s in dict.fromkeys(statuses)]}}

    def find_by_url_statuses(
        self,
        statuses: Collection[FetchStatus],
        attempted_before: datetime | None,
        limit: int,
    ) -> list[Token]:
        """Tokens holding at least one URL in `statuses` last attempted before the cutoff.

        The cutoff is checked per element in Python: on our embedded server an `$elemMatch`
        (status and attempted_at on the same element) turns the plan into a collection scan,
        while the pure `$in` stays an index scan. Correctness needs the per-element check anyway
        (a token may hold an old `error` and a fresh `skipped_paid`).
        """
        if not statuses or limit <= 0:
            return []
        wanted = {FetchStatus(s) for s in statuses}
        found: list[Token] = []
        seen: set = set()
        cursor = self._col.find(self.url_statuses_filter(wanted)).batch_size(_SCAN_BATCH)
        try:
            for doc in cursor:
                if doc["_id"] in seen:  # a multikey scan may meet a document once per status
                    continue
                seen.add(doc["_id"])
                token = Token.from_document(doc)
                if any(_due(r, wanted, attempted_before) for r in token.social_urls):
                    found.append(token)
                    if len(found) >= limit:
                        break
        finally:
            cursor.close()
        return found

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
        return outcome.matched_count == 1

    def find_recently_discovered(self, limit: int = 100) -> list[Token]:
        cursor = self._col.find({}).sort("discovered_at", DESCENDING).limit(limit)
        return [Token.from_document(d) for d in cursor]


def _due(record: SocialUrlRecord, statuses: set[FetchStatus], before: datetime | None) -> bool:
    return record.status in statuses and (before is None or record.attempted_at < before)

