"""Every generator's fixture graphs against the contract rules they share (SPEC §4, §5, metric spec):

- every content carries its own `url`, and routing that URL gives the URL back (dedup key);
- every metric a generator emits survives `pick_known_metrics` for its platform × object kind —
  nothing is silently dropped at write time — and an account's follower count is among them;
- accounts and venues always carry a `platform_key`;
- every platform-supplied time is an aware UTC datetime.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest

from socialrec_pipeline.domain.enums import ObjectKind
from socialrec_pipeline.domain.graph import SocialObjectGraph
from socialrec_pipeline.domain.metric_spec import pick_known_metrics
from socialrec_pipeline.providers.apify import ApifyClient
from socialrec_pipeline.providers.base import GenerateOptions, Generator
from socialrec_pipeline.providers.github import GitHubClient, GitHubGenerator
from socialrec_pipeline.providers.instagram import InstagramGenerator
from socialrec_pipeline.providers.reddit import RedditClient, RedditGenerator
from socialrec_pipeline.providers.telegram import TelegramGenerator, TelegramPreviewClient
from socialrec_pipeline.providers.tiktok import TikTokGenerator
from socialrec_pipeline.providers.url_only import UrlOnlyGenerator
from socialrec_pipeline.providers.web import UrlscanClient, WebGenerator
from socialrec_pipeline.providers.x import TwitterApiClient, XGenerator
from socialrec_pipeline.providers.youtube import YouTubeClient, YouTubeGenerator
from socialrec_pipeline.routing import route
from socialrec_pipeline.sandbox.fixture_server import FixtureServer
from socialrec_pipeline.sandbox.platforms import apify as apifix
from socialrec_pipeline.sandbox.platforms import github as ghfix
from socialrec_pipeline.sandbox.platforms import reddit as rdfix
from socialrec_pipeline.sandbox.platforms import telegram as tgfix
from socialrec_pipeline.sandbox.platforms import urlscan as usfix
from socialrec_pipeline.sandbox.platforms import x as xfix
from socialrec_pipeline.sandbox.platforms import youtube as ytfix
from tests.providers import NOW

OPTS = GenerateOptions(enable_community=True)


def _x(server: FixtureServer) -> Generator:
    xfix.demo_fixtures().register(server)
    return XGenerator(TwitterApiClient(server.url, "k", timeout=2.0))


def _github(server: FixtureServer) -> Generator:
    fixtures = ghfix.demo_fixtures()
    fixtures.gists["0abc1def2"] = ghfix.gist("0abc1def2", with_owner=False)
    fixtures.register(server)
    return GitHubGenerator(GitHubClient(server.url, "t", timeout=2.0))


def _youtube(server: FixtureServer) -> Generator:
    ytfix.demo_fixtures().register(server)
    return YouTubeGenerator(YouTubeClient(server.url, "k", timeout=2.0))


def _telegram(server: FixtureServer) -> Generator:
    tgfix.register(server)
    return TelegramGenerator(TelegramPreviewClient(server.url, timeout=2.0))


def _tiktok(server: FixtureServer) -> Generator:
    apifix.register_demo(server)
    return TikTokGenerator(ApifyClient(server.url, apifix.DEMO_TOKEN, timeout=2.0))


def _instagram(server: FixtureServer) -> Generator:
    apifix.register_demo(server)
    return InstagramGenerator(ApifyClient(server.url, apifix.DEMO_TOKEN, timeout=2.0))


def _reddit(server: FixtureServer) -> Generator:
    rdfix.register_reddit(server)
    return RedditGenerator(RedditClient(server.url, timeout=2.0))


def _web(server: FixtureServer) -> Generator:
    usfix.register_urlscan(server)
    return WebGenerator(UrlscanClient(server.url, usfix.DEMO_API_KEY, timeout=2.0))


#: provider → (generator over the provider's demo fixtures, entry URLs the fixtures answer).
CASES: dict[str, tuple[Callable[[FixtureServer], Generator], list[str]]] = {
    "x": (_x, ["https://x.com/kolguy/status/1866000000000000001", "https://x.com/KolGuy",
               "https://x.com/i/communities/1790000000000000042"]),
    "github": (_github, ["https://github.com/pumpdev/pump-sdk", "https://github.com/pumpdev",
                         "https://gist.github.com/pumpdev/aa5a315d61ae9438b18d",
                         "https://gist.github.com/someone/0abc1def2"]),
    "youtube": (_youtube, ["https://youtube.com/watch?v=dQw4w9WgXcQ", "https://youtube.com/shorts/dQw4w9WgXcQ",
                           "https://youtube.com/@pumpchannel"]),
    "telegram": (_telegram, ["https://t.me/pumpchannel", "https://t.me/pumpchat", "https://t.me/+AbCdEf123",
                             "https://t.me/pumpbuybot", "https://t.me/pumpdev", "https://t.me/pumprestricted",
                             "https://t.me/PumpChannel/42"]),
    "tiktok": (_tiktok, ["https://tiktok.com/@moonkol/video/7350000000000000001", "https://tiktok.com/@moonkol"]),
    "instagram": (_instagram, ["https://instagram.com/p/C1aBcDeFgHi", "https://instagram.com/moonproject"]),
    "reddit": (_reddit, ["https://reddit.com/r/solana/comments/1abcde", "https://reddit.com/r/solana",
                         "https://reddit.com/user/moon_dev"]),
    "web": (_web, ["https://moon.example/path"]),
    "url_only": (lambda _server: UrlOnlyGenerator(), ["https://x.com/search?q=%24MOON",
                                                       "https://reddit.com/r/solana/search?q=moon",
                                                       "https://x.com/intent/tweet?text=gm&url=https%3A%2F%2Fmoon.example"]),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def graphs(request, server) -> Iterator[tuple[str, list[SocialObjectGraph]]]:
    server.clear()
    make, urls = CASES[request.param]
    generator = make(server)
    built = []
    for url in urls:
        routed = route(url)
        assert routed is not None and routed.source_type in generator.source_types, url
        built.append(generator.generate(routed, OPTS, NOW))
    yield request.param, built
    client = (
        getattr(generator, "_client", None)
        or getattr(generator, "_apify", None)
        or getattr(generator, "_urlscan", None)
    )
    if client is not None:
        client.close()


def _objects(graph: SocialObjectGraph) -> Iterator[tuple[ObjectKind, Any]]:
    for group in graph.groups:
        for kind, obj in (
            (ObjectKind.ACCOUNTS, group.creator),
            (ObjectKind.VENUES, group.venue),
            (ObjectKind.CONTENTS, group.content),
        ):
            if obj is not None:
                yield kind, obj


def test_every_content_url_is_its_own_canonical_url(graphs):
    _provider, built = graphs
    for graph in built:
        for kind, obj in _objects(graph):
            if kind is ObjectKind.CONTENTS:
                assert obj.url, obj
                routed = route(obj.url)
                assert routed is not None and routed.canonical_url == obj.url, (obj.url, routed)


def test_no_emitted_metric_is_dropped_by_the_whitelist(graphs):
    provider, built = graphs
    emitted = 0
    for graph in built:
        for kind, obj in _objects(graph):
            assert pick_known_metrics(obj.platform, kind, obj.metrics) == obj.metrics, (provider, kind, obj.metrics)
            emitted += len(obj.metrics)
            if kind is ObjectKind.ACCOUNTS and obj.followers is not None:
                # The follower count is also a series point under the provider's own name.
                assert obj.followers in pick_known_metrics(obj.platform, kind, obj.metrics).values()
    assert emitted or provider in ("web", "url_only")


def test_accounts_and_venues_carry_a_platform_key(graphs):
    _provider, built = graphs
    for graph in built:
        for kind, obj in _objects(graph):
            if kind is not ObjectKind.CONTENTS:
                assert isinstance(obj.platform_key, str) and obj.platform_key.strip(), obj


def _times(value: Any) -> Iterator[datetime]:
    if isinstance(value, datetime):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _times(item)
    elif isinstance(value, list):
        for item in value:
            yield from _times(item)


def test_every_time_is_aware_utc(graphs):
    _provider, built = graphs
    for graph in built:
        for _kind, obj in _objects(graph):
            for moment in _times(obj.model_dump()):
                assert moment.utcoffset() == timedelta(0), (obj, moment)
