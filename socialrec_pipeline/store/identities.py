"""`accounts` and `venues`: rows identified by (platform, platform_key), resolved by atomic upsert.

Every observation **completes and refreshes** the row (SPEC §5), atomically, in one update per
row: the update is an aggregation pipeline (`[{$set: defaults}, {$set: merged fields}]`) whose
expressions compare the stored values with the observation's, so two writers never lose each
other's fields and one bulk write carries every row of a graph. Per field:

- filled when absent, never changed after: `account_created_at`, `venue_created_at`,
  `venues.creator_id`;
- forward only (replaced when the observation is at least as new as the row's `observed_at`, never
  by "absent"; an empty list counts as absent): `display_name`, `bio`, `links`,
  `declared_handles`, `metrics.followers`, `moderation`, `name`, `description`, `subtype`,
  `metrics.members`, each key of `data`;
- accumulated: `known_wallets` (union with the wallets of the observed bio, `domain/wallets.py`);
- intervals (SPEC §5): `handles[]`: the same handle as the last interval, compared by the
  platform's key (`domain/handles.py`; a case-only change included), extends it; another opens a
  new one;
- max: `observed_at`, `data.profile_observed_at` (full profiles only).

A thin copy (`data.source_ref` set: the account arrived embedded in a tweet, repo, post, ...) only
leaves `source_ref` on a row that never had a full profile; a full profile removes it and stamps
`data.profile_observed_at`. Two concurrent upserts of one key can both miss and both insert; the
server rejects one with E11000 and that row's update is sent again (it now matches the winner).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from bson import ObjectId
from pymongo import UpdateOne
from pymongo.database import Database
from pymongo.errors import BulkWriteError

from socialrec_pipeline.domain.enums import Platform
from socialrec_pipeline.domain.handles import handle_key, handle_keys
from socialrec_pipeline.domain.models import Account, Venue, utc_now
from socialrec_pipeline.domain.models.identities import PROFILE_OBSERVED_AT, SOURCE_REF
from socialrec_pipeline.domain.wallets import normalize_wallet, wallets_in_text
from socialrec_pipeline.store.collections import ACCOUNTS, VENUES, collection
from socialrec_pipeline.store.rows import RowRepository

_DUPLICATE_KEY = 11000
_KEY_FIELDS = ["platform", "platform_key"]
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

IdentityKey = tuple[str, str]
#: The rows resolved by (platform, platform_key): accounts and venues.
IdentityRow = TypeVar("IdentityRow", Account, Venue)


def _lost_race(error: dict[str, Any]) -> bool:
    """A duplicate on the identity index (not, say, a reused `_id`, which is a caller's bug)."""
    pattern = error.get("keyPattern")
    return error.get("code") == _DUPLICATE_KEY and (pattern is None or list(pattern) == _KEY_FIELDS)


def _key(row: Account | Venue) -> IdentityKey:
    return (str(row.platform), row.platform_key)


# --------------------------------------------------------------------------- merge expressions


def _lit(value: Any) -> dict[str, Any]:
    # Always literal: a provider string starting with `$` must never be read as a field path.
    return {"$literal": value}


def _absent(path: str) -> dict[str, Any]:
    return {"$eq": [{"$ifNull": [path, None]}, None]}


def _fill(path: str, value: Any) -> dict[str, Any]:
    return {"$ifNull": [path, _lit(value)]}


class _Merge:
    """Builds the `$set` of one observation observed at `at` (see the module docstring)."""

    def __init__(self, at: datetime, now: datetime) -> None:
        self.at = at
        self.newer = {"$gte": [_lit(at), {"$ifNull": ["$observed_at", _lit(_EPOCH)]}]}
        self.fields: dict[str, Any] = {
            "observed_at": {"$max": ["$observed_at", _lit(at)]},
            "created_at": _fill("$created_at", now),
            "updated_at": _lit(now),
        }

    def fill(self, name: str, value: Any) -> None:
        if value is not None:
            self.fields[name] = _fill(f"${name}", value)

    def forward(self, name: str, value: Any) -> None:
        if value is None or value == [] or value == {}:
            return  # "absent" never replaces a value
        path = f"${name}"
        self.fields[name] = {"$cond": [{"$or": [self.newer, _absent(path)]}, _lit(value), path]}

    def data(self, data: dict[str, Any], full_profile: bool) -> None:
        for key, value in data.items():
            if key == SOURCE_REF or not isinstance(key, str) or not key or "." in key or key.startswith("$"):
                continue
            self.forward(f"data.{key}", value)
        if full_profile:
            self.fields[f"data.{SOURCE_REF}"] = "$$REMOVE"
            self.fields[f"data.{PROFILE_OBSERVED_AT}"] = {"$max": [f"$data.{PROFILE_OBSERVED_AT}", _lit(self.at)]}
        elif data.get(SOURCE_REF) is not None:
            self.fields[f"data.{SOURCE_REF}"] = {
                "$cond": [
                    _absent(f"$data.{PROFILE_OBSERVED_AT}"),
                    _fill(f"$data.{SOURCE_REF}", data[SOURCE_REF]),
                    "$$REMOVE",
                ]
            }

    def moderation(self, unavailable: bool | None) -> None:
        """The provider's word on suspension/deletion moves forward; the time is kept when the
        flag flips (absent→true, true→false). No word (None) leaves it alone."""
        if unavailable is None:
            return
        stored = {"$ifNull": ["$moderation.unavailable", False]}
        flips = {"$and": [self.newer, {"$ne": [stored, unavailable]}]}
        self.fields["moderation.unavailable"] = {"$cond": [self.newer, unavailable, "$moderation.unavailable"]}
        self.fields["moderation.changed_at"] = {"$cond": [flips, _lit(self.at), "$moderation.changed_at"]}

    def handle(self, platform: Platform, value: str | None) -> None:
        """`Account.add_handle_observation` as one expression (SPEC §5): intervals are compared by
        the platform's key (`domain/handles.py`), so a case-only change extends the interval and,
        when this sighting is at least as new, brings the current spelling."""
        if not value:
            return
        at = _lit(self.at)
        key = handle_key(platform, value)
        fresh = {"value": _lit(value), "key": _lit(key), "first_seen": at, "last_seen": at}
        n = {"$size": "$handles"}
        before_last = {"$cond": [{"$gt": [n, 1]}, {"$slice": ["$handles", {"$subtract": [n, 1]}]}, []]}
        # A row written before keys existed (until `backfill_handle_keys` reaches it).
        unkeyed = {"$toLower": "$$last.value"} if handle_key(platform, "A") == "a" else "$$last.value"
        last_key = {"$ifNull": ["$$last.key", unkeyed]}
        same = {
            "value": {"$cond": [{"$gte": [at, "$$last.last_seen"]}, _lit(value), "$$last.value"]},
            "key": _lit(key),
            "first_seen": "$$last.first_seen",
            "last_seen": {"$max": ["$$last.last_seen", at]},
        }
        # Another handle: the previous interval keeps its last_seen (the gap belongs to nobody),
        # unless an out-of-order arrival makes it overlap: then it is cut back to this sighting.
        cut = {
            "value": "$$last.value",
            "key": last_key,
            "first_seen": "$$last.first_seen",
            "last_seen": {
                "$cond": [{"$gt": ["$$last.last_seen", at]}, {"$max": [at, "$$last.first_seen"]}, "$$last.last_seen"]
            },
        }
        self.fields["handles"] = {
            "$cond": [
                {"$eq": [n, 0]},
                [fresh],
                {
                    "$let": {
                        "vars": {"last": {"$arrayElemAt": ["$handles", -1]}},
                        "in": {
                            "$cond": [
                                {"$eq": [last_key, _lit(key)]},
                                {"$concatArrays": [before_last, [same]]},
                                {"$concatArrays": [before_last, [cut, fresh]]},
                            ]
                        },
                    }
                },
            ]
        }

    def pipeline(self, row_id: ObjectId, defaults: dict[str, Any]) -> list[dict[str, Any]]:
        # `_id` is issued client-side like every row's; on an existing row it evaluates to the
        # stored value, which leaves the immutable field unchanged.
        first = {"_id": {"$ifNull": ["$_id", row_id]}}
        first.update({name: {"$ifNull": [f"${name}", _lit(empty)]} for name, empty in defaults.items()})
        return [{"$set": first}, {"$set": self.fields}]


_ACCOUNT_DEFAULTS: dict[str, Any] = {
    "handles": [],
    "links": [],
    "declared_handles": [],
    "known_wallets": [],
    "metrics": {},
    "moderation": {},
    "data": {},
}
_VENUE_DEFAULTS: dict[str, Any] = {"metrics": {}, "data": {}}


def account_wallets(account: Account) -> list[str]:
    """The wallets an observation declares: those a generator gave plus those in the bio."""
    return list(dict.fromkeys([*(normalize_wallet(w) for w in account.known_wallets), *wallets_in_text(account.bio)]))


def account_update(account: Account, now: datetime) -> list[dict[str, Any]]:
    doc = account.to_document()
    merge = _Merge(account.observed_at, now)
    merge.fill("account_created_at", account.account_created_at)
    for name in ("display_name", "bio", "links", "declared_handles"):
        merge.forward(name, doc.get(name))
    merge.forward("metrics.followers", account.metrics.followers)
    merge.moderation(account.moderation.unavailable)
    merge.handle(account.platform, account.current_handle())
    wallets = account_wallets(account)
    if wallets:
        merge.fields["known_wallets"] = {"$setUnion": ["$known_wallets", _lit(wallets)]}
    merge.data(doc.get("data", {}), account.is_full_profile())
    return merge.pipeline(account.id, _ACCOUNT_DEFAULTS)


def venue_update(venue: Venue, now: datetime) -> list[dict[str, Any]]:
    doc = venue.to_document()
    merge = _Merge(venue.observed_at, now)
    merge.fill("venue_created_at", venue.venue_created_at)
    merge.fill("creator_id", venue.creator_id)
    for name in ("subtype", "name", "description"):
        merge.forward(name, doc.get(name))
    merge.forward("metrics.members", venue.metrics.members)
    merge.data(doc.get("data", {}), venue.is_full_profile())
    return merge.pipeline(venue.id, _VENUE_DEFAULTS)


def _fold(first: IdentityRow, later: IdentityRow) -> IdentityRow:
    """One observation out of two of the same key in one batch: `first` wins, `later` fills the
    fields `first` lacks; full when either is (a thin copy never hides the full profile)."""
    merged = _deep_fill(first.to_document(), later.to_document())
    if first.is_full_profile() or later.is_full_profile():
        merged.get("data", {}).pop(SOURCE_REF, None)
    if isinstance(first, Account):
        merged["handles"] = first.to_document().get("handles") or later.to_document().get("handles") or []
    return type(first).from_document(merged)


def _deep_fill(primary: dict[str, Any], secondary: dict[str, Any]) -> dict[str, Any]:
    out = dict(primary)
    for key, value in secondary.items():
        if key not in out or out[key] in (None, [], {}):
            out[key] = value
        elif isinstance(out[key], dict) and isinstance(value, dict):
            out[key] = _deep_fill(out[key], value)
    return out


class _IdentityRepository(RowRepository[IdentityRow]):
    def _update(self, row: IdentityRow, now: datetime) -> list[dict[str, Any]]:
        raise NotImplementedError

    def upsert_many(self, rows: Sequence[IdentityRow]) -> dict[IdentityKey, ObjectId]:
        """Complete and refresh the rows of these keys (inserting new keys); return every `_id`.

        One bulk write (plus a resend of the rows that lost an insert race) and at most one read
        for the keys that already existed. The same key twice in `rows` is folded into one
        observation first (see `_fold`).
        """
        unique: dict[IdentityKey, IdentityRow] = {}
        for row in rows:
            k = _key(row)
            unique[k] = _fold(unique[k], row) if k in unique else row
        if not unique:
            return {}
        keys = list(unique)
        now = utc_now()
        ops = [
            UpdateOne(
                {"platform": platform, "platform_key": platform_key},
                self._update(unique[(platform, platform_key)], now),
                upsert=True,
            )
            for platform, platform_key in keys
        ]
        ids: dict[IdentityKey, ObjectId] = {}
        pending = list(range(len(ops)))
        for attempt in (1, 2):
            try:
                result = self._col.bulk_write([ops[i] for i in pending], ordered=False)
                upserted = result.upserted_ids or {}  # None only for unacknowledged writes
                failed: list[int] = []
            except BulkWriteError as exc:
                # Lost a race for some keys: another writer inserted them between our miss and insert.
                errors = exc.details.get("writeErrors", [])
                if attempt == 2 or not all(_lost_race(e) for e in errors):
                    raise
                upserted = {u["index"]: u["_id"] for u in exc.details.get("upserted", [])}
                failed = [e["index"] for e in errors]
            for index, row_id in upserted.items():
                ids[keys[pending[index]]] = row_id
            if not failed:
                break
            pending = [pending[i] for i in failed]  # now they match the winner's row: merge into it
        missing = [k for k in keys if k not in ids]
        if missing:
            ids.update(self._ids_of(missing))
        return ids

    def upsert(self, row: IdentityRow) -> ObjectId:
        return self.upsert_many([row])[_key(row)]

    def find_by_platform_key(self, platform: Platform, platform_key: str) -> IdentityRow | None:
        return self._one({"platform": str(platform), "platform_key": platform_key})

    def find_by_platform_keys(self, keys: Iterable[IdentityKey]) -> list[IdentityRow]:
        """Rows of these keys (one `$in` per platform)."""
        by_platform: dict[str, list[str]] = {}
        for platform, platform_key in keys:
            by_platform.setdefault(str(platform), []).append(platform_key)
        found: list[IdentityRow] = []
        for platform, platform_keys in by_platform.items():
            found += self._many({"platform": platform, "platform_key": {"$in": platform_keys}})
        return found

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

    def __init__(self, db: Database[dict[str, Any]]) -> None:
        super().__init__(collection(db, ACCOUNTS))

    def _update(self, row: Account, now: datetime) -> list[dict[str, Any]]:
        return account_update(row, now)

    def mark_unavailable(self, platform: Platform, platform_key: str, at: datetime) -> bool:
        """A provider said this account is suspended or deleted at `at`: set
        `moderation.unavailable` on its row (forward only). No row is created. True when one existed."""
        probe = Account.of(platform=platform, platform_key=platform_key, observed_at=at, unavailable=True)
        merge = _Merge(probe.observed_at, utc_now())
        merge.moderation(True)
        del merge.fields["created_at"]
        result = self._col.update_one(
            {"platform": str(platform), "platform_key": platform_key}, [{"$set": merge.fields}]
        )
        return result.matched_count == 1

    def bios_after(self, after_id: ObjectId | None, limit: int) -> list[tuple[ObjectId, str | None, list[str]]]:
        """`(_id, bio, known_wallets)` of the next `limit` rows in `_id` order after `after_id`
        (a range on the `_id` index: a backfill walks the collection in bounded batches)."""
        query = {"_id": {"$gt": after_id}} if after_id is not None else {}
        cursor = self._col.find(query, {"bio": 1, "known_wallets": 1}, sort=[("_id", 1)], limit=limit).hint("_id_")
        return [(d["_id"], d.get("bio"), list(d.get("known_wallets") or [])) for d in cursor]

    def add_wallets(self, wallets: Sequence[tuple[ObjectId, Sequence[str]]]) -> int:
        """Add wallets to rows' `known_wallets` (one bulk write; present ones are not repeated);
        returns the rows changed."""
        ops = [
            UpdateOne({"_id": row_id}, {"$addToSet": {"known_wallets": {"$each": list(ws)}}})
            for row_id, ws in wallets
            if ws
        ]
        return self._col.bulk_write(ops, ordered=False).modified_count if ops else 0

    def find_current_holders(self, platform: Platform, handle: str) -> list[Account]:
        """Accounts of `platform` whose latest handle is `handle` (the holder a URL names now),
        compared the way the platform compares handles (index `idx_accounts_handle_key`)."""
        query = {"handles.key": handle_key(platform, handle), "platform": str(platform)}
        rows = self._many(query, hint="idx_accounts_handle_key")
        return [a for a in rows if a.currently_holds(handle)]

    def find_by_handle(self, handle: str) -> list[Account]:
        """Every account that ever used the handle, on any platform, compared the way its platform
        compares handles; disambiguate with `Account.had_handle_at`."""
        rows = self._many({"handles.key": {"$in": handle_keys(handle)}})
        return [a for a in rows if any(h.key == handle_key(a.platform, handle) for h in a.handles)]

    def backfill_handle_keys(self, batch: int = 500) -> int:
        """Give `handles[].key` to intervals stored before keys existed; returns the rows changed.

        Runs with `ensure_indexes` (every start): the rows it looks for are found through
        `idx_accounts_handle_key` (an interval without a key is indexed as null), so a database
        that is up to date costs one index probe. The key is set per interval, on the condition
        that the interval still holds the spelling it was computed from.
        """
        changed = 0
        query = {"handles": {"$elemMatch": {"key": None}}}
        while True:
            cursor = self._col.find(query, {"platform": 1, "handles": 1}, limit=batch)
            docs = list(cursor.hint("idx_accounts_handle_key"))
            ops = []
            for d in docs:
                for i, h in enumerate(d.get("handles") or []):
                    if isinstance(h, dict) and h.get("key") is None and isinstance(h.get("value"), str):
                        ops.append(
                            UpdateOne(
                                {"_id": d["_id"], f"handles.{i}.value": h["value"]},
                                {"$set": {f"handles.{i}.key": handle_key(d.get("platform", ""), h["value"])}},
                                hint="_id_",
                            )
                        )
            if not ops:
                return changed
            changed += self._col.bulk_write(ops, ordered=False).modified_count
            if len(docs) < batch:
                return changed

    def find_by_wallet(self, wallet: str) -> list[Account]:
        """Every account whose bio declared `wallet` (Solana as written; EVM in any case).

        The join from an on-chain wallet to social accounts (index `idx_accounts_wallet`)."""
        return self._many({"known_wallets": normalize_wallet(wallet)})


class VenueRepository(_IdentityRepository[Venue]):
    _model = Venue

    def __init__(self, db: Database[dict[str, Any]]) -> None:
        super().__init__(collection(db, VENUES))

    def _update(self, row: Venue, now: datetime) -> list[dict[str, Any]]:
        return venue_update(row, now)

    def find_by_creator(self, creator_id: ObjectId) -> list[Venue]:
        # Partial index: named, or the embedded server would scan the collection.
        return self._many({"creator_id": creator_id}, hint="idx_venues_creator")
