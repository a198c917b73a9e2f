"""`contents`: a coordinate in a platform's content space (SPEC §4).

Identity: first `source_urls.url`, then `(platform, subtype, platform_key)`, else a new row.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Self

from bson import ObjectId
from pydantic import Field, field_validator

from socialrec_pipeline.domain.enums import ContentSubtype, FetchStatus, ObjectKind, ParentRelation, Platform
from socialrec_pipeline.domain.graph import ContentText, Mention
from socialrec_pipeline.domain.metric_spec import pick_known_metrics
from socialrec_pipeline.domain.models.base import (
    Metrics,
    Mixed,
    NonEmptyStr,
    Oid,
    UtcDatetime,
    _one_per_url,
    _require_utc,
    _Row,
    _Value,
)


class SourceUrlEntry(_Value):
    """One distinct URL that identifies a content row (one entry per URL, not per sighting)."""

    url: NonEmptyStr
    status: FetchStatus
    observed_at: UtcDatetime


class AuthorSnapshot(_Value):
    """The author as seen when the content was observed; the account row is overwritten later."""

    account_id: Oid | None = None
    handle: str | None = None
    display_name: str | None = None
    followers: int | None = None
    account_created_at: UtcDatetime | None = None


class LinkStats(_Value):
    """Derived; never read without `computed_at`."""

    link_count: int = Field(ge=0)
    first_linked_at: UtcDatetime | None = None
    computed_at: UtcDatetime
    input_cutoff: UtcDatetime


class Content(_Row):
    platform: Platform
    subtype: ContentSubtype
    platform_key: NonEmptyStr | None = None
    source_urls: list[SourceUrlEntry] = Field(min_length=1)
    creator_id: Oid | None = None
    venue_id: Oid | None = None
    parent_content_id: Oid | None = None
    parent_relation: ParentRelation | None = None
    published_at: UtcDatetime | None = None
    observed_at: UtcDatetime
    text: ContentText = Field(default_factory=ContentText)
    links: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    mentions: list[Mention] = Field(default_factory=list)
    author: AuthorSnapshot | None = None
    metrics_latest: Metrics | None = None
    link_stats: LinkStats | None = None
    data: Mixed = Field(default_factory=dict)

    @field_validator("source_urls")
    @classmethod
    def _one_entry_per_url(cls, entries: list[SourceUrlEntry]) -> list[SourceUrlEntry]:
        return _one_per_url(entries, "keep one entry per distinct url")

    @classmethod
    def of(
        cls,
        *,
        platform: Platform,
        subtype: ContentSubtype,
        source_urls: Sequence[SourceUrlEntry],
        observed_at: datetime,
        platform_key: str | None = None,
        creator_id: ObjectId | None = None,
        venue_id: ObjectId | None = None,
        parent_content_id: ObjectId | None = None,
        parent_relation: ParentRelation | None = None,
        published_at: datetime | None = None,
        text: ContentText | None = None,
        links: Iterable[str] = (),
        tags: Iterable[str] = (),
        mentions: Iterable[Mention] = (),
        author: AuthorSnapshot | None = None,
        metrics: Mapping[str, Any] | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> Self:
        """A new row. Repeated URLs fold into one entry; `metrics` is whitelisted into metrics_latest."""
        folded: dict[str, SourceUrlEntry] = {}
        for entry in source_urls:
            folded[entry.url] = entry
        return cls(
            platform=platform,
            subtype=subtype,
            platform_key=platform_key,
            source_urls=list(folded.values()),
            creator_id=creator_id,
            venue_id=venue_id,
            parent_content_id=parent_content_id,
            parent_relation=parent_relation,
            published_at=published_at,
            observed_at=observed_at,
            text=text or ContentText(),
            links=list(links),
            tags=list(tags),
            mentions=list(mentions),
            author=author,
            metrics_latest=(
                pick_known_metrics(platform, ObjectKind.CONTENTS, metrics) if metrics else None
            ),
            data=dict(data or {}),
        )

    @property
    def urls(self) -> list[str]:
        return [e.url for e in self.source_urls]

    def add_source_url(self, url: str, status: FetchStatus, observed_at: datetime) -> None:
        """One entry per URL: a known URL gets the newer status/observed_at, a new URL is appended.

        An observation older than the entry's is ignored (delivery is not ordered).
        """
        entry = SourceUrlEntry(url=url, status=status, observed_at=observed_at)
        for i, existing in enumerate(self.source_urls):
            if existing.url == url:
                if entry.observed_at >= existing.observed_at:
                    self.source_urls[i] = entry
                return
        self.source_urls = [*self.source_urls, entry]

    def update_metrics_latest(self, metrics: Mapping[str, Any], observed_at: datetime) -> bool:
        """Accept metrics unless older than the row's observed_at (the regression guard).

        `observed_at` doubles as the watermark, so it advances with every accepted update.
        """
        at = _require_utc(observed_at)
        if at < self.observed_at:
            return False
        self.metrics_latest = pick_known_metrics(self.platform, ObjectKind.CONTENTS, metrics)
        self.observed_at = at
        return True
