"""`accounts` (who) and `venues` (where): rows identified by `(platform, platform_key)`.

As built (SPEC §4): no `source_urls`, and `platform_key` is required — a
generator that cannot produce a key for an account or venue does not return that object.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any, Self

from bson import ObjectId
from pydantic import Field, ValidationInfo, field_validator

from socialrec_pipeline.domain.enums import Platform, VenueSubtype
from socialrec_pipeline.domain.graph import DeclaredHandle
from socialrec_pipeline.domain.handles import handle_key
from socialrec_pipeline.domain.models.base import (
    Mixed,
    NonEmptyStr,
    Oid,
    UtcDatetime,
    _require_utc,
    _Row,
    _Value,
)


class HandleInterval(_Value):
    #: The handle as the platform spells it.
    value: NonEmptyStr
    #: What the platform matches it by (`domain/handles.py`); filled by `Account` from its platform.
    key: NonEmptyStr | None = None
    first_seen: UtcDatetime
    last_seen: UtcDatetime


class AccountMetrics(_Value):
    #: Same meaning on every platform, hence shared (the per-platform counts live in metric_series).
    followers: int | None = None


class Moderation(_Value):
    unavailable: bool | None = None
    #: When `unavailable` last changed (set, or cleared by a sighting of the account alive).
    changed_at: UtcDatetime | None = None


class VenueMetrics(_Value):
    members: int | None = None


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
    data: Mixed = Field(default_factory=dict)

    @field_validator("handles")
    @classmethod
    def _keyed(cls, handles: list[HandleInterval], info: ValidationInfo) -> list[HandleInterval]:
        """Every interval carries its platform's key (rows stored before keys existed included)."""
        platform = info.data.get("platform")
        if platform is None:
            return handles
        return [
            h if h.key is not None else h.model_copy(update={"key": handle_key(platform, h.value)}) for h in handles
        ]

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

        Only the last interval is compared, by key (`domain/handles.py`): a case-only change is the
        same handle. Same handle: its last_seen extends, and a sighting at least as new as it
        brings the platform's current spelling. A different handle opens a new interval and the
        previous one keeps its last_seen, so the time between the last sighting of A and the first
        of B belongs to nobody (we never saw who held it). A→B→A makes three intervals: two
        separate periods of owning A must not merge across B.
        """
        at = _require_utc(observed_at)
        key = handle_key(self.platform, value)
        if self.handles and self.handles[-1].key == key:
            last = self.handles[-1]
            if at >= last.last_seen:
                last.value = value
            if at > last.last_seen:
                last.last_seen = at
            return
        if self.handles and self.handles[-1].last_seen > at:
            # Out-of-order arrival: cut the previous interval back so the two cannot overlap.
            previous = self.handles[-1]
            previous.last_seen = max(at, previous.first_seen)
        self.handles = [*self.handles, HandleInterval(value=value, key=key, first_seen=at, last_seen=at)]

    def had_handle_at(self, handle: str, at: datetime) -> bool:
        moment = _require_utc(at)
        key = handle_key(self.platform, handle)
        return any(h.key == key and h.first_seen <= moment <= h.last_seen for h in self.handles)

    def current_handle(self) -> str | None:
        return self.handles[-1].value if self.handles else None

    def currently_holds(self, handle: str) -> bool:
        """The latest handle is `handle`, compared the way the platform compares handles."""
        return bool(self.handles) and self.handles[-1].key == handle_key(self.platform, handle)

    def is_observed_later_than(self, other: Account) -> bool:
        return self.observed_at > other.observed_at

    def is_full_profile(self) -> bool:
        return is_full_profile(self.data)


def is_full_profile(data: Mapping[str, Any]) -> bool:
    """An observation is a full profile unless it arrived embedded in another answer
    (`data.source_ref` names that answer: `tweet`, `repo`, `post`, ...)."""
    return SOURCE_REF not in data


def has_fresh_profile(row: Account | Venue, at: datetime, max_age: timedelta) -> bool:
    """The row holds a full profile observed less than `max_age` before `at` (the rule behind
    `SOCIALREC_PROFILE_MAX_AGE_HOURS`: such a profile is not fetched again, and the thin copies
    met meanwhile borrow from it). An account flagged unavailable is never fresh."""
    if not max_age:
        return False
    if isinstance(row, Account) and row.moderation.unavailable is True:
        return False
    stamp = row.data.get(PROFILE_OBSERVED_AT)
    return isinstance(stamp, datetime) and stamp > _require_utc(at) - max_age


#: `data` key (ours) marking an account or venue observed only as a thin copy inside another answer.
SOURCE_REF = "source_ref"
#: `data` key (ours): when the row last received a full profile (drives the profile-fetch skip).
PROFILE_OBSERVED_AT = "profile_observed_at"


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
    data: Mixed = Field(default_factory=dict)

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

    def is_full_profile(self) -> bool:
        return is_full_profile(self.data)
