"""Regressions for the earlier router's defects (SPEC §3.4)."""

from __future__ import annotations

import pytest

from socialrec_pipeline.domain.enums import ObjectKind
from socialrec_pipeline.routing import SOURCE_TYPE_TABLE, SourceType, route
from socialrec_pipeline.routing.reserved import (
    GITHUB_RESERVED,
    INSTAGRAM_RESERVED,
    REDDIT_RESERVED,
    TELEGRAM_RESERVED,
    TIKTOK_RESERVED,
    X_RESERVED,
    YOUTUBE_RESERVED,
)


def test_instagram_story_keys_on_the_story_id_not_the_handle() -> None:
    a = route("https://www.instagram.com/stories/kolguy/3312345678901234567/")
    b = route("https://www.instagram.com/stories/kolguy/3312345678901234999/")
    assert a is not None and b is not None
    assert a.source_type is SourceType.INSTAGRAM_STORY
    assert (a.source_key, b.source_key) == ("3312345678901234567", "3312345678901234999")
    assert a.canonical_url != b.canonical_url


def test_reddit_share_link_is_its_own_type_not_the_subreddit() -> None:
    r = route("https://www.reddit.com/r/solana/s/AbCdEf1234")
    assert r is not None
    assert r.source_type is SourceType.REDDIT_SHARE and r.source_key == "AbCdEf1234"
    assert r.object is ObjectKind.CONTENTS


def test_reddit_search_is_contents_keyed_by_query_and_queries_do_not_fold() -> None:
    a = route("https://www.reddit.com/r/wendys/search?q=wendys")
    b = route("https://www.reddit.com/r/wendys/search?q=wendys+dumpster")
    assert a is not None and b is not None
    assert a.source_type is b.source_type is SourceType.REDDIT_SEARCH
    assert (a.object, a.subtype) == (ObjectKind.CONTENTS, "search")
    assert (a.source_key, b.source_key) == ("wendys", "wendys dumpster")
    assert a.canonical_url != b.canonical_url


def test_normalize_result_is_what_is_returned() -> None:
    # The earlier normalize() cleaned a local variable and returned the raw URL.
    a = route("https://www.foo.com/promo")
    b = route("https://foo.com/promo")
    assert a is not None and b is not None and a.canonical_url == b.canonical_url == "https://foo.com/promo"


RESERVED = [
    ("x.com", X_RESERVED, SourceType.X_UNKNOWN),
    ("www.tiktok.com", TIKTOK_RESERVED, SourceType.TIKTOK_UNKNOWN),
    ("www.instagram.com", INSTAGRAM_RESERVED, SourceType.INSTAGRAM_UNKNOWN),
    ("www.reddit.com", REDDIT_RESERVED, SourceType.REDDIT_UNKNOWN),
    ("github.com", GITHUB_RESERVED, SourceType.GITHUB_UNKNOWN),
    ("t.me", TELEGRAM_RESERVED, SourceType.TELEGRAM_UNKNOWN),
]


@pytest.mark.parametrize(("host", "words", "unknown"), RESERVED, ids=[r[0] for r in RESERVED])
def test_reserved_paths_are_never_handles(host: str, words: frozenset[str], unknown: SourceType) -> None:
    for word in sorted(words):
        for path in (word, word.upper(), f"{word}/"):
            r = route(f"https://{host}/{path}")
            # Some reserved words have a type of their own (search, intent, ...): never an account or
            # venue keyed by the word, which is the defect.
            assert r is not None and r.object is ObjectKind.CONTENTS, (host, path, r and r.source_type)
            assert r.platform is SOURCE_TYPE_TABLE[unknown].platform
            if r.source_type is not unknown:
                assert r.source_key != word.lower()


def test_youtube_reserved_paths_are_never_channels() -> None:
    for word in sorted(YOUTUBE_RESERVED):
        r = route(f"https://www.youtube.com/{word}")
        assert r is not None and r.source_type is SourceType.YOUTUBE_UNKNOWN, word


@pytest.mark.parametrize(
    "url",
    [
        "https://x.com/settings", "https://x.com/i", "https://x.com/intent", "https://x.com/hashtag",
        "https://www.reddit.com/settings", "https://www.reddit.com/login", "https://www.reddit.com/r/all",
        "https://github.com/orgs", "https://github.com/settings/tokens", "https://t.me/share",
        "https://t.me/addstickers", "https://www.instagram.com/accounts/edit", "https://www.instagram.com/direct",
    ],
)
def test_reserved_pages_mint_no_account_or_venue_key(url: str) -> None:
    r = route(url)
    assert r is not None
    assert r.object is ObjectKind.CONTENTS and r.subtype == "unknown"


def test_credentials_and_foreign_schemes_never_reach_a_platform() -> None:
    for url in (
        "https://x.com@evil.example/", "https://x.com:pw@evil.example/kolguy", "https://evil@x.com/kolguy",
        "javascript://x.com/%0aalert(1)", "file://x.com/kolguy", "data://x.com/kolguy", "ftp://x.com/kolguy",
    ):
        r = route(url)
        assert r is None or r.source_type is SourceType.WEBSITE, url


def test_ip_hosts_are_websites_never_platforms() -> None:
    for url in ("http://104.244.42.1/kolguy", "http://127.0.0.1/x", "http://[::1]/x", "https://10.0.0.1:8080/x"):
        r = route(url)
        assert r is None or r.source_type is SourceType.WEBSITE, url


def test_lookalike_hosts_are_websites() -> None:
    for url in ("https://x.com.evil.example/kolguy", "https://evilx.com/kolguy", "https://youtube.com.co/watch?v=dQw4w9WgXcQ",
                "https://t.me.evil.example/kolguy_channel", "https://github.com-login.example/foo/bar"):
        r = route(url)
        assert r is not None and r.source_type is SourceType.WEBSITE, url
