"""Instagram through the Apify actor `apify~instagram-scraper` (paid; gated off by default).

Posts, reels and IGTV → one group `{creator?, content}`; profiles → one group `{creator}`.
`instagram_story` is deliberately NOT handled: the actor does not fetch stories (they need a
logged-in session), so the source type stays unregistered and is recorded `unsupported` —
retryable with zero calls — instead of a made-up absorbing status (docs/generators.md).
Instagram supplies no account creation date, so `account_created_at` is structurally absent.
"""

from __future__ import annotations

from typing import Any

from socialrec_pipeline.domain.enums import ContentSubtype, Platform
from socialrec_pipeline.domain.errors import TargetBlocked, TransientProviderError
from socialrec_pipeline.domain.graph import AccountDraft, ContentDraft, ContentText, GraphGroup, SocialObjectGraph
from socialrec_pipeline.providers.apify import ApifyClient
from socialrec_pipeline.providers.base import (
    GenerateOptions,
    ShapeGuardedGenerator,
)
from socialrec_pipeline.providers.http import parse_iso
from socialrec_pipeline.providers.payload import counted_metrics, first_str, key_str, outbound_links, urls_in_text
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.routing.types import RoutedUrl

ACTOR = "apify~instagram-scraper"
#: `likesCount` is -1 when the owner hides likes; `counted_metrics` drops negatives (store nothing).
CONTENT_METRICS = ("likesCount", "commentsCount", "videoViewCount", "videoPlayCount")
ACCOUNT_METRICS = ("followersCount", "followsCount", "postsCount")

_ROUTE_SUBTYPE = {
    SourceType.INSTAGRAM_POST: ContentSubtype.POST,
    SourceType.INSTAGRAM_REEL: ContentSubtype.REEL,
    SourceType.INSTAGRAM_TV: ContentSubtype.TV,
}


def _strings(value: Any) -> list[str]:
    return [v.strip() for v in value if first_str(v)] if isinstance(value, list) else []


def _external_urls(value: Any) -> list[str]:
    """(unverified) entries are plain strings or objects `{url, title, ...}`: accept both."""
    urls: list[str] = []
    for entry in value if isinstance(value, list) else []:
        url = first_str(entry.get("url") if isinstance(entry, dict) else entry)
        if url is not None:
            urls.append(url.strip())
    return urls


def post_content(item: dict[str, Any], routed: RoutedUrl) -> ContentDraft:
    # The numeric media id is the response's own key; the shortcode (the URL's key) goes to data.
    key = key_str(item.get("id"))
    if key is None:
        raise TransientProviderError("Instagram post item without an id")
    subtype = (
        ContentSubtype.REEL
        if item.get("productType") == "clips"
        else _ROUTE_SUBTYPE.get(routed.source_type, ContentSubtype.POST)
    )
    data: dict[str, Any] = {}
    for name in ("shortCode", "type", "productType"):
        if first_str(item.get(name)):
            data[name] = item[name]
    mentions = _strings(item.get("mentions"))
    if mentions:  # handles only, no ids: values in data, never Mention objects (a mention needs an id)
        data["mentions"] = mentions
    return ContentDraft(
        platform=Platform.INSTAGRAM,
        subtype=subtype,
        platform_key=key,
        url=routed.canonical_url,
        published_at=parse_iso(item.get("timestamp")),
        text=ContentText(primary=first_str(item.get("caption")), from_media=first_str(item.get("alt"))),
        # A caption that links the post itself (its own permalink) names no outbound link.
        links=outbound_links(
            urls_in_text(first_str(item.get("caption"))), routed.canonical_url, first_str(item.get("url"))
        ),
        tags=_strings(item.get("hashtags")),
        metrics=counted_metrics(item, CONTENT_METRICS),
        data=data,
    )


def owner_account(item: dict[str, Any]) -> AccountDraft | None:
    """Only with `ownerId`: a username alone is mutable and cannot key an account (SPEC §4)."""
    key = key_str(item.get("ownerId"))
    if key is None:
        return None
    # Thin: a post item names its owner only. The profile costs another paid actor run, so the
    # owner stays thin until its own profile URL is recorded (docs/generators.md).
    return AccountDraft(
        platform=Platform.INSTAGRAM,
        platform_key=key,
        handle=first_str(item.get("ownerUsername")),
        data={"source_ref": "post"},
    )


def profile_account(item: dict[str, Any]) -> AccountDraft:
    key = key_str(item.get("id"))
    if key is None:
        raise TransientProviderError("Instagram profile item without an id")
    metrics = counted_metrics(item, ACCOUNT_METRICS)
    data = {"verified": item["verified"]} if isinstance(item.get("verified"), bool) else {}
    return AccountDraft(
        platform=Platform.INSTAGRAM,
        platform_key=key,
        handle=first_str(item.get("username")),
        display_name=first_str(item.get("fullName")),
        bio=first_str(item.get("biography")),
        links=outbound_links(
            _external_urls(item.get("externalUrls")),
            f"https://instagram.com/{item['username'].strip()}" if first_str(item.get("username")) else None,
        ),
        followers=metrics.get("followersCount"),
        metrics=metrics,
        data=data,
    )


class InstagramGenerator(ShapeGuardedGenerator):
    source_types = frozenset(
        {SourceType.INSTAGRAM_POST, SourceType.INSTAGRAM_REEL, SourceType.INSTAGRAM_TV, SourceType.INSTAGRAM_PROFILE}
    )
    provider = "Apify Instagram"

    def __init__(self, apify: ApifyClient) -> None:
        self._apify = apify

    def build(self, routed: RoutedUrl, options: GenerateOptions) -> SocialObjectGraph:
        profile = routed.source_type is SourceType.INSTAGRAM_PROFILE
        items = self._apify.run_actor(
            ACTOR,
            {"directUrls": [routed.canonical_url], "resultsType": "details" if profile else "posts", "resultsLimit": 1},
        )
        item = items[0]
        if profile:
            if item.get("private") is True:
                raise TargetBlocked("Instagram account is private")
            return SocialObjectGraph.single(GraphGroup(ref="root", creator=profile_account(item)))
        content = post_content(item, routed)
        creator = owner_account(item)
        if creator is None and first_str(item.get("ownerUsername")):
            content.data["ownerUsername"] = item["ownerUsername"]  # kept so a later fetch can key it
        return SocialObjectGraph.single(GraphGroup(ref="root", creator=creator, content=content))
