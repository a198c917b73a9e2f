"""`tokens`: the recording marker and what happened to each of the token's URLs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Self

from pydantic import Field, field_validator

from socialrec_pipeline.domain.enums import FetchStatus, Platform
from socialrec_pipeline.domain.events import clean_symbol
from socialrec_pipeline.domain.models.base import (
    Mixed,
    NonEmptyStr,
    Subtype,
    UtcDatetime,
    _one_per_url,
    _Row,
    _Value,
)


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


class Token(_Row):
    """The marker: its existence means the token was recorded."""

    address: NonEmptyStr
    symbol: str | None = None
    first_transfer_at: UtcDatetime | None = None
    discovered_at: UtcDatetime
    fingerprints: list[str] = Field(default_factory=list)
    web: Mixed | None = None
    social_urls: list[SocialUrlRecord] = Field(default_factory=list)

    @field_validator("symbol", mode="before")
    @classmethod
    def _clean_symbol(cls, value: Any) -> Any:
        # Whatever path built the marker, its symbol obeys the one rule (domain/events.py).
        return clean_symbol(value) if isinstance(value, str) else value

    @field_validator("social_urls")
    @classmethod
    def _one_record_per_url(cls, records: list[SocialUrlRecord]) -> list[SocialUrlRecord]:
        return _one_per_url(records, "results are updated per url")

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
