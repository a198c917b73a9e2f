"""`metric_series`: one row per (object, object_id), points capped by the write itself.

Every write filters on the full unique key (object, object_id), so it hits `uniq_series_object`
and an upsert cannot race past the unique constraint into a second row.

The metric refresh queue lives in the same row (SPEC §9). Only objects with metrics have a row,
so only they are candidates:
- `last_point_at`: when the newest point was observed (moves forward only);
- `linked_at`: the newest time a recording linked the object (moves forward only);
- `refresh_at`: the queue key — the last point, or the last refresh attempt that could not add
  one — present only while the object is in the refresh window. `idx_series_refresh`
  (platform, refresh_at) gives the objects waiting longest first, per platform; an object met
  outside the window leaves the queue (`leave_refresh_queue`) and a new link brings it back.
"""

from __future__ import annotations

import heapq
from collections.abc import Generator, Iterable, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from bson import ObjectId
from pymongo import UpdateOne
from pymongo.database import Database

from socialrec_pipeline.domain.enums import ObjectKind, Platform
from socialrec_pipeline.domain.models import SERIES_POINT_CAP, MetricPoint, MetricSeries, utc_now
from socialrec_pipeline.store.collections import METRIC_SERIES, collection
from socialrec_pipeline.store.rows import stamped


class FirstPoint(NamedTuple):
    object: ObjectKind
    object_id: ObjectId
    platform: Platform
    point: MetricPoint


class MetricSeriesRepository:
    def __init__(self, db: Database[dict[str, Any]]) -> None:
        self._col = collection(db, METRIC_SERIES)

    def record_first_points(
        self, points: Sequence[FirstPoint | tuple[ObjectKind, ObjectId, Platform, MetricPoint]]
    ) -> int:
        """Create the series of each object with this point; an existing series is left alone.

        Recording only ever writes the first observation (`$setOnInsert`); later points come from
        the metric refresh through `append_point`. One bulk write. Returns how many were created.
        """
        if not points:
            return 0
        now = utc_now()
        ops = []
        for object_kind, object_id, platform, point in points:
            series = MetricSeries.of(object_kind, object_id, platform, [point])
            doc = series.to_document()
            del doc["object"], doc["object_id"]  # inserted from the filter's equality
            doc["last_point_at"] = point.at
            ops.append(
                UpdateOne(
                    self._key(object_kind, object_id),
                    {
                        "$setOnInsert": stamped(doc, now),
                        # Linked (again) now: in the refresh window. An existing row keeps its
                        # older queue key; one that had left the queue comes back.
                        "$max": {"linked_at": point.at},
                        "$min": {"refresh_at": point.at},
                    },
                    upsert=True,
                )
            )
        return self._col.bulk_write(ops, ordered=False).upserted_count

    def record_first_point(
        self, object: ObjectKind, object_id: ObjectId, platform: Platform, point: MetricPoint
    ) -> bool:
        return self.record_first_points([FirstPoint(object, object_id, platform, point)]) == 1

    def append_point(
        self, object: ObjectKind, object_id: ObjectId, platform: Platform, point: MetricPoint
    ) -> None:
        """Push a point, keeping only the newest SERIES_POINT_CAP; creates the series if absent.

        The point's metrics are whitelisted for (platform, object) like every series write.
        """
        (kept,) = MetricSeries.of(object, object_id, platform, [point]).points
        now = utc_now()
        self._col.update_one(
            self._key(object, object_id),
            {
                "$push": {"points": {"$each": [kept.to_document()], "$slice": -SERIES_POINT_CAP}},
                "$set": {"updated_at": now},
                "$max": {"last_point_at": kept.at, "refresh_at": kept.at},
                "$setOnInsert": {"_id": ObjectId(), "platform": str(platform), "created_at": now},
            },
            upsert=True,
        )

    # -- the refresh queue -----------------------------------------------------------------------
    @staticmethod
    def refresh_due_filter(platform: Platform | str, due_before: datetime) -> dict[str, Any]:
        """One platform's objects waiting since `due_before` or longer: a range on idx_series_refresh."""
        return {"platform": str(platform), "refresh_at": {"$lte": due_before}}

    def iter_refresh_due(
        self, platforms: Iterable[Platform], due_before: datetime, batch: int = 100
    ) -> Generator[dict[str, Any], None, None]:
        """Queue entries (`object`, `object_id`, `platform`, `refresh_at`, `last_point_at`,
        `linked_at`, `created_at`) waiting since `due_before` or longer, longest-waiting first across
        `platforms`: one index range scan per platform, merged. Consume lazily; close by exhausting
        or dropping the iterator."""
        projection = {"object": 1, "object_id": 1, "platform": 1, "refresh_at": 1, "last_point_at": 1,
                      "linked_at": 1, "created_at": 1}
        cursors = [
            self._col.find(self.refresh_due_filter(p, due_before), projection)
            .sort([("platform", 1), ("refresh_at", 1)])
            .hint("idx_series_refresh")
            .batch_size(batch)
            for p in dict.fromkeys(str(p) for p in platforms)
        ]
        heap: list[tuple[datetime, int, dict[str, Any]]] = []
        try:
            for i, cursor in enumerate(cursors):
                doc = next(cursor, None)
                if doc is not None:
                    heap.append((doc["refresh_at"], i, doc))
            heapq.heapify(heap)
            while heap:
                _, i, doc = heapq.heappop(heap)
                yield doc
                following = next(cursors[i], None)
                if following is not None:
                    heapq.heappush(heap, (following["refresh_at"], i, following))
        finally:
            for cursor in cursors:
                cursor.close()

    def touch_refresh(self, object: ObjectKind, object_id: ObjectId, at: datetime) -> None:
        """A refresh attempt added no point (the fetch failed, the object had no metrics): the object
        goes to the back of the queue, so one failing URL cannot take every run's budget."""
        # Only while queued: an object out of the window (or gone for good) stays out.
        self._col.update_one(
            {**self._key(object, object_id), "refresh_at": {"$exists": True}}, {"$max": {"refresh_at": at}},
            hint="uniq_series_object",
        )

    def leave_refresh_queue(self, object: ObjectKind, object_id: ObjectId) -> None:
        """Out of the refresh window (or gone for good): no longer a candidate until linked again."""
        self._col.update_one(self._key(object, object_id), {"$unset": {"refresh_at": ""}})

    def find_last_point_times(
        self, keys: Iterable[tuple[ObjectKind, ObjectId]]
    ) -> dict[tuple[str, ObjectId], datetime | None]:
        """`last_point_at` of each (object, object_id) that has a series: one `$in` per object kind."""
        by_kind: dict[str, list[ObjectId]] = {}
        for kind, object_id in keys:
            by_kind.setdefault(str(kind), []).append(object_id)
        found: dict[tuple[str, ObjectId], datetime | None] = {}
        for kind_name, ids in by_kind.items():
            cursor = self._col.find(
                {"object": kind_name, "object_id": {"$in": list(dict.fromkeys(ids))}},
                {"object_id": 1, "last_point_at": 1, "points": {"$slice": -1}},
            ).hint("uniq_series_object")
            for doc in cursor:
                last = doc.get("last_point_at") or (doc["points"][-1]["at"] if doc.get("points") else None)
                found[(kind_name, doc["object_id"])] = last
        return found

    def backfill_refresh_queue(self) -> int:
        """One-off migration for rows written before the queue fields existed: `last_point_at` and
        `refresh_at` from the newest point, `linked_at` from `created_at`. Returns rows updated."""
        updated = 0
        cursor = self._col.find(
            {"platform": {"$in": [p.value for p in Platform]}},
            {"object": 1, "object_id": 1, "last_point_at": 1, "created_at": 1, "points": {"$slice": -1}},
        ).hint("idx_series_platform")
        for doc in cursor:
            if "last_point_at" in doc or not doc.get("points"):
                continue
            at = doc["points"][-1]["at"]
            fields: dict[str, Any] = {"last_point_at": at, "refresh_at": at}
            if doc.get("created_at"):
                fields["linked_at"] = doc["created_at"]
            self._col.update_one({"object": doc["object"], "object_id": doc["object_id"]}, {"$set": fields})
            updated += 1
        return updated

    def find_by_object(self, object: ObjectKind, object_id: ObjectId) -> MetricSeries | None:
        doc = self._col.find_one(self._key(object, object_id))
        return MetricSeries.from_document(doc) if doc else None

    def find_latest_point(self, object: ObjectKind, object_id: ObjectId) -> MetricPoint | None:
        doc = self._col.find_one(self._key(object, object_id), {"points": {"$slice": -1}})
        if not doc or not doc.get("points"):
            return None
        return MetricPoint.model_validate(doc["points"][-1])

    @staticmethod
    def _key(object: ObjectKind, object_id: ObjectId) -> dict[str, Any]:
        return {"object": str(object), "object_id": object_id}
