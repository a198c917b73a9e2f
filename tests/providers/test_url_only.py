"""UrlOnlyGenerator: searches and X intents built from the URL alone, zero requests."""

from __future__ import annotations

import socket

import pytest

from socialrec_pipeline.domain.errors import TargetNotFound
from socialrec_pipeline.providers.base import Generator, GeneratorRegistry
from socialrec_pipeline.providers.url_only import UrlOnlyGenerator
from socialrec_pipeline.routing import route
from socialrec_pipeline.routing.source_types import SourceType
from tests.providers import NOW, OPTS
from tests.providers import make_routed as routed

GEN = UrlOnlyGenerator()


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Any attempt to open a socket fails the test: these generators make no calls."""

    def refuse(*args, **kwargs):
        raise AssertionError("URL-only generator opened a network connection")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


def _content(**fields) -> dict:
    base = {
        "published_at": None,
        "text": {"primary": None, "body": None, "from_media": None},
        "links": [],
        "tags": [],
        "mentions": [],
        "metrics": {},
        "data": {},
    }
    base.update(fields)
    return base


def test_protocol_and_registered_types():
    assert isinstance(GEN, Generator) and GEN.makes_external_calls is False
    assert GEN.source_types == {
        SourceType.X_SEARCH,
        SourceType.TIKTOK_SEARCH,
        SourceType.REDDIT_SEARCH,
        SourceType.X_INTENT,
    }


@pytest.mark.parametrize(
    ("source_type", "url", "platform", "query", "data"),
    [
        (SourceType.X_SEARCH, "https://x.com/search?q=%24MOON", "x", "$MOON", {}),
        (SourceType.TIKTOK_SEARCH, "https://tiktok.com/search?q=moon%20coin", "tt", "moon coin", {}),
        (
            SourceType.REDDIT_SEARCH,
            "https://reddit.com/r/solana/search?q=moon&restrict_sr=1",
            "rd",
            "moon",
            {"subreddit": "solana"},
        ),
        (SourceType.REDDIT_SEARCH, "https://reddit.com/search?q=moon", "rd", "moon", {}),
    ],
)
def test_search_graph_exact(source_type, url, platform, query, data):
    graph = GEN.generate(routed(source_type, query, url), OPTS, NOW)
    assert graph.model_dump() == {
        "root_ref": "root",
        "groups": [
            {
                "ref": "root",
                "parent_ref": None,
                "parent_relation": None,
                "creator": None,
                "venue": None,
                "content": _content(
                    platform=platform,
                    subtype="search",
                    platform_key=query,
                    url=url,
                    text={"primary": query, "body": None, "from_media": None},
                    data=data,
                ),
            }
        ],
    }


def test_search_without_query_is_not_found_without_a_call():
    with pytest.raises(TargetNotFound) as info:
        GEN.generate(routed(SourceType.X_SEARCH, None, "https://x.com/search?q="), OPTS, NOW)
    assert info.value.external_call_made is False


def test_tweet_intent_exact():
    url = "https://x.com/intent/tweet?hashtags=solana%2Cmoon&text=Buy%20%24MOON&url=https%3A%2F%2Fmoon.example&via=moonkol"
    content = GEN.generate(routed(SourceType.X_INTENT, "tweet?…", url), OPTS, NOW).groups[0].content
    assert content.model_dump() == _content(
        platform="x",
        subtype="intent",
        platform_key=url,
        url=url,
        text={"primary": "Buy $MOON", "body": None, "from_media": None},
        links=["https://moon.example"],
        tags=["solana", "moon"],
        data={"intent": "tweet", "via": "moonkol"},
    )


def test_follow_intent_keeps_handle_in_data_not_mentions():
    url = "https://x.com/intent/follow?screen_name=moonkol"
    content = GEN.generate(routed(SourceType.X_INTENT, "follow?screen_name=moonkol", url), OPTS, NOW).groups[0].content
    assert content.platform_key == url
    assert content.mentions == [] and content.text.primary is None
    assert content.data == {"intent": "follow", "screen_name": "moonkol"}


def test_intent_url_param_that_is_not_http_is_not_a_link():
    url = "https://x.com/intent/tweet?text=hi&url=javascript%3Aalert(1)"
    assert GEN.generate(routed(SourceType.X_INTENT, "t", url), OPTS, NOW).groups[0].content.links == []


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ("https://twitter.com/search?q=%24MOON&src=typed_query", "$MOON"),
        ("https://www.tiktok.com/search?q=moon%20coin", "moon coin"),
        ("https://www.reddit.com/r/Solana/search?q=moon&restrict_sr=1", "moon"),
    ],
)
def test_through_the_real_router(raw, key):
    routed_url = route(raw)
    assert routed_url is not None and routed_url.source_type in GEN.source_types
    content = GEN.generate(routed_url, OPTS, NOW).groups[0].content
    assert content.platform_key == key and content.url == routed_url.canonical_url


def test_intent_through_router_is_stable_across_spellings():
    a = route("https://twitter.com/intent/tweet?text=Buy%20%24MOON&url=https%3A%2F%2Fmoon.example")
    b = route("https://x.com/intent/tweet?url=https%3A%2F%2Fmoon.example&text=Buy%20%24MOON&utm_source=tg")
    keys = {GEN.generate(r, OPTS, NOW).groups[0].content.platform_key for r in (a, b)}
    assert len(keys) == 1


def test_unsupported_types_stay_unregistered():
    """The documented unsupported set (module docstring) has no generator in a registry built from
    this module, so those URLs record `unsupported` with zero calls."""
    from socialrec_pipeline.providers.apify import ApifyClient
    from socialrec_pipeline.providers.instagram import InstagramGenerator
    from socialrec_pipeline.providers.reddit import RedditClient, RedditGenerator
    from socialrec_pipeline.providers.tiktok import TikTokGenerator
    from socialrec_pipeline.providers.web import WebGenerator

    apify = ApifyClient("http://127.0.0.1:9", "t")
    registry = GeneratorRegistry(  # also proves the five generators never claim one type twice
        [
            GEN,
            TikTokGenerator(apify),
            InstagramGenerator(apify),
            RedditGenerator(RedditClient("http://127.0.0.1:9")),
            WebGenerator(),
        ]
    )
    for source_type in (
        SourceType.X_UNKNOWN,
        SourceType.TIKTOK_UNKNOWN,
        SourceType.INSTAGRAM_UNKNOWN,
        SourceType.YOUTUBE_UNKNOWN,
        SourceType.REDDIT_UNKNOWN,
        SourceType.GITHUB_UNKNOWN,
        SourceType.TELEGRAM_UNKNOWN,
        SourceType.DISCORD_INVITE,
        SourceType.TELEGRAM_POST,
        SourceType.INSTAGRAM_STORY,
    ):
        assert registry.for_source_type(source_type) is None
