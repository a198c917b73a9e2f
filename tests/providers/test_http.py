"""The shared bounded client: body size bound while downloading, decoding, hostile JSON."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator

import httpx
import pytest

from socialrec_pipeline.domain.errors import ProviderError, TransientProviderError
from socialrec_pipeline.providers.apify import ApifyClient
from socialrec_pipeline.providers.base import Generator
from socialrec_pipeline.providers.github import GitHubClient, GitHubGenerator
from socialrec_pipeline.providers.http import MAX_BODY_BYTES, as_int, build_client, json_body, send
from socialrec_pipeline.providers.instagram import InstagramGenerator
from socialrec_pipeline.providers.reddit import RedditClient, RedditGenerator
from socialrec_pipeline.providers.telegram import MAX_PAGE_BYTES, TelegramGenerator, TelegramPreviewClient
from socialrec_pipeline.providers.tiktok import TikTokGenerator
from socialrec_pipeline.providers.web import UrlscanClient, WebGenerator
from socialrec_pipeline.providers.x import TwitterApiClient, XGenerator
from socialrec_pipeline.providers.youtube import YouTubeClient, YouTubeGenerator
from socialrec_pipeline.routing import route
from tests.providers import NOW, OPTS

CHUNK = 64 * 1024


class EndlessBody(httpx.SyncByteStream):
    """`total` bytes in 64 KiB chunks, counting how many chunks the client actually pulled."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.pulled = 0

    def __iter__(self) -> Iterator[bytes]:
        for _ in range(self.total // CHUNK):
            self.pulled += 1
            yield b" " * CHUNK


def test_download_stops_at_the_bound():
    body = EndlessBody(64 * 1024 * 1024)
    client = build_client(
        "https://api.example", transport=httpx.MockTransport(lambda _r: httpx.Response(200, stream=body))
    )
    with pytest.raises(TransientProviderError, match="over 1048576 bytes refused"):
        send(client, "GET", "/big", max_bytes=1024 * 1024)
    # 1 MiB is 16 chunks: the 17th crosses the bound and nothing after it is read.
    assert body.pulled == 17


def test_default_bound_applies_to_every_provider_call():
    body = EndlessBody(MAX_BODY_BYTES + 4 * CHUNK)
    client = YouTubeClient(
        "https://yt.example", "k", transport=httpx.MockTransport(lambda _r: httpx.Response(200, stream=body))
    )
    with pytest.raises(TransientProviderError, match="refused"):
        YouTubeGenerator(client).generate(route("https://youtube.com/watch?v=dQw4w9WgXcQ"), OPTS, NOW)
    assert body.pulled == MAX_BODY_BYTES // CHUNK + 1


def test_telegram_pages_have_their_own_smaller_bound():
    body = EndlessBody(MAX_PAGE_BYTES * 4)
    client = TelegramPreviewClient(
        "https://t.example", transport=httpx.MockTransport(lambda _r: httpx.Response(200, stream=body))
    )
    with pytest.raises(TransientProviderError, match="refused"):
        TelegramGenerator(client).generate(route("https://t.me/pumpchannel"), OPTS, NOW)
    assert body.pulled == MAX_PAGE_BYTES // CHUNK + 1


def test_body_at_the_bound_and_compressed_bodies_are_read_once_decoded():
    payload = {"tweets": [], "status": "success", "pad": "x" * 1000}
    compressed = gzip.compress(json.dumps(payload).encode())

    def handler(_request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, content=compressed, headers={"Content-Encoding": "gzip", "Content-Type": "application/json"}
        )

    client = build_client("https://api.example", transport=httpx.MockTransport(handler))
    response = send(client, "GET", "/t", max_bytes=len(json.dumps(payload)))
    assert json_body(response) == payload
    assert response.status_code == 200 and response.request.url.path == "/t"


def test_network_failure_is_transient():
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    client = build_client("https://api.example", transport=httpx.MockTransport(handler))
    with pytest.raises(TransientProviderError, match="ConnectError"):
        send(client, "GET", "/x")


# JSON nested deeper than the decoder's recursion limit raises RecursionError, not ValueError.
DEEP = b"[" * 200_000 + b"]" * 200_000


def _deep(status: int) -> httpx.MockTransport:
    return httpx.MockTransport(
        lambda _r: httpx.Response(status, content=DEEP, headers={"Content-Type": "application/json"})
    )


def _apify(status: int) -> ApifyClient:
    return ApifyClient("https://apify.example", "tok", transport=_deep(status))


DEEP_CASES: dict[str, tuple[object, str]] = {
    "x": (
        lambda s: XGenerator(TwitterApiClient("https://x.example", "k", transport=_deep(s))),
        "https://x.com/kolguy/status/1866000000000000001",
    ),
    "github": (
        lambda s: GitHubGenerator(GitHubClient("https://gh.example", transport=_deep(s))),
        "https://github.com/a/b",
    ),
    "youtube": (
        lambda s: YouTubeGenerator(YouTubeClient("https://yt.example", "k", transport=_deep(s))),
        "https://youtube.com/watch?v=dQw4w9WgXcQ",
    ),
    "reddit": (
        lambda s: RedditGenerator(RedditClient("https://rd.example", transport=_deep(s))),
        "https://reddit.com/r/solana",
    ),
    "tiktok": (lambda s: TikTokGenerator(_apify(s)), "https://tiktok.com/@moonkol/video/7350000000000000001"),
    "instagram": (lambda s: InstagramGenerator(_apify(s)), "https://instagram.com/p/C1aBcDeFgHi"),
}


@pytest.mark.parametrize("status", [200, 403, 404])
@pytest.mark.parametrize("provider", sorted(DEEP_CASES))
def test_absurdly_deep_json_is_a_provider_error(provider, status):
    make, url = DEEP_CASES[provider]
    generator: Generator = make(status)
    with pytest.raises(ProviderError):
        generator.generate(route(url), OPTS, NOW)


def test_absurdly_deep_urlscan_answer_keeps_the_url_only_row():
    generator = WebGenerator(UrlscanClient("https://us.example", "k", transport=_deep(200)))
    content = generator.generate(route("https://moon.example"), OPTS, NOW).groups[0].content
    assert content.url == "https://moon.example" and "urlscan_error" in content.data


@pytest.mark.parametrize("text", ["²", "-³", "١٢", "12²"])
def test_as_int_refuses_non_ascii_digits(text: str) -> None:
    # str.isdigit() accepts superscripts and other scripts' digits; a payload count is ASCII or nothing.
    assert as_int(text) is None


def test_as_int_reads_ascii_digit_strings() -> None:
    assert as_int(" 42 ") == 42
    assert as_int("-7") == -7
