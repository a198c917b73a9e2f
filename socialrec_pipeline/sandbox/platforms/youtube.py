"""YouTube Data API v3 stand-in: `/videos` and `/channels` in the documented shapes."""

from __future__ import annotations

import copy
from typing import Any

from socialrec_pipeline.sandbox.fixture_server import FixtureServer, Reply, Request

CHANNEL_ID = "UCabcdefghijklmnopqrstuv"


def video(video_id: str = "dQw4w9WgXcQ", channel_id: str = CHANNEL_ID, **snippet_extra: Any) -> dict[str, Any]:
    snippet: dict[str, Any] = {
        "publishedAt": "2024-12-09T18:00:00Z",
        "channelId": channel_id,
        "title": "PUMP launch stream",
        "description": "CA: 7xKX...pump\nhttps://pump.fun/abc",
        "thumbnails": {"default": {"url": "https://i.ytimg.com/vi/x/default.jpg", "width": 120, "height": 90}},
        "channelTitle": "Pump Channel",
        "tags": ["solana", "pump"],
        "categoryId": "22",
        "liveBroadcastContent": "none",
    }
    snippet.update(snippet_extra)
    return {
        "kind": "youtube#video",
        "etag": "etag1",
        "id": video_id,
        "snippet": snippet,
        "statistics": {"viewCount": "15234", "likeCount": "321", "favoriteCount": "0", "commentCount": "45"},
    }


def channel(channel_id: str = CHANNEL_ID, handle: str = "@pumpchannel", *, hidden: bool = False) -> dict[str, Any]:
    return {
        "kind": "youtube#channel",
        "etag": "etag2",
        "id": channel_id,
        "snippet": {
            "title": "Pump Channel",
            "description": "daily calls",
            "customUrl": handle,
            "publishedAt": "2019-05-01T12:34:56.789Z",
            "thumbnails": {},
            "country": "US",
        },
        "statistics": {
            "viewCount": "987654",
            "subscriberCount": "12300",
            "hiddenSubscriberCount": hidden,
            "videoCount": "88",
        },
    }


def listing(kind: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "kind": f"youtube#{kind}ListResponse",
        "etag": "e",
        "pageInfo": {"totalResults": len(items), "resultsPerPage": 5},
        "items": items,
    }


def quota_exceeded() -> Reply:
    return Reply.json(
        {
            "error": {
                "code": 403,
                "message": "The request cannot be completed because you have exceeded your quota.",
                "errors": [{"message": "quota", "domain": "youtube.quota", "reason": "quotaExceeded"}],
            }
        },
        status=403,
    )


class YouTubeFixtures:
    def __init__(self) -> None:
        self.videos: dict[str, dict[str, Any]] = {}
        self.channels: dict[str, dict[str, Any]] = {}

    def register(self, server: FixtureServer, prefix: str = "") -> YouTubeFixtures:
        server.route("GET", f"{prefix}/videos", self._videos)
        server.route("GET", f"{prefix}/channels", self._channels)
        return self

    def _videos(self, request: Request) -> Reply:
        found = [copy.deepcopy(self.videos[i]) for i in (request.param("id") or "").split(",") if i in self.videos]
        return Reply.json(listing("video", found))

    def _channels(self, request: Request) -> Reply:
        ids = request.param("id")
        if ids:
            found = [self.channels[i] for i in ids.split(",") if i in self.channels]
        else:
            wanted = (request.param("forHandle") or "").lower()
            found = [c for c in self.channels.values() if c["snippet"].get("customUrl", "").lower() == wanted]
        body = listing("channel", copy.deepcopy(found))
        if not found:
            del body["items"]  # the API omits `items` when nothing matched
        return Reply.json(body)


def demo_fixtures() -> YouTubeFixtures:
    fixtures = YouTubeFixtures()
    fixtures.videos["dQw4w9WgXcQ"] = video()
    fixtures.channels[CHANNEL_ID] = channel()
    return fixtures
