"""What every stored model shares: id/datetime value types, BSON conversion, the row base class.

Ids are bson ObjectIds issued here, at construction, so a writer can point one row at another
before either is inserted. Every datetime is timezone-aware UTC, truncated to the millisecond BSON
keeps, so a model equals what the database gives back.

`to_document()` leaves out every model field that is None, at any depth (`text.body`,
`author.followers`, `metrics.followers`, `social_urls[].subtype`, ...): absent means unknown. At
top level it matters most: a stored `null` would count as "exists" for the partial indexes and
make two key-less contents collide. Free-form values (`data`, `web`) are stored as given.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from enum import Enum
from typing import Annotated, Any, Self

from bson import ObjectId
from pydantic import (
    AfterValidator,
    AllowInfNan,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    StrictFloat,
    StrictInt,
)

from socialrec_pipeline.domain.enums import ContentSubtype, VenueSubtype


def _require_object_id(value: Any) -> ObjectId:
    if not isinstance(value, ObjectId):
        raise ValueError("must be a bson ObjectId issued by us")
    return value


def _require_utc(value: datetime) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("must be timezone-aware (UTC); got a naive datetime")
    value = value.astimezone(UTC)
    # BSON dates hold milliseconds: truncate now so the stored row reads back equal.
    return value.replace(microsecond=value.microsecond - value.microsecond % 1000)


def _utc_inside(value: Any) -> Any:
    """Free-form values may hold datetimes too: each must be aware, and is stored as UTC."""
    if isinstance(value, datetime):
        return _require_utc(value)
    if isinstance(value, dict):
        return {k: _utc_inside(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_utc_inside(v) for v in value]
    return value


Oid = Annotated[ObjectId, PlainValidator(_require_object_id)]
UtcDatetime = Annotated[datetime, AfterValidator(_require_utc)]
NonEmptyStr = Annotated[str, Field(min_length=1)]
Subtype = ContentSubtype | VenueSubtype


def subtype_of(value: str | None) -> Subtype | None:
    """The subtype a routed URL names (contents first, as the `Subtype` union validates)."""
    if value is None:
        return None
    try:
        return ContentSubtype(value)
    except ValueError:
        return VenueSubtype(value)
#: Per-platform free-form fields (`data`, `web`): any shape, but datetimes are UTC like the rest.
Mixed = Annotated[dict[str, Any], AfterValidator(_utc_inside)]
#: Provider metrics by their original key names. Numbers only: a flag or a numeric string is not a
#: metric (bool would pass as int and "5" as 5 in pydantic's lax mode), nor is NaN or infinity.
Metrics = dict[str, StrictInt | Annotated[StrictFloat, AllowInfNan(False)]]


def _one_per_url(items: list[Any], rule: str) -> list[Any]:
    """`items` (each with a `url`) unless two share a url; `rule` says why that matters."""
    urls = [item.url for item in items]
    if len(set(urls)) != len(urls):
        raise ValueError(f"holds the same url twice; {rule}")
    return items


def utc_now() -> datetime:
    return _require_utc(datetime.now(UTC))


def _bson_ready(value: Any) -> Any:
    """Enums become their plain values; containers are walked. Everything else is BSON-native."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {k: _bson_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_bson_ready(v) for v in value]
    return value


def _bson_document(fields: dict[str, Any]) -> dict[str, Any]:
    """A model dump made BSON-ready, key by key."""
    return {k: _bson_ready(v) for k, v in fields.items()}


class _Value(BaseModel):
    """An embedded value (array element or sub-document)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    def to_document(self) -> dict[str, Any]:
        return _bson_document(self.model_dump(exclude_none=True))


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
        # exclude_none drops model fields only; None values inside dict fields (`data`) stay.
        return _bson_document(self.model_dump(by_alias=True, exclude_none=True))

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> Self:
        return cls.model_validate(dict(document))
