"""`token_links`: append-only successful observations "this token pointed at this object"."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from datetime import datetime
from typing import Self

from bson import ObjectId
from pydantic import Field, ValidationInfo, field_validator

from socialrec_pipeline.domain.enums import ContentSubtype, ObjectKind, Platform, VenueSubtype
from socialrec_pipeline.domain.models.base import NonEmptyStr, Oid, Subtype, UtcDatetime, _Row

#: `token_links.link_depth` is the group's distance from the root group, capped here.
LINK_MAX_DEPTH = 2

_SUBTYPE_OF_KIND: dict[ObjectKind, type[ContentSubtype] | type[VenueSubtype] | None] = {
    ObjectKind.CONTENTS: ContentSubtype,
    ObjectKind.VENUES: VenueSubtype,
    ObjectKind.ACCOUNTS: None,
}


class TokenLink(_Row):
    """One successful observation "this token pointed at this object". Append-only."""

    token_address: NonEmptyStr
    object: ObjectKind
    object_id: Oid
    #: The entry URL the observation came from; survives any later change of object_id.
    source_url: NonEmptyStr
    platform: Platform
    subtype: Subtype | None = None
    #: Written by links recorded before the marker became the only holder of the token's first
    #: transfer time; read-only (new links never carry it: read `tokens.first_transfer_at`).
    first_transfer_at: UtcDatetime | None = None
    link_depth: int = Field(ge=0, le=LINK_MAX_DEPTH)
    linked_at: UtcDatetime
    observed_at: UtcDatetime

    @field_validator("subtype")
    @classmethod
    def _subtype_of_the_linked_kind(cls, subtype: Subtype | None, info: ValidationInfo) -> Subtype | None:
        """Copied from the target: accounts have none, contents and venues their own vocabulary."""
        kind = info.data.get("object")
        if subtype is None or kind is None:
            return subtype
        expected = _SUBTYPE_OF_KIND[kind]
        if expected is None or not isinstance(subtype, expected):
            raise ValueError(f"{subtype!s} is not a subtype of {kind!s}")
        return subtype

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
