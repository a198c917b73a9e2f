"""The six stored collections as pydantic models: fields, factories, state changes. No IO.

Shape: seed 000 §1.3-1.9 as changed by SPEC §4 (accounts/venues have no `source_urls` and a
required `platform_key`; `token_links` carries no status/name_match/lineage; `tokens` records
`social_urls[]`). Ids are bson ObjectIds issued here, at construction, so a writer can point one
row at another before either is inserted. Every datetime is timezone-aware UTC, truncated to the
millisecond BSON keeps, so a model equals what the database gives back.

`to_document()` leaves out top-level fields that are None: a stored `null` would count as
"exists" for the partial indexes and make two key-less contents collide.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from enum import Enum
from typing import Annotated, Any, Self

from bson import ObjectId
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    field_validator,
)

from socialrec_pipeline.domain.enums import (
    ContentSubtype,
    FetchStatus,
    ObjectKind,
    ParentRelation,
    Platform,
    VenueSubtype,
)
from socialrec_pipeline.domain.graph import ContentText, DeclaredHandle, Mention
from socialrec_pipeline.domain.metric_spec import pick_known_metrics

#: `token_links.link_depth` is the group's distance from the root group, capped here.
LINK_MAX_DEPTH = 2
#: `metric_series.points` keeps the newest this many points; the write itself enforces it.
SERIES_POINT_CAP = 200


def _require_object_id(value: Any) -> ObjectId:
    if not isinstance(value, ObjectId):
        raise ValueError("must be a bson ObjectId issued by us")
    return value


def _require_utc(value: datetime) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("must be timezone-aware (UTC); got a naive datetime")
    value = value.astimezone(timezone.utc)
    # BSON dates hold milliseconds: truncate now so the stored row reads back equal.
    return value.replace(microsecond=value.microsecond - value.microsecond % 1000)


Oid = Annotated[ObjectId, PlainValidator(_require_object_id)]
UtcDatetime = Annotated[datetime, AfterValidator(_require_utc)]
NonEmptyStr = Annotated[str, Field(min_length=1)]
Subtype = ContentSubtype | VenueSubtype


def utc_now() -> datetime:
    return _require_utc(datetime.now(timezone.utc))


def _bson_ready(value: Any) -> Any:
    """Enums become their plain values; containers are walked. Everything else is BSON-native."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {k: _bson_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_bson_ready(v) for v in value]
    return value


class _Value(BaseModel):
    """An embedded value (array element or sub-document)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    def to_document(self) -> dict[str, Any]:
        return _bson_ready(self.model_dump())


class _Row(BaseModel):
    """A stored document. `id` is `_id` in the database."""

    model_config = ConfigDict(
        extra="forbid",
        validate_assignment=True,
        validate_by_name=True,
        validate_by_alias=True,
        arbitrary_types_allowed=True,
    )

    id: Oid = Field(default_factory=ObjectId, alias="_id")
    #: When we stored the row (set by the repository, never by a provider).
    created_at: UtcDatetime | None = None
    updated_at: UtcDatetime | None = None

    def to_document(self) -> dict[str, Any]:
        doc = self.model_dump(by_alias=True)
        return {k: _bson_ready(v) for k, v in doc.items() if v is not None}

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> Self:
        return cls.model_validate(dict(document))


# --------------------------------------------------------------------------- embedded values


class SourceUrlEntry(_Value):
    """One distinct URL that identifies a content row (D-8: one entry per URL, not per sighting)."""

    url: NonEmptyStr
    status: FetchStatus
    observed_at: UtcDatetime


class HandleInterval(_Value):
    value: NonEmptyStr
    first_seen: UtcDatetime
    last_seen: UtcDatetime


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


class AccountMetrics(_Value):
    #: Same meaning on every platform, hence shared (the per-platform counts live in metric_series).
    followers: int | None = None


class Moderation(_Value):
    unavailable: bool | None = None


class VenueMetrics(_Value):
    members: int | None = None


class SocialUrlRecord(_Value):
    """What happened to one URL of one token (`tokens.social_urls[]`)."""

    #: Canonical URL when routing succeeded, else the raw text; unique within a token.
    url: NonEmptyStr
    raw_url: str
    source_field: str | None = None
    source_type: str | None = None
    source_key: str | None = None
    platform: Platform | None = None
    subtype: Subtype | None = None
    status: FetchStatus
    attempted_at: UtcDatetime
    attempts: int = Field(default=0, ge=0)


class MetricPoint(_Value):
    at: UtcDatetime
    metrics: dict[str, int | float] = Field(default_factory=dict)

    @classmethod
    def of(
        cls, platform: Platform, object_kind: ObjectKind, metrics: Mapping[str, Any], at: datetime
    ) -> Self:
        """A point holding only the whitelisted metrics (METRIC_SPEC)."""
        return cls(at=at, metrics=pick_known_metrics(platform, object_kind, metrics))


# --------------------------------------------------------------------------- contents


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
    metrics_latest: dict[str, int | float] | None = None
    link_stats: LinkStats | None = None
    data: dict[str, Any] = Field(default_factory=dict)

    @field_validator("source_urls")
    @classmethod
    def _one_entry_per_url(cls, entries: list[SourceUrlEntry]) -> list[SourceUrlEntry]:
        urls = [e.url for e in entries]
        if len(set(urls)) != len(urls):
            raise ValueError("holds the same url twice; keep one entry per distinct url")
        return entries

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


# --------------------------------------------------------------------------- accounts


class Account(_Row):
    platform: Platform
    #: The identity of an account (unique with platform); a key-less account is never stored.
    platform_key: NonEmptyStr
    handles: list[HandleInterval] = Field(default_factory=list)
    account_created_at: UtcDatetime | None = None
    display_name: str | None = None
    bio: str | None = None
    links: list[str] = Field(default_factory=list)
    declared_handles: list[DeclaredHandle] = Field(default_factory=list)
    known_wallets: list[str] = Field(default_factory=list)
    metrics: AccountMetrics = Field(default_factory=AccountMetrics)
    moderation: Moderation = Field(default_factory=Moderation)
    observed_at: UtcDatetime
    data: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(
        cls,
        *,
        platform: Platform,
        platform_key: str,
        observed_at: datetime,
        handle: str | None = None,
        account_created_at: datetime | None = None,
        display_name: str | None = None,
        bio: str | None = None,
        links: Iterable[str] = (),
        declared_handles: Iterable[DeclaredHandle] = (),
        known_wallets: Iterable[str] = (),
        followers: int | None = None,
        unavailable: bool | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> Self:
        account = cls(
            platform=platform,
            platform_key=platform_key,
            account_created_at=account_created_at,
            display_name=display_name,
            bio=bio,
            links=list(links),
            declared_handles=list(declared_handles),
            known_wallets=list(known_wallets),
            metrics=AccountMetrics(followers=followers),
            moderation=Moderation(unavailable=unavailable),
            observed_at=observed_at,
            data=dict(data or {}),
        )
        if handle:
            account.add_handle_observation(handle, observed_at)
        return account

    def add_handle_observation(self, value: str, observed_at: datetime) -> None:
        """Record that the account used `value` at `observed_at`.

        Only the last interval is compared. Same handle: its last_seen extends. A different handle
        opens a new interval and the previous one keeps its last_seen, so the time between the last
        sighting of A and the first of B belongs to nobody (we never saw who held it). A→B→A makes
        three intervals: two separate periods of owning A must not merge across B.
        """
        at = _require_utc(observed_at)
        if self.handles and self.handles[-1].value == value:
            last = self.handles[-1]
            if at > last.last_seen:
                last.last_seen = at
            return
        if self.handles and self.handles[-1].last_seen > at:
            # Out-of-order arrival: cut the previous interval back so the two cannot overlap.
            previous = self.handles[-1]
            previous.last_seen = max(at, previous.first_seen)
        self.handles = [*self.handles, HandleInterval(value=value, first_seen=at, last_seen=at)]

    def had_handle_at(self, handle: str, at: datetime) -> bool:
        moment = _require_utc(at)
        return any(
            h.value == handle and h.first_seen <= moment <= h.last_seen for h in self.handles
        )

    def current_handle(self) -> str | None:
        return self.handles[-1].value if self.handles else None

    def is_observed_later_than(self, other: Account) -> bool:
        return self.observed_at > other.observed_at


# --------------------------------------------------------------------------- venues


class Venue(_Row):
    platform: Platform
    #: Mutable on Telegram (channel / group / shell); not part of the identity.
    subtype: VenueSubtype
    platform_key: NonEmptyStr
    name: str | None = None
    description: str | None = None
    venue_created_at: UtcDatetime | None = None
    creator_id: Oid | None = None
    metrics: VenueMetrics = Field(default_factory=VenueMetrics)
    observed_at: UtcDatetime
    data: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(
        cls,
        *,
        platform: Platform,
        subtype: VenueSubtype,
        platform_key: str,
        observed_at: datetime,
        name: str | None = None,
        description: str | None = None,
        venue_created_at: datetime | None = None,
        creator_id: ObjectId | None = None,
        members: int | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> Self:
        return cls(
            platform=platform,
            subtype=subtype,
            platform_key=platform_key,
            name=name,
            description=description,
            venue_created_at=venue_created_at,
            creator_id=creator_id,
            metrics=VenueMetrics(members=members),
            observed_at=observed_at,
            data=dict(data or {}),
        )


# --------------------------------------------------------------------------- tokens


class Token(_Row):
    """The marker: its existence means the token was recorded."""

    address: NonEmptyStr
    symbol: str | None = None
    first_transfer_at: UtcDatetime | None = None
    discovered_at: UtcDatetime
    fingerprints: list[str] = Field(default_factory=list)
    web: dict[str, Any] | None = None
    social_urls: list[SocialUrlRecord] = Field(default_factory=list)

    @field_validator("social_urls")
    @classmethod
    def _one_record_per_url(cls, records: list[SocialUrlRecord]) -> list[SocialUrlRecord]:
        urls = [r.url for r in records]
        if len(set(urls)) != len(urls):
            raise ValueError("holds the same url twice; results are updated per url")
        return records

    @classmethod
    def of(
        cls,
        *,
        address: str,
        discovered_at: datetime,
        symbol: str | None = None,
        first_transfer_at: datetime | None = None,
        social_urls: Iterable[SocialUrlRecord] = (),
        fingerprints: Iterable[str] = (),
        web: Mapping[str, Any] | None = None,
    ) -> Self:
        return cls(
            address=address,
            symbol=symbol,
            first_transfer_at=first_transfer_at,
            discovered_at=discovered_at,
            fingerprints=list(dict.fromkeys(fingerprints)),
            web=dict(web) if web is not None else None,
            social_urls=list(social_urls),
        )

    def social_url(self, url: str) -> SocialUrlRecord | None:
        return next((r for r in self.social_urls if r.url == url), None)

    def add_fingerprints(self, values: Iterable[str]) -> None:
        self.fingerprints = list(dict.fromkeys([*self.fingerprints, *values]))

    def update_web(self, web: Mapping[str, Any]) -> None:
        self.web = dict(web)


# --------------------------------------------------------------------------- token_links


class TokenLink(_Row):
    """One successful observation "this token pointed at this object". Append-only."""

    token_address: NonEmptyStr
    object: ObjectKind
    object_id: Oid
    #: The entry URL the observation came from; survives any later change of object_id.
    source_url: NonEmptyStr
    platform: Platform
    subtype: Subtype | None = None
    first_transfer_at: UtcDatetime | None = None
    link_depth: int = Field(ge=0, le=LINK_MAX_DEPTH)
    linked_at: UtcDatetime
    observed_at: UtcDatetime

    @classmethod
    def of(
        cls,
        *,
        token_address: str,
        object: ObjectKind,
        object_id: ObjectId,
        source_url: str,
        platform: Platform,
        linked_at: datetime,
        observed_at: datetime,
        subtype: ContentSubtype | VenueSubtype | None = None,
        first_transfer_at: datetime | None = None,
        ancestor_ids: Iterable[Hashable] = (),
    ) -> Self:
        """`link_depth` is derived from the ancestors (groups between this object and the root).

        It is never a parameter: a depth passed separately could disagree with the graph and the
        "tokens that quoted X" counts would be wrong without any error.
        """
        distinct = {a for a in ancestor_ids if a != object_id}
        return cls(
            token_address=token_address,
            object=object,
            object_id=object_id,
            source_url=source_url,
            platform=platform,
            subtype=subtype,
            first_transfer_at=first_transfer_at,
            link_depth=min(len(distinct), LINK_MAX_DEPTH),
            linked_at=linked_at,
            observed_at=observed_at,
        )

    def is_direct(self) -> bool:
        return self.link_depth == 0


# --------------------------------------------------------------------------- metric_series


class MetricSeries(_Row):
    """One row per (object, object_id); points are capped at SERIES_POINT_CAP by the write."""

    object: ObjectKind
    object_id: Oid
    platform: Platform
    points: list[MetricPoint] = Field(default_factory=list, max_length=SERIES_POINT_CAP)

    @classmethod
    def of(
        cls,
        object: ObjectKind,
        object_id: ObjectId,
        platform: Platform,
        points: Iterable[MetricPoint] = (),
    ) -> Self:
        return cls(object=object, object_id=object_id, platform=platform, points=list(points))

    def latest_point(self) -> MetricPoint | None:
        return self.points[-1] if self.points else None
