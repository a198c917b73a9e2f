"""`metric_series`: one row per (object, object_id), points capped by the write itself.

Every write filters on the full unique key (object, object_id), so it hits `uniq_series_object`
and an upsert cannot race past the unique constraint into a second row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

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
    def __init__(self, db: Database) -> None:
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
            ops.append(
                UpdateOne(
                    self._key(object_kind, object_id),
                    {"$setOnInsert": stamped(doc, now)},
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
                "$setOnInsert": {"_id": ObjectId(), "platform": str(platform), "created_at": now},
            },
            upsert=True,
        )

    def find_by_object(self, object: ObjectKind, object_id: ObjectId) -> MetricSeries | None:
        doc = self._col.find_one(self._key(object, object_id))
        return MetricSeries.from_document(doc) if doc else None

    def find_latest_point(self, object: ObjectKind, object_id: ObjectId) -> MetricPoint | None:
        doc = self._col.find_one(self._key(object, object_id), {"points": {"$slice": -1}})
        if not doc or not doc.get("points"):
            return None
        return MetricPoint.model_validate(doc["points"][-1])

    @staticmethod
    def _key(object: ObjectKind, object_id: ObjectId) -> dict:
        return {"object": str(object), "object_id": object_id}
