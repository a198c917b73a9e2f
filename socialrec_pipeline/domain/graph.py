"""The generator contract: a `SocialObjectGraph` of groups joined by local refs (SPEC §5).

Generators run before anything is stored, so they cannot know `_id`s. They describe objects as
*drafts* and tie them together with local `ref` strings; the graph writer validates the graph,
orders it and turns drafts into rows.

Inside one group the creator is the author of the group's main object: the content when there is
one, otherwise the venue (an X community's creator, say). The writer sets `contents.creator_id`,
`contents.venue_id`, `venues.creator_id` and `contents.parent_content_id` from that shape.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from socialrec_pipeline.domain.enums import ContentSubtype, ParentRelation, Platform, VenueSubtype


class _Draft(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class Mention(_Draft):
    """A value, never an `_id` reference: unobserved accounts get no row."""

    platform_key: str = Field(min_length=1)
    screen_name: str | None = None


class DeclaredHandle(_Draft):
    platform: Platform
    value: str = Field(min_length=1)


class ContentText(_Draft):
    primary: str | None = None
    body: str | None = None
    from_media: str | None = None


class AccountDraft(_Draft):
    platform: Platform
    #: Required by the graph contract; the writer rejects a graph whose account lacks it.
    platform_key: str | None = None
    handle: str | None = None
    account_created_at: datetime | None = None
    display_name: str | None = None
    bio: str | None = None
    links: list[str] = Field(default_factory=list)
    declared_handles: list[DeclaredHandle] = Field(default_factory=list)
    known_wallets: list[str] = Field(default_factory=list)
    #: Same meaning on every platform, so it is a shared field (`accounts.metrics.followers`).
    followers: int | None = None
    unavailable: bool | None = None
    #: Provider metric key names as the provider spells them; whitelisted at write time.
    metrics: dict[str, Any] = Field(default_factory=dict)
    data: dict[str, Any] = Field(default_factory=dict)


class VenueDraft(_Draft):
    platform: Platform
    subtype: VenueSubtype
    #: Required by the graph contract; the writer rejects a graph whose venue lacks it.
    platform_key: str | None = None
    name: str | None = None
    description: str | None = None
    venue_created_at: datetime | None = None
    members: int | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)
    data: dict[str, Any] = Field(default_factory=dict)


class ContentDraft(_Draft):
    platform: Platform
    subtype: ContentSubtype
    platform_key: str | None = None
    #: Canonical URL built from this content's own key. A row derived from a response (a quoted
    #: original, a fork parent) is identified by it; the root content additionally gets the entry URL.
    url: str | None = None
    published_at: datetime | None = None
    text: ContentText = Field(default_factory=ContentText)
    links: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    mentions: list[Mention] = Field(default_factory=list)
    metrics: dict[str, Any] = Field(default_factory=dict)
    data: dict[str, Any] = Field(default_factory=dict)


class GraphGroup(_Draft):
    ref: str = Field(min_length=1)
    creator: AccountDraft | None = None
    venue: VenueDraft | None = None
    content: ContentDraft | None = None
    parent_ref: str | None = None
    parent_relation: ParentRelation | None = None

    def is_empty(self) -> bool:
        return self.creator is None and self.venue is None and self.content is None


class SocialObjectGraph(_Draft):
    """Group order carries no meaning; the writer orders groups by `parent_ref`."""

    groups: list[GraphGroup]
    root_ref: str
    #: Whether building this graph sent a request. None: the generator's `makes_external_calls`
    #: says. A generator whose calls are optional (urlscan enrichment) sets it per graph, so a URL
    #: that was built from the URL alone never counts an attempt.
    external_call_made: bool | None = Field(default=None, exclude=True)

    @classmethod
    def single(cls, group: GraphGroup) -> SocialObjectGraph:
        return cls(groups=[group], root_ref=group.ref)
