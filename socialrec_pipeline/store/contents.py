"""`contents`: data access only. Row resolution (URL, then key, else insert) is the caller's.

There is no find-or-create: two writers inserting the same URL or key race, the unique indexes
reject the loser (a `BulkWriteError` with code 11000 reaches the caller), and the caller reads the
winner back with `find_by_source_urls` / `find_by_platform_keys`.

Queries name their index (`hint`) wherever the predicate is not a plain key prefix: the embedded
server's planner ignores partial indexes and indexes that do not cover every predicate, and would
fall back to a collection scan. MongoDB picks the same plan, so the hint costs nothing there.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from bson import ObjectId
from pymongo import DESCENDING, UpdateOne
from pymongo.database import Database

from socialrec_pipeline.domain.enums import ContentSubtype, Platform
from socialrec_pipeline.domain.models import Content, SourceUrlEntry, utc_now
from socialrec_pipeline.store.collections import CONTENTS, collection
from socialrec_pipeline.store.rows import RowRepository, stamped

_BY_KEY = "uniq_contents_platform_key"

PlatformKey = tuple[Platform | str, ContentSubtype | str, str]


class ContentRepository(RowRepository[Content]):
    _model = Content

    def __init__(self, db: Database[dict[str, Any]]) -> None:
        super().__init__(collection(db, CONTENTS))

    def insert_many(self, contents: Sequence[Content]) -> list[ObjectId]:
        """Insert in order (originals before the contents that point at them); ids are the models'."""
        if not contents:
            return []
        now = utc_now()
        docs = [stamped(c.to_document(), now) for c in contents]
        self._col.insert_many(docs, ordered=True)
        return [c.id for c in contents]

    def insert(self, content: Content) -> ObjectId:
        return self.insert_many([content])[0]

    def find_by_source_urls(self, urls: Iterable[str]) -> list[Content]:
        wanted = list(dict.fromkeys(urls))
        if not wanted:
            return []
        return self._many({"source_urls.url": {"$in": wanted}})

    def find_by_source_url(self, url: str) -> Content | None:
        return self._one({"source_urls.url": url})

    def find_by_platform_keys(self, keys: Iterable[PlatformKey]) -> list[Content]:
        """One `$in` query per (platform, subtype) on the unique key index (one in practice).

        Not an `$or`: the embedded server scans the collection for any `$or`.
        """
        grouped: dict[tuple[str, str], list[str]] = {}
        for platform, subtype, key in dict.fromkeys(keys):
            grouped.setdefault((str(platform), str(subtype)), []).append(key)
        found: list[Content] = []
        for (platform, subtype), platform_keys in grouped.items():
            query = {"platform": platform, "subtype": subtype, "platform_key": {"$in": platform_keys}}
            found += self._many(query, hint=_BY_KEY)
        return found

    def find_by_platform_key(
        self, platform: Platform, subtype: ContentSubtype, platform_key: str
    ) -> Content | None:
        query = {"platform": str(platform), "subtype": str(subtype), "platform_key": platform_key}
        return self._one(query, hint=_BY_KEY)

    def add_source_urls(self, entries: Sequence[tuple[ObjectId, SourceUrlEntry]]) -> int:
        """Append each URL to its row unless the row already has it. One bulk write.

        Returns how many rows gained a URL. A URL already held by another row violates
        `uniq_contents_source_url`; the error is raised after the other updates have applied.
        """
        if not entries:
            return 0
        now = utc_now()
        ops = [
            UpdateOne(
                {"_id": content_id, "source_urls.url": {"$ne": entry.url}},
                {"$push": {"source_urls": entry.to_document()}, "$set": {"updated_at": now}},
                hint="_id_",
            )
            for content_id, entry in entries
        ]
        return self._col.bulk_write(ops, ordered=False).modified_count

    def update_metrics_latest(self, content_id: ObjectId, metrics: dict[str, Any], observed_at: datetime) -> bool:
        """Move `metrics_latest` to an observation, unless the row already holds a newer one.

        `observed_at` is the row's watermark (it never regresses), so the filter
        `observed_at <= observed_at` makes an older, late observation a no-op. `metrics` must be
        whitelisted already (`pick_known_metrics`). Returns True when the row moved.
        """
        result = self._col.update_one(
            {"_id": content_id, "observed_at": {"$lte": observed_at}},
            {"$set": {"metrics_latest": metrics, "observed_at": observed_at, "updated_at": utc_now()}},
            hint="_id_",
        )
        return result.modified_count == 1

    def find_by_creator(self, creator_id: ObjectId, limit: int = 100) -> list[Content]:
        """Newest first (idx_contents_creator_published)."""
        return self._many(
            {"creator_id": creator_id},
            hint="idx_contents_creator_published",
            limit=limit,
            sort=[("published_at", DESCENDING)],
        )

    def find_children(self, parent_content_id: ObjectId) -> list[Content]:
        return self._many({"parent_content_id": parent_content_id}, hint="idx_contents_parent")

    def find_by_venue(self, venue_id: ObjectId, limit: int = 100) -> list[Content]:
        return self._many({"venue_id": venue_id}, hint="idx_contents_venue", limit=limit)
