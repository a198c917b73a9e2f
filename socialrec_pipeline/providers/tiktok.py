"""TikTok through the Apify actor `clockworks~tiktok-scraper` (paid; gated off by default).

Videos and photo posts → one group `{creator, content}`; profiles → one group `{creator}`.
TikTok supplies no account creation date, so `account_created_at` is structurally absent.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from socialrec_pipeline.domain.enums import ContentSubtype, Platform
from socialrec_pipeline.domain.errors import TargetBlocked, TransientProviderError
from socialrec_pipeline.domain.graph import (
    AccountDraft,
    ContentDraft,
    ContentText,
    GraphGroup,
    Mention,
    SocialObjectGraph,
)
from socialrec_pipeline.providers.apify import ApifyClient
from socialrec_pipeline.providers.base import (
    GenerateOptions,
    ShapeGuardedGenerator,
)
from socialrec_pipeline.providers.http import parse_epoch_seconds, parse_iso
from socialrec_pipeline.providers.payload import (
    as_number,
    counted_metrics,
    first_str,
    key_str,
    outbound_links,
    urls_in_text,
)
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.routing.types import RoutedUrl

ACTOR = "clockworks~tiktok-scraper"
CONTENT_METRICS = ("playCount", "diggCount", "shareCount", "commentCount", "collectCount")
ACCOUNT_METRICS = ("fans", "following", "heart", "video")


def _published_at(item: dict[str, Any]) -> datetime | None:
    return parse_iso(item.get("createTimeISO")) or parse_epoch_seconds(as_number(item.get("createTime")))


def _transcription_link(video_meta: Any) -> str | None:
    """The subtitle file of the original audio (ASR) first, a machine translation otherwise."""
    if not isinstance(video_meta, dict) or not isinstance(video_meta.get("subtitleLinks"), list):
        return None
    links = [s for s in video_meta["subtitleLinks"] if isinstance(s, dict) and first_str(s.get("downloadLink"))]
    links.sort(key=lambda s: 0 if s.get("source") == "ASR" else 1)
    return links[0]["downloadLink"] if links else None


def _profile_url(handle: Any) -> str | None:
    return f"https://tiktok.com/@{handle.strip()}" if first_str(handle) else None


def author_account(meta: Any) -> AccountDraft | None:
    """`authorMeta` → account, only when it carries the numeric id (handles are reassigned)."""
    if not isinstance(meta, dict):
        return None
    key = key_str(meta.get("id"))
    if key is None:
        return None
    bio_link = meta.get("bioLink")
    if isinstance(bio_link, dict):  # (unverified) object form `{link, risk}`
        bio_link = bio_link.get("link")
    data: dict[str, Any] = {}
    if isinstance(meta.get("privateAccount"), bool):
        data["privateAccount"] = meta["privateAccount"]
    return AccountDraft(
        platform=Platform.TIKTOK,
        platform_key=key,
        handle=first_str(meta.get("name")),
        display_name=first_str(meta.get("nickName")),
        bio=first_str(meta.get("signature")),
        links=outbound_links([link] if (link := first_str(bio_link)) else [], _profile_url(meta.get("name"))),
        followers=counted_metrics(meta, ("fans",)).get("fans"),
        metrics=counted_metrics(meta, ACCOUNT_METRICS),
        data=data,
    )


def _mentions(raw: Any) -> tuple[list[Mention], list[str]]:
    """(unverified) shape: objects with an id become mentions; bare handles stay in `data`."""
    mentions: list[Mention] = []
    handles: list[str] = []
    for entry in raw if isinstance(raw, list) else []:
        if isinstance(entry, dict) and key_str(entry.get("id")):
            mentions.append(Mention(platform_key=key_str(entry["id"]) or "", screen_name=first_str(entry.get("name"))))
        elif first_str(entry):
            handles.append(entry.strip())
    return mentions, handles


def video_content(item: dict[str, Any], routed: RoutedUrl) -> ContentDraft:
    key = key_str(item.get("id"))
    if key is None:
        raise TransientProviderError("TikTok item without an id")
    slideshow = item.get("isSlideshow")
    if isinstance(slideshow, bool):
        subtype = ContentSubtype.PHOTO if slideshow else ContentSubtype.VIDEO
    else:
        subtype = ContentSubtype.PHOTO if routed.source_type is SourceType.TIKTOK_PHOTO else ContentSubtype.VIDEO
    hashtags = item.get("hashtags")
    if not isinstance(hashtags, list):
        hashtags = []
    tags = [h["name"] for h in hashtags if isinstance(h, dict) and first_str(h.get("name"))]
    mentions, mention_handles = _mentions(item.get("mentions"))
    data: dict[str, Any] = {}
    music = item.get("musicMeta")
    if isinstance(music, dict):
        # Flat under the actor's own names (`data` keeps platform names): `musicId`, `musicName`.
        data.update({k: music[k] for k in ("musicId", "musicName") if first_str(key_str(music.get(k)))})
    video_meta = item.get("videoMeta")
    # Seconds as the actor gives them: current versions send a float (26.981), kept as a float.
    if (
        isinstance(video_meta, dict)
        and (duration := as_number(video_meta.get("duration"))) is not None
        and duration >= 0
    ):
        data["duration"] = duration
    if mention_handles:
        data["mentions"] = mention_handles
    return ContentDraft(
        platform=Platform.TIKTOK,
        subtype=subtype,
        platform_key=key,
        url=routed.canonical_url,
        published_at=_published_at(item),
        text=ContentText(primary=first_str(item.get("text")), from_media=_transcription_link(video_meta)),
        # A URL in the text that is the video itself (its own share link) is not an outbound link.
        links=outbound_links(
            urls_in_text(first_str(item.get("text"))), routed.canonical_url, first_str(item.get("webVideoUrl"))
        ),
        tags=tags,
        mentions=mentions,
        metrics=counted_metrics(item, CONTENT_METRICS),
        data=data,
    )


class TikTokGenerator(ShapeGuardedGenerator):
    source_types = frozenset({SourceType.TIKTOK_VIDEO, SourceType.TIKTOK_PHOTO, SourceType.TIKTOK_PROFILE})
    provider = "Apify TikTok"

    def __init__(self, apify: ApifyClient) -> None:
        self._apify = apify

    def build(self, routed: RoutedUrl, options: GenerateOptions) -> SocialObjectGraph:
        if routed.source_type is SourceType.TIKTOK_PROFILE:
            return self._profile(routed)
        items = self._apify.run_actor(
            ACTOR,
            {
                "postURLs": [routed.canonical_url],
                "resultsPerPage": 1,
                "shouldDownloadVideos": False,
                "shouldDownloadCovers": False,
            },
        )
        item = items[0]
        content = video_content(item, routed)
        return SocialObjectGraph.single(
            GraphGroup(ref="root", creator=author_account(item.get("authorMeta")), content=content)
        )

    def _profile(self, routed: RoutedUrl) -> SocialObjectGraph:
        handle = (routed.source_key or "").lstrip("@")
        if not handle:
            raise TransientProviderError("TikTok profile URL without a handle", external_call_made=False)
        # One video of the profile is enough: every item carries the full `authorMeta`.
        items = self._apify.run_actor(
            ACTOR,
            {"profiles": [handle], "resultsPerPage": 1, "shouldDownloadVideos": False, "shouldDownloadCovers": False},
        )
        meta = items[0].get("authorMeta")
        if isinstance(meta, dict) and meta.get("privateAccount") is True:
            raise TargetBlocked(f"TikTok account @{handle} is private")
        account = author_account(meta)
        if account is None:
            raise TransientProviderError("TikTok profile item without authorMeta.id")
        return SocialObjectGraph.single(GraphGroup(ref="root", creator=account))
