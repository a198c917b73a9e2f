"""`accounts` and `venues`: rows identified by (platform, platform_key), resolved by atomic upsert.

The upsert's filter is the unique key and its only operator is `$setOnInsert` of the whole new
document, so an existing row is never touched (re-observation updates nothing; refreshing values
is the metric refresh's job). Two concurrent upserts of one key can both miss and both insert;
the server rejects one with E11000 and we read the winner back, so callers always get one row.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from bson import ObjectId
from pymongo import UpdateOne
from pymongo.database import Database
from pymongo.errors import BulkWriteError

from socialrec_pipeline.domain.enums import Platform
from socialrec_pipeline.domain.models import Account, Venue, utc_now
from socialrec_pipeline.store.collections import ACCOUNTS, VENUES, collection
from socialrec_pipeline.store.rows import Row, RowRepository, stamped

_DUPLICATE_KEY = 11000
_KEY_FIELDS = ["platform", "platform_key"]

IdentityKey = tuple[str, str]


def _lost_race(error: dict) -> bool:
    """A duplicate on the identity index (not, say, a reused `_id`, which is a caller's bug)."""
    pattern = error.get("keyPattern")
    return error.get("code") == _DUPLICATE_KEY and (pattern is None or list(pattern) == _KEY_FIELDS)


def _key(row: Account | Venue) -> IdentityKey:
    return (str(row.platform), row.platform_key)


class _IdentityRepository(RowRepository[Row]):
    def upsert_many(self, rows: Sequence[Row]) -> dict[IdentityKey, ObjectId]:
        """Insert the rows whose key is new; return the stored `_id` of every key (new or old).

        One bulk write plus at most one read for the keys that already existed. The first row
        of a key wins when the same key appears twice in `rows`.
        """
        unique: dict[IdentityKey, Row] = {}
        for row in rows:
            unique.setdefault(_key(row), row)
        if not unique:
            return {}
        keys = list(unique)
        now = utc_now()
        ops = [
            UpdateOne(
                {"platform": platform, "platform_key": platform_key},
                {"$setOnInsert": self._insert_document(unique[(platform, platform_key)], now)},
                upsert=True,
            )
            for platform, platform_key in keys
        ]
        ids: dict[IdentityKey, ObjectId] = {}
        try:
            result = self._col.bulk_write(ops, ordered=False)
            upserted = result.upserted_ids
        except BulkWriteError as exc:
            # Lost a race for some keys: another writer inserted them between our miss and insert.
            errors = exc.details.get("writeErrors", [])
            if not all(_lost_race(e) for e in errors):
                raise
            upserted = {u["index"]: u["_id"] for u in exc.details.get("upserted", [])}
        for index, row_id in upserted.items():
            ids[keys[index]] = row_id
        missing = [k for k in keys if k not in ids]
        if missing:
            ids.update(self._ids_of(missing))
        return ids

    @staticmethod
    def _insert_document(row: Row, now: datetime) -> dict:
        # The filter's equality fields are inserted by the server; repeating them in
        # $setOnInsert is legal on MongoDB but needless.
        doc = row.to_document()
        del doc["platform"], doc["platform_key"]
        return stamped(doc, now)

    def upsert(self, row: Row) -> ObjectId:
        return self.upsert_many([row])[_key(row)]

    def find_by_platform_key(self, platform: Platform, platform_key: str) -> Row | None:
        return self._one({"platform": str(platform), "platform_key": platform_key})

    def _ids_of(self, keys: list[IdentityKey]) -> dict[IdentityKey, ObjectId]:
        # One `$in` per platform rather than an `$or` (the embedded server scans for any `$or`).
        by_platform: dict[str, list[str]] = {}
        for platform, platform_key in keys:
            by_platform.setdefault(platform, []).append(platform_key)
        projection = {"_id": 1, "platform": 1, "platform_key": 1}
        found: dict[IdentityKey, ObjectId] = {}
        for platform, platform_keys in by_platform.items():
            query = {"platform": platform, "platform_key": {"$in": platform_keys}}
            for d in self._col.find(query, projection):
                found[(d["platform"], d["platform_key"])] = d["_id"]
        lost = [k for k in keys if k not in found]
        if lost:
            # Cannot happen unless a row was deleted between our write and this read.
            raise LookupError(f"{self._col.name}: rows vanished after upsert: {lost}")
        return found


class AccountRepository(_IdentityRepository[Account]):
    _model = Account

    def __init__(self, db: Database) -> None:
        super().__init__(collection(db, ACCOUNTS))

    def find_by_handle(self, handle: str) -> list[Account]:
        """Every account that ever used the handle; disambiguate with `Account.had_handle_at`."""
        return self._many({"handles.value": handle})

    def find_by_wallet(self, wallet: str) -> list[Account]:
        return self._many({"known_wallets": wallet})


class VenueRepository(_IdentityRepository[Venue]):
    _model = Venue

    def __init__(self, db: Database) -> None:
        super().__init__(collection(db, VENUES))

    def find_by_creator(self, creator_id: ObjectId) -> list[Venue]:
        # Partial index: named, or the embedded server would scan the collection.
        return self._many({"creator_id": creator_id}, hint="idx_venues_creator")
