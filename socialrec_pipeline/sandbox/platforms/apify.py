"""Canned Apify answers in the documented shapes (contracts/platform-apis.md), for tests and the
offline demo. Builders return fresh dicts; `register_actor` / `register_demo` add routes to a
`FixtureServer` that answer `POST /v2/acts/{actor}/run-sync-get-dataset-items?token=…`.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

from socialrec_pipeline.sandbox.fixture_server import FixtureServer, Reply, Request

TIKTOK_ACTOR = "clockworks~tiktok-scraper"
INSTAGRAM_ACTOR = "apify~instagram-scraper"
DEMO_TOKEN = "apify-demo-token"

SPENDING_CAP_MESSAGE = "By launching this job you will exceed your Monthly usage hard limit exceeded"

_TIKTOK_VIDEO: dict[str, Any] = {
    "id": "7350000000000000001",
    "text": "gm $MOON to the moon #solana #memecoin",
    "createTimeISO": "2024-12-10T07:00:30.000Z",
    "createTime": 1733814030,
    "hashtags": [{"name": "solana"}, {"name": "memecoin"}],
    "mentions": [],
    "authorMeta": {
        "id": "6800000000000000042",
        "name": "moonkol",
        "nickName": "Moon KOL",
        "signature": "CA: 7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU",
        "bioLink": "https://moon.example",
        "privateAccount": False,
        "fans": 12000,
        "following": 15,
        "heart": 340000,
        "video": 87,
    },
    "playCount": 50210,
    "diggCount": 3100,
    "shareCount": 120,
    "commentCount": 240,
    "collectCount": 77,
    "musicMeta": {"musicId": "7300000000000000009", "musicName": "original sound - moonkol"},
    "videoMeta": {
        "duration": 26.981,  # seconds; current actor versions send a float
        "subtitleLinks": [
            {"language": "eng-US", "downloadLink": "https://v16.tiktokcdn.example/sub-mt.vtt", "source": "MT"},
            {"language": "eng-US", "downloadLink": "https://v16.tiktokcdn.example/sub-asr.vtt", "source": "ASR"},
        ],
    },
    "isSlideshow": False,
    "webVideoUrl": "https://www.tiktok.com/@moonkol/video/7350000000000000001",
}

_INSTAGRAM_POST: dict[str, Any] = {
    "id": "3300000000000000001",
    "shortCode": "C1aBcDeFgHi",
    "type": "Image",
    "url": "https://www.instagram.com/p/C1aBcDeFgHi/",
    "caption": "Launching $MOON today #solana",
    "hashtags": ["solana"],
    "mentions": ["moonteam"],
    "alt": "Photo by Moon Project. May be an image of text that says 'MOON'.",
    "timestamp": "2024-12-10T07:00:30.000Z",
    "likesCount": 420,
    "commentsCount": 12,
    "ownerUsername": "moonproject",
    "ownerId": "58000000001",
    "productType": "feed",
}

_INSTAGRAM_PROFILE: dict[str, Any] = {
    "id": "58000000001",
    "username": "moonproject",
    "fullName": "Moon Project",
    "biography": "The moon is a memecoin",
    "externalUrls": [{"title": "site", "url": "https://moon.example"}],
    "followersCount": 9100,
    "followsCount": 3,
    "postsCount": 41,
    "private": False,
    "verified": False,
}


def _merged(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    item = copy.deepcopy(base)
    item.update(overrides)
    return item


def tiktok_video_item(**overrides: Any) -> dict[str, Any]:
    return _merged(_TIKTOK_VIDEO, overrides)


def tiktok_slideshow_item(**overrides: Any) -> dict[str, Any]:
    return _merged(
        _TIKTOK_VIDEO, {"id": "7350000000000000002", "isSlideshow": True, "videoMeta": {"duration": 0}, **overrides}
    )


def instagram_post_item(**overrides: Any) -> dict[str, Any]:
    return _merged(_INSTAGRAM_POST, overrides)


def instagram_reel_item(**overrides: Any) -> dict[str, Any]:
    reel = {
        "id": "3300000000000000002",
        "shortCode": "C2ReelCode1",
        "type": "Video",
        "url": "https://www.instagram.com/reel/C2ReelCode1/",
        "productType": "clips",
        "likesCount": -1,  # the owner hides likes
        "videoViewCount": 8800,
        "videoPlayCount": 15000,
    }
    return _merged(_INSTAGRAM_POST, {**reel, **overrides})


def instagram_profile_item(**overrides: Any) -> dict[str, Any]:
    return _merged(_INSTAGRAM_PROFILE, overrides)


def error_item(
    error: str = "Empty or private data for provided input", description: str | None = None
) -> dict[str, Any]:
    return {"error": error, "errorDescription": description or error}


def api_error(message: str, status: int, error_type: str = "platform-feature-disabled") -> Reply:
    """An Apify API error body `{"error": {"type", "message"}}`."""
    return Reply.json({"error": {"type": error_type, "message": message}}, status=status)


def spending_cap(status: int = 403) -> Reply:
    return api_error(SPENDING_CAP_MESSAGE, status)


ItemsOrReply = list[dict[str, Any]] | Reply | Callable[[Request], "list[dict[str, Any]] | Reply"]


def register_actor(server: FixtureServer, actor: str, answer: ItemsOrReply, *, token: str = DEMO_TOKEN) -> None:
    """Answer every run of `actor` with `answer` (items, a Reply, or a function of the request);
    a wrong or missing token gets Apify's 401."""

    def handler(request: Request) -> Reply:
        if request.param("token") != token:
            return api_error("User was not found or authentication token is not valid", 401, "token-not-valid")
        result = answer(request) if callable(answer) else answer
        if isinstance(result, Reply):
            return result
        return Reply.json(copy.deepcopy(result), status=201)

    server.route("POST", f"/v2/acts/{actor}/run-sync-get-dataset-items", handler)


def register_demo(server: FixtureServer, *, token: str = DEMO_TOKEN) -> None:
    """Both actors with one known target each; any other input gets "Empty or private data"."""

    def tiktok(request: Request) -> list[dict[str, Any]]:
        run_input = request.json() or {}
        urls = run_input.get("postURLs") or []
        if any("7350000000000000001" in u for u in urls) or "moonkol" in (run_input.get("profiles") or []):
            return [tiktok_video_item()]
        return [error_item()]

    def instagram(request: Request) -> list[dict[str, Any]]:
        run_input = request.json() or {}
        urls = " ".join(run_input.get("directUrls") or [])
        if run_input.get("resultsType") == "details" and "moonproject" in urls:
            return [instagram_profile_item()]
        if "C1aBcDeFgHi" in urls:
            return [instagram_post_item()]
        return [error_item()]

    register_actor(server, TIKTOK_ACTOR, tiktok, token=token)
    register_actor(server, INSTAGRAM_ACTOR, instagram, token=token)


class MeteredApify:
    """Both actors, counting every run: the paid provider's meter for tests and `bench/cost.py`.

    The first `ok_calls` runs answer one item for the requested URL (after `ok_delay_s`, and once
    `answer_gate` is set when there is one: a test holds a paid call in flight until it has seen what
    it waits for); every later run answers Apify's spending-cap error (out of credit).
    `ok_calls=None` never runs out.
    `calls` holds each run's arrival time (`time.time()`); `first_refusal_at` the moment the first
    out-of-credit answer was about to be sent, so `calls_after_refusal()` are the calls that reached
    the provider after it had said "out of credit".
    """

    def __init__(self, ok_calls: int | None = None, *, ok_delay_s: float = 0.0) -> None:
        self.ok_calls = ok_calls
        self.ok_delay_s = ok_delay_s
        self.answer_gate: threading.Event | None = None
        self.calls: list[float] = []
        self.first_refusal_at: float | None = None
        self._lock = threading.Lock()

    def register(self, server: FixtureServer, *, token: str = DEMO_TOKEN) -> MeteredApify:
        register_actor(server, TIKTOK_ACTOR, self._tiktok, token=token)
        register_actor(server, INSTAGRAM_ACTOR, self._instagram, token=token)
        return self

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()
            self.first_refusal_at = None

    def calls_after_refusal(self) -> list[float]:
        with self._lock:
            if self.first_refusal_at is None:
                return []
            return [t for t in self.calls if t > self.first_refusal_at]

    def _answer(self, item: Callable[[], dict[str, Any]]) -> list[dict[str, Any]] | Reply:
        import time

        with self._lock:
            index = len(self.calls)
            self.calls.append(time.time())
            refuse = self.ok_calls is not None and index >= self.ok_calls
            if refuse and self.first_refusal_at is None:
                self.first_refusal_at = time.time()
        if refuse:
            return spending_cap()
        if self.answer_gate is not None and not self.answer_gate.wait(timeout=120):
            return Reply.json({"error": {"type": "gate-timeout", "message": "the test never opened the gate"}}, 503)
        if self.ok_delay_s:
            time.sleep(self.ok_delay_s)
        return [item()]

    def _tiktok(self, request: Request) -> list[dict[str, Any]] | Reply:
        urls = (request.json() or {}).get("postURLs") or []
        video_id = (urls[0].rstrip("/").rsplit("/", 1)[-1] if urls else "") or "7350000000000000001"
        return self._answer(
            lambda: tiktok_video_item(id=video_id, webVideoUrl=f"https://www.tiktok.com/@moonkol/video/{video_id}")
        )

    def _instagram(self, request: Request) -> list[dict[str, Any]] | Reply:
        return self._answer(instagram_post_item)
