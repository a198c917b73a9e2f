"""Table-driven routing: every case from cases.py, plus equivalence groups and idempotence."""

from __future__ import annotations

import pytest

from socialrec_pipeline.domain.enums import ObjectKind, Platform
from socialrec_pipeline.routing import SOURCE_TYPE_TABLE, SourceType, dedupe_routed, route, route_unique
from socialrec_pipeline.routing.route import route_strict
from tests.routing.cases import ALL_CASES, EQUIVALENCE_GROUPS, REJECT_CASES


@pytest.mark.parametrize(("url", "source_type", "key"), ALL_CASES, ids=[c[0][:80] for c in ALL_CASES])
def test_route_table(url: str, source_type: str, key: str) -> None:
    r = route_strict(url)
    assert r is not None, url
    assert (r.source_type.value, r.source_key) == (source_type, key)
    info = SOURCE_TYPE_TABLE[r.source_type]
    assert (r.object, r.platform, r.subtype) == (info.object, info.platform, info.subtype)
    assert r.input == url


@pytest.mark.parametrize(("url", "source_type", "key"), ALL_CASES, ids=[c[0][:80] for c in ALL_CASES])
def test_canonical_is_a_fixed_point(url: str, source_type: str, key: str) -> None:
    r = route_strict(url)
    assert r is not None
    again = route_strict(r.canonical_url)
    assert again is not None
    assert (again.canonical_url, again.source_type, again.source_key) == (r.canonical_url, r.source_type, r.source_key)
    assert r.canonical_url.startswith("https://")
    assert "#" not in r.canonical_url and not r.canonical_url.endswith("/")
    assert "utm_" not in r.canonical_url


@pytest.mark.parametrize("text", REJECT_CASES, ids=[repr(c)[:60] for c in REJECT_CASES])
def test_rejected_inputs_route_to_none(text: object) -> None:
    assert route_strict(text) is None
    assert route(text) is None


@pytest.mark.parametrize("group", EQUIVALENCE_GROUPS, ids=[g[0][:60] for g in EQUIVALENCE_GROUPS])
def test_equivalent_spellings_share_one_canonical(group: list[str]) -> None:
    routed = [route_strict(u) for u in group]
    assert all(r is not None for r in routed), group
    assert len({(r.canonical_url, r.source_type, r.source_key) for r in routed}) == 1, [r.canonical_url for r in routed]
    assert len(dedupe_routed(routed)) == 1


def test_every_spec_source_type_is_reachable_from_the_table() -> None:
    reached = {c[1] for c in ALL_CASES}
    spec = {
        "x_tweet", "x_profile", "x_community", "x_search", "x_intent", "x_unknown", "tiktok_video",
        "tiktok_photo", "tiktok_profile", "tiktok_search", "tiktok_shortlink", "tiktok_unknown",
        "instagram_post", "instagram_reel", "instagram_tv", "instagram_story", "instagram_profile",
        "youtube_video", "youtube_short", "youtube_channel", "reddit_post", "reddit_subreddit",
        "reddit_user", "reddit_search", "reddit_share", "github_repo", "github_gist", "github_user",
        "telegram_channel", "telegram_invite", "telegram_post", "discord_invite", "website",
    }
    assert spec <= reached
    assert {st.value for st in SourceType} <= reached


def test_table_is_large_enough() -> None:
    assert len(ALL_CASES) + len(REJECT_CASES) >= 200


def test_examples_pin_canonical_spellings() -> None:
    expected = {
        "https://twitter.com/KolGuy/status/1?s=20": "https://x.com/kolguy/status/1",
        "https://x.com/i/web/status/1": "https://x.com/i/status/1",
        "https://x.com/i/communities/99/": "https://x.com/i/communities/99",
        "https://x.com/search?q=pepe+coin&src=typed_query": "https://x.com/search?q=pepe%20coin",
        "https://www.tiktok.com/@KolGuy/video/7301234567890123456": "https://tiktok.com/@kolguy/video/7301234567890123456",
        "https://www.tiktok.com/embed/v2/7301234567890123456": "https://tiktok.com/@/video/7301234567890123456",
        "https://www.instagram.com/kolguy/reel/C9xYz_AbCdE/": "https://instagram.com/reel/C9xYz_AbCdE",
        "https://youtu.be/dQw4w9WgXcQ?t=3": "https://youtube.com/watch?v=dQw4w9WgXcQ",
        "https://www.youtube.com/shorts/dQw4w9WgXcQ": "https://youtube.com/shorts/dQw4w9WgXcQ",
        "https://www.youtube.com/channel/UC_x5XG1OV2P6uZZ5FSM9Ttw/": "https://youtube.com/channel/UC_x5XG1OV2P6uZZ5FSM9Ttw",
        "https://old.reddit.com/r/Solana/comments/1h2x3yz/slug/": "https://reddit.com/r/solana/comments/1h2x3yz",
        "https://www.reddit.com/r/wendys/search/?q=wendys+dumpster&restrict_sr=1": "https://reddit.com/r/wendys/search?q=wendys%20dumpster&restrict_sr=1",
        "https://github.com/Foo/Bar.git": "https://github.com/foo/bar",
        "https://t.me/joinchat/AbCdEfGhIjKl": "https://t.me/+AbCdEfGhIjKl",
        "https://discord.com/invite/AbC12dE": "https://discord.gg/AbC12dE",
    }
    for url, canonical in expected.items():
        r = route_strict(url)
        assert r is not None and r.canonical_url == canonical, (url, r and r.canonical_url)


def test_route_unique_keeps_first_and_reports_rejects() -> None:
    urls = ["https://twitter.com/kolguy", "kolguy", "x.com/KolGuy/", "https://kolguy.xyz", None]
    unique, rejected = route_unique(urls)
    assert [r.canonical_url for r in unique] == ["https://x.com/kolguy", "https://kolguy.xyz"]
    assert unique[0].input == "https://twitter.com/kolguy"
    assert rejected == ["kolguy", None]


def test_field_of_arrival_is_not_an_input() -> None:
    # Real data has TikTok URLs in the `twitter` field: route() has no field parameter at all.
    r = route("https://www.tiktok.com/@kolguy")
    assert r is not None and r.platform is Platform.TIKTOK and r.object is ObjectKind.ACCOUNTS


def test_as_json_has_the_cli_keys() -> None:
    r = route("https://x.com/kolguy")
    assert r is not None
    assert set(r.as_json()) >= {"input", "canonical_url", "source_type", "source_key", "object", "platform", "subtype"}
