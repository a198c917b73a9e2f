"""`metric_series`: one row per `(object, object_id)` (polymorphic), points capped by the write."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Self

from bson import ObjectId
from pydantic import Field

from socialrec_pipeline.domain.enums import ObjectKind, Platform
from socialrec_pipeline.domain.metric_spec import pick_known_metrics
from socialrec_pipeline.domain.models.base import Metrics, Oid, UtcDatetime, _Row, _Value

#: `metric_series.points` keeps the newest this many points; the write itself enforces it.
SERIES_POINT_CAP = 200


class MetricPoint(_Value):
    at: UtcDatetime
    metrics: Metrics = Field(default_factory=dict)

    @classmethod
    def of(
        cls, platform: Platform, object_kind: ObjectKind, metrics: Mapping[str, Any], at: datetime
    ) -> Self:
        """A point holding only the whitelisted metrics (METRIC_SPEC)."""
        return cls(at=at, metrics=pick_known_metrics(platform, object_kind, metrics))


class MetricSeries(_Row):
    """One row per (object, object_id); points are capped at SERIES_POINT_CAP by the write."""

    object: ObjectKind
    object_id: Oid
    platform: Platform
    points: list[MetricPoint] = Field(default_factory=list, max_length=SERIES_POINT_CAP)
    #: The metric refresh queue (maintained by the repository's writes, SPEC §9): the newest
    #: point's time, the newest link's time, and the queue key (absent: not a refresh candidate).
    last_point_at: UtcDatetime | None = None
    linked_at: UtcDatetime | None = None
    refresh_at: UtcDatetime | None = None

    @classmethod
    def of(
        cls,
        object: ObjectKind,
        object_id: ObjectId,
        platform: Platform,
        points: Iterable[MetricPoint] = (),
    ) -> Self:
        """A series to write. Each point keeps only the metrics METRIC_SPEC allows for this
        platform × object kind, however the point was built (the whitelist holds at write time)."""
        kept = [
            p.model_copy(update={"metrics": pick_known_metrics(platform, object, p.metrics)})
            for p in points
        ]
        return cls(object=object, object_id=object_id, platform=platform, points=kept)

    def latest_point(self) -> MetricPoint | None:
        return self.points[-1] if self.points else None
