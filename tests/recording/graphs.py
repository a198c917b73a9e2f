"""Graph builders and small test generators implementing the Generator protocol."""

from __future__ import annotations

import threading
from datetime import datetime

from socialrec_pipeline.domain.enums import ContentSubtype, ParentRelation, Platform, VenueSubtype
from socialrec_pipeline.domain.graph import (
    AccountDraft,
    ContentDraft,
    GraphGroup,
    SocialObjectGraph,
    VenueDraft,
)
from socialrec_pipeline.providers.base import GenerateOptions
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.routing.types import RoutedUrl


def x_account(key: str, handle: str | None = None, followers: int = 100) -> AccountDraft:
    return AccountDraft(
        platform=Platform.X, platform_key=key, handle=handle or f"h{key}", followers=followers,
        metrics={"followers": followers, "bogus": 1},
    )


def tweet(tweet_id: str, views: int = 10) -> ContentDraft:
    return ContentDraft(
        platform=Platform.X, subtype=ContentSubtype.TWEET, platform_key=tweet_id,
        url=f"https://x.com/i/status/{tweet_id}", metrics={"viewCount": views, "typoCount": 3},
    )


def tweet_with_quote(tweet_id="100", quoted_id="200", author="u1", quoted_author="u2") -> SocialObjectGraph:
    """A tweet quoting an original; groups deliberately listed child first."""
    return SocialObjectGraph(
        root_ref="t",
        groups=[
            GraphGroup(ref="t", creator=x_account(author), content=tweet(tweet_id),
                       parent_ref="q", parent_relation=ParentRelation.QUOTE),
            GraphGroup(ref="q", creator=x_account(quoted_author), content=tweet(quoted_id)),
        ],
    )


def chain(n: int, prefix: str = "c") -> SocialObjectGraph:
    """n groups, each quoting the next (root first), each with its own author; one community venue."""
    groups = []
    for i in range(n):
        groups.append(
            GraphGroup(
                ref=f"g{i}",
                creator=x_account(f"{prefix}a{i}"),
                venue=VenueDraft(platform=Platform.X, subtype=VenueSubtype.COMMUNITY,
                                 platform_key=f"{prefix}v", metrics={"member_count": 5}) if i == 0 else None,
                content=tweet(f"{prefix}{i}"),
                parent_ref=f"g{i + 1}" if i + 1 < n else None,
                parent_relation=ParentRelation.QUOTE if i + 1 < n else None,
            )
        )
    return SocialObjectGraph(root_ref="g0", groups=list(reversed(groups)))


class FixedGenerator:
    """Returns a fixed graph (or a graph built per URL) and counts calls."""

    def __init__(self, source_types, graph=None, *, external: bool = True, build=None) -> None:
        self.source_types = frozenset(source_types)
        self.makes_external_calls = external
        self._graph = graph
        self._build = build
        self.calls: list[str] = []
        self._lock = threading.Lock()

    def generate(self, routed: RoutedUrl, options: GenerateOptions, observed_at: datetime) -> SocialObjectGraph:
        with self._lock:
            self.calls.append(routed.canonical_url)
        if self._build is not None:
            return self._build(routed)
        return self._graph


class RaisingGenerator:
    def __init__(self, source_types, error: BaseException, *, external: bool = True) -> None:
        self.source_types = frozenset(source_types)
        self.makes_external_calls = external
        self.error = error
        self.calls: list[str] = []

    def generate(self, routed, options, observed_at):
        self.calls.append(routed.canonical_url)
        raise self.error


def routed(url: str, source_type: SourceType, key: str | None) -> RoutedUrl:
    from socialrec_pipeline.routing.source_types import source_type_info

    info = source_type_info(source_type)
    return RoutedUrl(input=url, canonical_url=url, source_type=source_type, source_key=key,
                     object=info.object, platform=info.platform, subtype=info.subtype)
