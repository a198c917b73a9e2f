"""YouTube Data API v3: videos, shorts and channels (contracts/platform-apis.md § YouTube).

Decisions:
- A video's creator is built from a second call, `/channels?id=`, not from `snippet.channelTitle`
  alone: existing account rows are never updated later (SPEC §5), so an account first written
  without `account_created_at` and subscribers would keep the gap forever. The call costs 1 quota
  unit. If that channel lookup comes back empty the account falls back to `channelId` +
  `channelTitle`; any other failure of it fails the URL (retryable), for the same reason.
- Shorts are videos; their content URL is the router's canonical `/shorts/{id}`, others `watch?v=`.
- Channels by the router's key: `UC…` → `id=`, `user/{name}` → `forUsername=`, `@handle` and
  `c/{name}` → `forHandle=@…` (custom URLs have no lookup of their own; most equal the handle).
- 403 `quotaExceeded`/`dailyLimitExceeded` → `ProviderQuotaExceeded`: `error` without an attempt, and
  no YouTube call for the rest of the run. `keyInvalid`/`forbidden` (and the other key reasons) →
  `ProviderKeyRejected`: `unsupported`, no attempt, names `YOUTUBE_API_KEY`. Every other non-200 →
  error (404 is not documented for these list endpoints, so it is a surprise, not a verdict).
- `hiddenSubscriberCount: true` → no `followers` (the reported figure is rounded/withheld).
"""

from __future__ import annotations

from typing import Any

import httpx

from socialrec_pipeline.domain.enums import ContentSubtype, Platform
from socialrec_pipeline.domain.errors import (
    ProviderError,
    ProviderKeyRejected,
    ProviderQuotaExceeded,
    TargetNotFound,
    TransientProviderError,
)
from socialrec_pipeline.domain.graph import AccountDraft, ContentDraft, ContentText, GraphGroup, SocialObjectGraph
from socialrec_pipeline.providers.base import (
    GenerateOptions,
    KeyedClient,
    ShapeGuardedGenerator,
    lookup_key,
)
from socialrec_pipeline.providers.http import (
    as_int,
    json_body,
    json_or_none,
    parse_iso,
    send,
)
from socialrec_pipeline.providers.payload import (
    as_dict,
    as_list,
    int_metrics,
    outbound_links,
    present,
    stripped_str,
    urls_in_text,
)
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.routing.types import RoutedUrl

VIDEO_METRICS = ("viewCount", "likeCount", "commentCount")
CHANNEL_METRICS = ("subscriberCount", "videoCount", "viewCount")
VIDEO_DATA = ("categoryId", "liveBroadcastContent", "defaultAudioLanguage")
_QUOTA_REASONS = {"quotaExceeded", "dailyLimitExceeded"}
#: Reasons that speak of our key, not of the target (Google API error reasons).
_KEY_REASONS = {"keyInvalid", "forbidden", "accessNotConfigured", "keyExpired", "ipRefererBlocked"}


class YouTubeClient(KeyedClient):
    """The key travels as the `key` query parameter, set once on the client and never logged."""

    credential = ("params", "key")

    def videos(self, video_id: str) -> list[Any]:
        return self._items("/videos", {"part": "snippet,statistics", "id": video_id})

    def channels(self, **selector: str) -> list[Any]:
        return self._items("/channels", {"part": "snippet,statistics", **selector})

    def _items(self, path: str, params: dict[str, str]) -> list[Any]:
        response = send(self._http, "GET", path, params=params)
        if response.status_code != 200:
            raise _status_error(path, response)
        body = json_body(response)
        if not isinstance(body, dict):
            raise TransientProviderError(f"YouTube {path}: answered a {type(body).__name__}, not an object")
        if as_int(as_dict(body.get("pageInfo")).get("totalResults")) == 0:
            return []
        items = body.get("items")
        if items is None:
            return []
        if not isinstance(items, list):
            raise TransientProviderError(f"YouTube {path}: `items` is not a list")
        return items


def _status_error(path: str, response: httpx.Response) -> ProviderError:
    code = response.status_code
    reasons: set[str] = set()
    body = json_or_none(response)
    for error in as_list(as_dict(as_dict(body).get("error")).get("errors")):
        if isinstance(as_dict(error).get("reason"), str):
            reasons.add(error["reason"])
    if code == 403 and reasons & _QUOTA_REASONS:
        return ProviderQuotaExceeded(
            f"YouTube {path}: quota exceeded {sorted(reasons & _QUOTA_REASONS)}", setting="YOUTUBE_API_KEY"
        )
    if code in (400, 401, 403) and reasons & _KEY_REASONS:
        return ProviderKeyRejected(
            f"YouTube {path}: HTTP {code} API key refused {sorted(reasons & _KEY_REASONS)}", setting="YOUTUBE_API_KEY"
        )
    return TransientProviderError(f"YouTube {path}: HTTP {code} {sorted(reasons) or ''}".rstrip())


def channel_account(item: Any) -> AccountDraft | None:
    item = as_dict(item)
    channel_id = stripped_str(item.get("id"))
    if channel_id is None:
        return None
    snippet, stats = as_dict(item.get("snippet")), as_dict(item.get("statistics"))
    hidden = stats.get("hiddenSubscriberCount") is True
    custom_url = stripped_str(snippet.get("customUrl"))
    data: dict[str, Any] = {}
    if isinstance(stats.get("hiddenSubscriberCount"), bool):
        data["hiddenSubscriberCount"] = stats["hiddenSubscriberCount"]
    if custom_url:
        data["customUrl"] = custom_url
    metrics = int_metrics(stats, CHANNEL_METRICS)
    if hidden:
        metrics.pop("subscriberCount", None)
    return AccountDraft(
        platform=Platform.YOUTUBE,
        platform_key=channel_id,
        handle=custom_url.lstrip("@") if custom_url else None,
        display_name=stripped_str(snippet.get("title")),
        bio=stripped_str(snippet.get("description")),
        account_created_at=parse_iso(snippet.get("publishedAt")),
        followers=None if hidden else metrics.get("subscriberCount"),
        metrics=metrics,
        data=data,
    )


def video_content(item: dict[str, Any], *, short: bool = False) -> ContentDraft:
    video_id = stripped_str(item.get("id"))
    if video_id is None:
        raise TransientProviderError("YouTube video item without an `id`")
    snippet = as_dict(item.get("snippet"))
    description = stripped_str(snippet.get("description"))
    url = f"https://youtube.com/shorts/{video_id}" if short else f"https://youtube.com/watch?v={video_id}"
    return ContentDraft(
        platform=Platform.YOUTUBE,
        subtype=ContentSubtype.VIDEO,
        platform_key=video_id,
        url=url,
        published_at=parse_iso(snippet.get("publishedAt")),
        text=ContentText(primary=stripped_str(snippet.get("title")), body=description),
        # The description is the video's body: its outbound links are the content's links.
        links=outbound_links(urls_in_text(description), url),
        tags=[t for t in (stripped_str(t) for t in as_list(snippet.get("tags"))) if t],
        metrics=int_metrics(as_dict(item.get("statistics")), VIDEO_METRICS),
        data={k: snippet[k] for k in VIDEO_DATA if isinstance(snippet.get(k), str) and present(snippet[k])},
    )


class YouTubeGenerator(ShapeGuardedGenerator):
    source_types = frozenset({SourceType.YOUTUBE_VIDEO, SourceType.YOUTUBE_SHORT, SourceType.YOUTUBE_CHANNEL})
    provider = "YouTube"

    def __init__(self, client: YouTubeClient) -> None:
        self._client = client

    def build(self, routed: RoutedUrl, options: GenerateOptions) -> SocialObjectGraph:
        key = lookup_key(routed, strip="/")
        if routed.source_type in (SourceType.YOUTUBE_VIDEO, SourceType.YOUTUBE_SHORT):
            return self._video(key, short=routed.source_type == SourceType.YOUTUBE_SHORT)
        if routed.source_type == SourceType.YOUTUBE_CHANNEL:
            return self._channel(key)
        raise self.cannot_handle(routed)

    def _video(self, video_id: str, *, short: bool) -> SocialObjectGraph:
        items = self._client.videos(video_id)
        item = next((i for i in items if isinstance(i, dict) and i.get("id") == video_id), None)
        if item is None:
            if items:
                raise TransientProviderError(f"YouTube video {video_id}: items without the asked id")
            raise TargetNotFound(f"YouTube video {video_id}: no items")
        content = video_content(item, short=short)
        snippet = as_dict(item.get("snippet"))
        creator = None
        channel_id = stripped_str(snippet.get("channelId"))
        if channel_id:
            found = [c for c in self._client.channels(id=channel_id) if as_dict(c).get("id") == channel_id]
            creator = (
                channel_account(found[0])
                if found
                else AccountDraft(
                    platform=Platform.YOUTUBE,
                    platform_key=channel_id,
                    display_name=stripped_str(snippet.get("channelTitle")),
                    data={"source_ref": "video"},
                )
            )
        return SocialObjectGraph.single(GraphGroup(ref=f"video:{video_id}", creator=creator, content=content))

    def _channel(self, key: str) -> SocialObjectGraph:
        if key.startswith("channel/"):
            key = key[len("channel/") :]
        if key.startswith("UC") and len(key) == 24:
            selector = {"id": key}
        elif key.startswith("user/"):
            selector = {"forUsername": key[len("user/") :]}
        else:
            name = key[len("c/") :] if key.startswith("c/") else key
            selector = {"forHandle": "@" + name.lstrip("@")}
        items = self._client.channels(**selector)
        if not items:
            raise TargetNotFound(f"YouTube channel {key}: no items")
        account = channel_account(items[0])
        if account is None:
            raise TransientProviderError(f"YouTube channel {key}: item without an `id`")
        return SocialObjectGraph.single(GraphGroup(ref=f"account:{account.platform_key}", creator=account))
