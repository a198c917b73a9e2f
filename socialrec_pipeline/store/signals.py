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

#: `$in` lists are sent in slices of this many values (a bounded command size; the embedded
#: server's `$in` slows down sharply with thousands of values).
BATCH = 500

_LINK_FIELDS = {"_id": 0, "token_address": 1, "object": 1, "object_id": 1, "linked_at": 1}


def _aware(name: str, moment: datetime) -> datetime:
    if moment.tzinfo is None or moment.tzinfo.utcoffset(moment) is None:
        raise ValueError(f"{name} must be a timezone-aware datetime (UTC), got naive {moment!r}")
    return moment


def _slices(values: Iterable[Any], size: int = BATCH) -> Iterator[list[Any]]:
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
        return list(self._links.find({"linked_at": {"$lte": _aware("cutoff", cutoff)}}, _LINK_FIELDS))

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
        for part in _slices(addresses):
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
        """Set contents.link_stats unless the stored value has a newer input_cutoff (a backfill of an
        older day never overwrites what a later day computed). Returns how many were written.

        The stored cutoffs are read first and the writes filter on `_id` alone: an `_id` combined
        with a condition is not a point lookup for the embedded server (each update would scan).
        Two partitions of different days writing the same content at the same instant could still
        cross; the next run of the newer day restores it (docs/decisions.md)."""
        newest = {oid: (value or {}).get("input_cutoff") for oid, value in self.link_stats_of(stats).items()}
        ops = [
            UpdateOne({"_id": content_id}, {"$set": {"link_stats": value}})
            for content_id, value in stats.items()
            if (kept := newest.get(content_id)) is None or kept <= value["input_cutoff"]
        ]
        written = 0
        for i in range(0, len(ops), BATCH):
            written += self._contents.bulk_write(ops[i : i + BATCH], ordered=False).modified_count
        return written

    def link_stats_of(self, content_ids: Iterable[ObjectId]) -> dict[ObjectId, Doc | None]:
        return {d["_id"]: d.get("link_stats") for d in self.contents_by_id(content_ids, ("link_stats",))}

    def write_token_signals(self, docs: Sequence[Doc]) -> int:
        ops = [
            ReplaceOne({"token_address": d["token_address"]}, d, upsert=True)
            for d in docs
        ]
        for i in range(0, len(ops), BATCH):
            self._signals.bulk_write(ops[i : i + BATCH], ordered=False)
        return len(ops)

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
