"""Data access of the derived-signal layer (SPEC §11): every read a partition makes, and its writes.

Each read goes through an index: a signal partition must never scan a collection (a scan would
make a day partition cost as much as the whole history). The filters are plain single-field
shapes — an `$in` or a range on an index's leading field — which every server's planner answers
from that index without a `hint` (the embedded server walks a whole index when given a hint, so a
hint is only used where its planner would otherwise scan). The cutoff is then applied to the rows
read (`linked_at`, `discovered_at`, `created_at` ≤ cutoff) before anything leaves this module, so
no caller ever sees a row from after its cutoff. The rules of the signals live in `signals/`; this
module only fetches and stores.

Time bounds must be timezone-aware UTC (a naive bound would be read as UTC by the driver).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

from bson import ObjectId
from pymongo import DeleteMany, InsertOne, ReplaceOne, UpdateOne
from pymongo.database import Database
from pymongo.errors import BulkWriteError

from socialrec_pipeline.store.collections import (
    ACCOUNTS,
    CONTENTS,
    METRIC_SERIES,
    TOKEN_CLUSTERS,
    TOKEN_LINKS,
    TOKEN_SIGNALS,
    TOKENS,
    VENUES,
    collection,
)

Doc = dict[str, Any]

#: Writes are sent in bulk batches of this many operations, and a lookup that finds (almost)
#: nothing (`known_wallets`) sends its `$in` in slices of this many values.
BATCH = 500
#: A read that returns rows sends its `$in` in slices of this many values: the embedded server
#: compares every row it returns with each value of the `$in` (rows × slice comparisons), so short
#: slices cost less than long ones while the round trips stay few (docs/decisions.md).
IN_SLICE = 25

_LINK_FIELDS = {"_id": 0, "token_address": 1, "object": 1, "object_id": 1, "linked_at": 1}


def _aware(name: str, moment: datetime) -> datetime:
    if moment.tzinfo is None or moment.tzinfo.utcoffset(moment) is None:
        raise ValueError(f"{name} must be a timezone-aware datetime (UTC), got naive {moment!r}")
    return moment


#: The numbers of a link_stats value (`computed_at` aside).
_STATS_FIELDS = ("link_count", "first_linked_at", "input_cutoff")


def _replaces(kept: Doc | None, value: Doc) -> bool:
    """Whether `value` is written over the stored link_stats `kept`."""
    if not kept:
        return True
    if kept.get("input_cutoff") is not None and kept["input_cutoff"] > value["input_cutoff"]:
        return False  # a later day's value
    return any(kept.get(name) != value[name] for name in _STATS_FIELDS)


def _differs(kept: Doc, value: Doc) -> bool:
    """Whether two token_signals documents differ in anything but `computed_at` (and `_id`)."""
    ignored = ("_id", "computed_at")
    return {k: v for k, v in kept.items() if k not in ignored} != {k: v for k, v in value.items() if k not in ignored}


def _slices(values: Iterable[Any], size: int = IN_SLICE) -> Iterator[list[Any]]:
    unique = list(dict.fromkeys(values))
    for i in range(0, len(unique), size):
        yield unique[i : i + size]


class SignalStore:
    """Reads (as of a cutoff) and writes of contents.link_stats, token_signals and token_clusters."""

    def __init__(self, db: Database[dict[str, Any]]) -> None:
        self.db = db
        self._tokens = collection(db, TOKENS)
        self._links = collection(db, TOKEN_LINKS)
        self._contents = collection(db, CONTENTS)
        self._accounts = collection(db, ACCOUNTS)
        self._venues = collection(db, VENUES)
        self._series = collection(db, METRIC_SERIES)
        self._signals = collection(db, TOKEN_SIGNALS)
        self._clusters = collection(db, TOKEN_CLUSTERS)

    # -- tokens ----------------------------------------------------------------------------------

    def tokens_discovered_between(self, start: datetime | None, cutoff: datetime) -> list[Doc]:
        """Tokens with start ≤ discovered_at ≤ cutoff (all up to the cutoff when start is None)."""
        bound: Doc = {"$lte": _aware("cutoff", cutoff)}
        if start is not None:
            bound["$gte"] = _aware("start", start)
        cursor = self._tokens.find(
            {"discovered_at": bound}, {"_id": 0, "address": 1, "discovered_at": 1, "fingerprints": 1}
        )
        return list(cursor)

    def tokens_by_address(self, addresses: Iterable[str]) -> list[Doc]:
        out: list[Doc] = []
        for part in _slices(addresses):
            out += self._tokens.find({"address": {"$in": part}}, {"_id": 0, "address": 1, "discovered_at": 1})
        return out

    def tokens_with_fingerprints_before(self, fingerprints: Iterable[str], before: datetime) -> list[Doc]:
        """Tokens discovered strictly before `before` that carry one of `fingerprints`."""
        _aware("before", before)
        out: list[Doc] = []
        for part in _slices(fingerprints):
            found = self._tokens.find(
                {"fingerprints": {"$in": part}}, {"_id": 0, "address": 1, "discovered_at": 1, "fingerprints": 1}
            )
            out += [d for d in found if d.get("discovered_at") is not None and d["discovered_at"] < before]
        return out

    # -- token_links -----------------------------------------------------------------------------

    def links_of_tokens(self, addresses: Iterable[str], cutoff: datetime) -> list[Doc]:
        """The tokens' links with linked_at ≤ cutoff (idx_links_token_linked)."""
        _aware("cutoff", cutoff)
        out: list[Doc] = []
        for part in _slices(addresses):
            found = self._links.find({"token_address": {"$in": part}}, _LINK_FIELDS)
            out += [d for d in found if d["linked_at"] <= cutoff]
        return out

    def links_to_objects(self, object_ids: Iterable[ObjectId], cutoff: datetime) -> list[Doc]:
        """Every link to the objects with linked_at ≤ cutoff (idx_links_object_linked)."""
        _aware("cutoff", cutoff)
        out: list[Doc] = []
        for part in _slices(object_ids):
            found = self._links.find({"object_id": {"$in": part}}, _LINK_FIELDS)
            out += [d for d in found if d["linked_at"] <= cutoff]
        return out

    def links_up_to(self, cutoff: datetime) -> list[Doc]:
        """Every link with linked_at ≤ cutoff (idx_links_linked): the clustering's one wide read."""
        fields = {"_id": 0, "token_address": 1, "object": 1, "object_id": 1}  # the filter bounds linked_at
        return list(self._links.find({"linked_at": {"$lte": _aware("cutoff", cutoff)}}, fields))

    def content_ids_linked_between(self, start: datetime, cutoff: datetime) -> list[ObjectId]:
        """Contents with a link made in [start, cutoff] (idx_links_linked)."""
        cursor = self._links.find(
            {"linked_at": {"$gte": _aware("start", start), "$lte": _aware("cutoff", cutoff)}},
            {"_id": 0, "object": 1, "object_id": 1},
        )
        return list(dict.fromkeys(d["object_id"] for d in cursor if d["object"] == "contents"))

    def count_linking_tokens(self, object_id: ObjectId, cutoff: datetime) -> tuple[int, datetime | None]:
        """An independent recount for the link-stats check: distinct tokens and the first link time."""
        _aware("cutoff", cutoff)
        rows = [
            d
            for d in self._links.find({"object_id": object_id}, {"_id": 0, "token_address": 1, "linked_at": 1})
            if d["linked_at"] <= cutoff
        ]
        return len({d["token_address"] for d in rows}), min((d["linked_at"] for d in rows), default=None)

    # -- graph rows ------------------------------------------------------------------------------

    def _by_ids(self, col_name: str, ids: Iterable[ObjectId], fields: Sequence[str]) -> list[Doc]:
        col = {CONTENTS: self._contents, ACCOUNTS: self._accounts, VENUES: self._venues}[col_name]
        projection = dict.fromkeys(fields, 1)
        out: list[Doc] = []
        for part in _slices(ids):
            out += col.find({"_id": {"$in": part}}, projection)
        return out

    def contents_by_id(self, ids: Iterable[ObjectId], fields: Sequence[str] = ("creator_id",)) -> list[Doc]:
        return self._by_ids(CONTENTS, ids, fields)

    def accounts_by_id(self, ids: Iterable[ObjectId]) -> list[Doc]:
        return self._by_ids(ACCOUNTS, ids, ("platform", "platform_key", "account_created_at", "created_at"))

    def venues_by_id(self, ids: Iterable[ObjectId]) -> list[Doc]:
        return self._by_ids(VENUES, ids, ("platform", "description", "created_at"))

    def content_ids_by_creators(self, creator_ids: Iterable[ObjectId]) -> list[Doc]:
        """Contents created by the accounts (idx_contents_creator: the partial
        idx_contents_creator_published is matched by the embedded planner only through a hint, and a
        hinted find walks the whole index there)."""
        out: list[Doc] = []
        for part in _slices(creator_ids):
            out += self._contents.find({"creator_id": {"$in": part}}, {"_id": 1, "creator_id": 1})
        return out

    def content_creators(self) -> dict[ObjectId, ObjectId]:
        """content _id → creator_id of every content with a creator (idx_contents_creator): the
        clustering's second wide read, one range instead of thousands of `_id` lookups."""
        found = self._contents.find({"creator_id": {"$gt": ObjectId("0" * 24)}}, {"_id": 1, "creator_id": 1})
        return {d["_id"]: d["creator_id"] for d in found}

    def accounts_with_wallets(self, addresses: Iterable[str], stored_by: datetime) -> list[Doc]:
        """Accounts stored at or before `stored_by` whose known_wallets hold one of `addresses`."""
        _aware("stored_by", stored_by)
        out: list[Doc] = []
        for part in _slices(addresses, BATCH):
            fields = {"platform": 1, "platform_key": 1, "known_wallets": 1, "created_at": 1}
            found = self._accounts.find({"known_wallets": {"$in": part}}, fields)
            out += [d for d in found if d.get("created_at") is not None and d["created_at"] <= stored_by]
        return out

    def content_series(self, content_ids: Iterable[ObjectId]) -> list[Doc]:
        out: list[Doc] = []
        for part in _slices(content_ids):
            out += self._series.find(
                {"object": "contents", "object_id": {"$in": part}}, {"object_id": 1, "platform": 1, "points": 1}
            )
        return out

    # -- writes ----------------------------------------------------------------------------------

    def write_link_stats(self, stats: dict[ObjectId, Doc]) -> int:
        """Set contents.link_stats where it changes: not where the stored value has a newer
        input_cutoff (a backfill of an older day never overwrites what a later day computed), nor
        where it already holds the same numbers for the same cutoff (a recomputed day rewrites
        nothing; an update costs the embedded server far more than a read). Returns how many were
        written.

        The stored values are read first and the writes filter on `_id` alone, one plain point
        lookup per update. Two partitions of different days writing the same content at the same
        instant could still cross; the next run of the newer day restores it (docs/decisions.md)."""
        stored = self.link_stats_of(stats)
        ops = [
            UpdateOne({"_id": content_id}, {"$set": {"link_stats": value}})
            for content_id, value in stats.items()
            if _replaces(stored.get(content_id), value)
        ]
        written = 0
        for i in range(0, len(ops), BATCH):
            written += self._contents.bulk_write(ops[i : i + BATCH], ordered=False).modified_count
        return written

    def link_stats_of(self, content_ids: Iterable[ObjectId]) -> dict[ObjectId, Doc | None]:
        return {d["_id"]: d.get("link_stats") for d in self.contents_by_id(content_ids, ("link_stats",))}

    def write_token_signals(self, docs: Sequence[Doc]) -> int:
        """Store one document per token: inserted when the token has none, replaced when a value
        changed, left alone when only `computed_at` would differ (a recomputed day rewrites
        nothing). Returns how many were written."""
        stored = {d["token_address"]: d for d in self.token_signals_of(d["token_address"] for d in docs)}
        new = [dict(d) for d in docs if d["token_address"] not in stored]  # copies: the driver adds _id
        changed = [d for d in docs if d["token_address"] in stored and _differs(stored[d["token_address"]], d)]
        inserted = 0
        for i in range(0, len(new), BATCH):
            part = new[i : i + BATCH]
            try:
                inserted += len(self._signals.insert_many(part, ordered=False).inserted_ids)
            except BulkWriteError as exc:  # stored meanwhile by another run: replaced below
                errors = exc.details["writeErrors"]
                if any(e["code"] != 11000 for e in errors):
                    raise
                inserted += exc.details["nInserted"]
                taken = {part[e["index"]]["token_address"] for e in errors}
                changed += [d for d in docs if d["token_address"] in taken]
        ops = [ReplaceOne({"token_address": d["token_address"]}, d, upsert=True) for d in changed]
        for i in range(0, len(ops), BATCH):
            self._signals.bulk_write(ops[i : i + BATCH], ordered=False)
        return inserted + len(ops)

    def token_signals_of(self, addresses: Iterable[str]) -> list[Doc]:
        out: list[Doc] = []
        for part in _slices(addresses):
            out += self._signals.find({"token_address": {"$in": part}}, {"_id": 0})
        return out

    def replace_clusters(self, cutoff: datetime, docs: Sequence[Doc]) -> int:
        """The clusters as of `cutoff` become exactly `docs` (one partition's set, replaced whole)."""
        self._clusters.bulk_write([DeleteMany({"input_cutoff": _aware("cutoff", cutoff)})])
        ops = [InsertOne(dict(d)) for d in docs]  # the callers keep their documents free of _id
        for i in range(0, len(ops), BATCH * 5):
            self._clusters.bulk_write(ops[i : i + BATCH * 5], ordered=False)
        return len(ops)

    def prune_clusters(self, before: datetime) -> int:
        """Delete the cluster sets of every cutoff earlier than `before` (uniq_clusters_cutoff_id).
        Returns how many documents were deleted."""
        return self._clusters.delete_many({"input_cutoff": {"$lt": _aware("before", before)}}).deleted_count

    def clusters_as_of(self, cutoff: datetime, limit: int = 0) -> list[Doc]:
        """The clusters of one cutoff, largest first."""
        found = self._clusters.find({"input_cutoff": _aware("cutoff", cutoff)}, {"_id": 0})
        ranked = sorted(found, key=lambda d: (-d["size"], d["cluster_id"]))
        return ranked[:limit] if limit else ranked

    def cluster_memberships(self, cutoff: datetime) -> list[Doc]:
        """(cluster_id, members) of every cluster of one cutoff, for the membership check."""
        return list(
            self._clusters.find(
                {"input_cutoff": _aware("cutoff", cutoff)}, {"_id": 0, "cluster_id": 1, "members": 1}
            )
        )
