"""Generator throughput (graphs/s) against zero-latency loopback fixture servers, one provider each.

Run: `.venv/bin/python bench/generators.py [--n 400] [--only x,github]`. One line per provider:
`graphs_per_s_<provider>: N`. Each case gets its own FixtureServer with the provider's documented
shapes (socialrec_pipeline.sandbox.platforms), so the figure is request + parse + graph building
over a keep-alive loopback connection — a ceiling, not a forecast of production latency.

Adding a provider: append a `Case` to `CASES` (do not reorder or edit other entries). `setup` gets a
started server and returns the generator, the routed URLs to cycle through, and a close callback.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from socialrec_pipeline.providers.base import GenerateOptions, Generator
from socialrec_pipeline.routing.source_types import SOURCE_TYPE_TABLE, SourceType
from socialrec_pipeline.routing.types import RoutedUrl
from socialrec_pipeline.sandbox.fixture_server import FixtureServer

Setup = Callable[[FixtureServer], tuple[Generator, list[RoutedUrl], Callable[[], None]]]


@dataclass(frozen=True)
class Case:
    provider: str
    setup: Setup


def routed(source_type: SourceType, key: str, url: str = "https://bench.invalid/") -> RoutedUrl:
    info = SOURCE_TYPE_TABLE[source_type]
    return RoutedUrl(url, url, source_type, key, info.object, info.platform, info.subtype)


def _x(server: FixtureServer):
    from socialrec_pipeline.providers.x import TwitterApiClient, XGenerator
    from socialrec_pipeline.sandbox.platforms import x as fx

    fx.demo_fixtures().register(server)
    client = TwitterApiClient(server.url, "bench-key")
    urls = [routed(SourceType.X_TWEET, "1866000000000000001"), routed(SourceType.X_PROFILE, "kolguy")]
    return XGenerator(client), urls, client.close


def _github(server: FixtureServer):
    from socialrec_pipeline.providers.github import GitHubClient, GitHubGenerator
    from socialrec_pipeline.sandbox.platforms import github as fx

    fx.demo_fixtures().register(server)
    client = GitHubClient(server.url, "bench-token")
    urls = [routed(SourceType.GITHUB_REPO, "pumpdev/pump-sdk"), routed(SourceType.GITHUB_USER, "pumpdev"),
            routed(SourceType.GITHUB_GIST, "aa5a315d61ae9438b18d")]
    return GitHubGenerator(client), urls, client.close


def _youtube(server: FixtureServer):
    from socialrec_pipeline.providers.youtube import YouTubeClient, YouTubeGenerator
    from socialrec_pipeline.sandbox.platforms import youtube as fx

    fx.demo_fixtures().register(server)
    client = YouTubeClient(server.url, "bench-key")
    # A video costs two calls (video + its channel); a channel one.
    urls = [routed(SourceType.YOUTUBE_VIDEO, "dQw4w9WgXcQ"), routed(SourceType.YOUTUBE_CHANNEL, "@pumpchannel")]
    return YouTubeGenerator(client), urls, client.close


def _telegram(server: FixtureServer):
    from socialrec_pipeline.providers.telegram import TelegramGenerator, TelegramPreviewClient
    from socialrec_pipeline.sandbox.platforms import telegram as fx

    fx.register(server)
    client = TelegramPreviewClient(server.url)
    urls = [routed(SourceType.TELEGRAM_CHANNEL, "pumpchannel"), routed(SourceType.TELEGRAM_CHANNEL, "pumpchat"),
            routed(SourceType.TELEGRAM_INVITE, "AbCdEf123")]
    return TelegramGenerator(client), urls, client.close


def _tiktok(server: FixtureServer):
    from socialrec_pipeline.providers.apify import ApifyClient
    from socialrec_pipeline.providers.tiktok import TikTokGenerator
    from socialrec_pipeline.sandbox.platforms import apify as fx

    fx.register_demo(server)
    client = ApifyClient(server.url, fx.DEMO_TOKEN)
    urls = [routed(SourceType.TIKTOK_VIDEO, "7350000000000000001", "https://tiktok.com/@moonkol/video/7350000000000000001"),
            routed(SourceType.TIKTOK_PROFILE, "moonkol", "https://tiktok.com/@moonkol")]
    return TikTokGenerator(client), urls, client.close


def _instagram(server: FixtureServer):
    from socialrec_pipeline.providers.apify import ApifyClient
    from socialrec_pipeline.providers.instagram import InstagramGenerator
    from socialrec_pipeline.sandbox.platforms import apify as fx

    fx.register_demo(server)
    client = ApifyClient(server.url, fx.DEMO_TOKEN)
    urls = [routed(SourceType.INSTAGRAM_POST, "C1aBcDeFgHi", "https://instagram.com/p/C1aBcDeFgHi"),
            routed(SourceType.INSTAGRAM_PROFILE, "moonproject", "https://instagram.com/moonproject")]
    return InstagramGenerator(client), urls, client.close


def _reddit(server: FixtureServer):
    from socialrec_pipeline.providers.reddit import RedditClient, RedditGenerator
    from socialrec_pipeline.sandbox.platforms import reddit as fx

    # App-only token flow: one token call, then every request carries the cached bearer.
    fx.register_reddit(server, token=fx.DEMO_ACCESS_TOKEN)
    client = RedditClient(server.url, auth_base_url=server.url, client_id=fx.DEMO_CLIENT_ID,
                          client_secret=fx.DEMO_CLIENT_SECRET)
    urls = [routed(SourceType.REDDIT_POST, "1abcde", "https://reddit.com/r/solana/comments/1abcde"),
            routed(SourceType.REDDIT_SUBREDDIT, "solana", "https://reddit.com/r/solana"),
            routed(SourceType.REDDIT_USER, "moon_dev", "https://reddit.com/user/moon_dev")]
    return RedditGenerator(client), urls, client.close


def _web(server: FixtureServer):
    from socialrec_pipeline.providers.web import UrlscanClient, WebGenerator
    from socialrec_pipeline.sandbox.platforms import urlscan as fx

    # With a urlscan key: one search call per URL (without a key the generator makes no call).
    fx.register_urlscan(server)
    client = UrlscanClient(server.url, fx.DEMO_API_KEY)
    urls = [routed(SourceType.WEBSITE, "https://moon.example/path", "https://moon.example/path"),
            routed(SourceType.WEBSITE, "https://fresh.example", "https://fresh.example")]
    return WebGenerator(client), urls, client.close


CASES: list[Case] = [
    Case("x", _x),
    Case("github", _github),
    Case("youtube", _youtube),
    Case("telegram", _telegram),
    Case("tiktok", _tiktok),
    Case("instagram", _instagram),
    Case("reddit", _reddit),
    Case("web", _web),
]


def measure(case: Case, n: int) -> float:
    observed_at = datetime.now(UTC)
    options = GenerateOptions(enable_community=True)
    with FixtureServer() as server:
        generator, urls, close = case.setup(server)
        try:
            for url in urls:  # warm-up: connection, imports, first parse
                generator.generate(url, options, observed_at)
            start = time.perf_counter()
            for i in range(n):
                generator.generate(urls[i % len(urls)], options, observed_at)
            elapsed = time.perf_counter() - start
        finally:
            close()
    return n / elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=400, help="graphs per provider")
    parser.add_argument("--only", default="", help="comma-separated provider names")
    args = parser.parse_args()
    only = {p.strip() for p in args.only.split(",") if p.strip()}
    for case in CASES:
        if only and case.provider not in only:
            continue
        print(f"graphs_per_s_{case.provider}: {measure(case, args.n):.0f}", flush=True)


if __name__ == "__main__":
    main()
