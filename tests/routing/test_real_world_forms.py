"""Issue 13 routing rules, pinned on the URL forms real pages link (SPEC §3)."""

from __future__ import annotations

import pytest

from socialrec_pipeline.domain.enums import ObjectKind
from socialrec_pipeline.routing import SourceType, route
from socialrec_pipeline.routing.reserved import YOUTUBE_RESERVED
from socialrec_pipeline.routing.route import route_strict
from tests.routing.cases import SEC_UID, UC


def test_redd_it_is_the_post_itself_with_the_comments_canonical_url() -> None:
    short = route_strict("https://redd.it/1H2X3YZ")
    long = route_strict("https://www.reddit.com/comments/1h2x3yz/")
    assert short is not None and long is not None
    assert short.source_type is SourceType.REDDIT_POST and short.object is ObjectKind.CONTENTS
    assert (short.source_key, short.canonical_url) == ("1h2x3yz", "https://reddit.com/comments/1h2x3yz")
    assert short.canonical_url == long.canonical_url


def test_only_share_links_are_left_for_resolving() -> None:
    share = route_strict("https://www.reddit.com/r/solana/s/AbCdEf1234")
    assert share is not None and share.source_type is SourceType.REDDIT_SHARE
    assert "reddit_shortlink" not in {st.value for st in SourceType}


@pytest.mark.parametrize("path", ["gallery", "poll"])
def test_gallery_and_poll_pages_are_their_post(path: str) -> None:
    r = route_strict(f"https://www.reddit.com/{path}/1h2x3yz")
    assert r is not None and (r.source_type, r.source_key) == (SourceType.REDDIT_POST, "1h2x3yz")
    assert r.canonical_url == "https://reddit.com/comments/1h2x3yz"


@pytest.mark.parametrize("kind", ["video", "photo"])
def test_tiktok_sec_uid_author_routes_by_id_and_keeps_its_case(kind: str) -> None:
    r = route_strict(f"https://www.tiktok.com/@{SEC_UID}/{kind}/7301234567890123456")
    assert r is not None and r.source_key == "7301234567890123456"
    assert r.canonical_url == f"https://tiktok.com/@{SEC_UID}/{kind}/7301234567890123456"
    again = route_strict(r.canonical_url)
    assert again is not None and again.canonical_url == r.canonical_url


def test_tiktok_odd_author_segment_still_routes_by_id() -> None:
    for author in ("@a.handle.longer.than.twenty.four", "@we%20ird", "@x!y"):
        r = route_strict(f"https://www.tiktok.com/{author}/video/7301234567890123456")
        assert r is not None and r.source_type is SourceType.TIKTOK_VIDEO, author
        assert r.canonical_url == "https://tiktok.com/@/video/7301234567890123456"


def test_tiktok_handle_rule_still_guards_profiles() -> None:
    r = route_strict(f"https://www.tiktok.com/@{SEC_UID}")
    assert r is not None and r.source_type is SourceType.TIKTOK_UNKNOWN


NON_ASCII = [
    # (raw spelling, percent-encoded spelling, key, canonical)
    ("https://www.youtube.com/@Иван_Крипто", "https://youtube.com/@%D0%98%D0%B2%D0%B0%D0%BD_%D0%9A%D1%80%D0%B8%D0%BF%D1%82%D0%BE",
     "@иван_крипто", "https://youtube.com/@%D0%B8%D0%B2%D0%B0%D0%BD_%D0%BA%D1%80%D0%B8%D0%BF%D1%82%D0%BE"),
    ("https://www.youtube.com/c/코인맨", "https://www.youtube.com/c/%EC%BD%94%EC%9D%B8%EB%A7%A8",
     "c/코인맨", "https://youtube.com/c/%EC%BD%94%EC%9D%B8%EB%A7%A8"),
    ("https://www.youtube.com/user/Крипто", "https://www.youtube.com/user/%D0%9A%D1%80%D0%B8%D0%BF%D1%82%D0%BE",
     "user/крипто", "https://youtube.com/user/%D0%BA%D1%80%D0%B8%D0%BF%D1%82%D0%BE"),
    ("https://www.youtube.com/코인맨", "https://youtube.com/%EC%BD%94%EC%9D%B8%EB%A7%A8",
     "c/코인맨", "https://youtube.com/c/%EC%BD%94%EC%9D%B8%EB%A7%A8"),
]


@pytest.mark.parametrize(("raw", "encoded", "key", "canonical"), NON_ASCII, ids=[n[2] for n in NON_ASCII])
def test_non_ascii_youtube_names(raw: str, encoded: str, key: str, canonical: str) -> None:
    a, b = route_strict(raw), route_strict(encoded)
    assert a is not None and b is not None
    assert a.source_type is SourceType.YOUTUBE_CHANNEL
    assert (a.source_key, a.canonical_url) == (b.source_key, b.canonical_url) == (key, canonical)
    again = route_strict(a.canonical_url)
    assert again is not None and (again.source_key, again.canonical_url) == (key, canonical)


def test_non_ascii_names_are_unicode_normalized() -> None:
    nfc = route_strict("https://www.youtube.com/@caf\u00e9tv")
    nfd = route_strict("https://www.youtube.com/@cafe\u0301tv")
    assert nfc is not None and nfd is not None and nfc.source_key == nfd.source_key == "@caf\u00e9tv"


@pytest.mark.parametrize("word", ["news", "course", "results", "playlist", "feed", "premium", "music", "kids",
                                  "gaming", "live", "shorts", "channel", "account", "t", "about", "ads",
                                  "creators", "howyoutubeworks", "jobs", "signin", "upload", "trending",
                                  "redirect", "embed", "hashtag", "source", "yt", "s", "supported_browsers",
                                  "new", "paid_memberships", "reporthistory", "logout", "oops", "copyright",
                                  "watch_popup", "clip", "storefront", "explore", "browse", "feeds", "shared"])
def test_youtube_product_pages_are_not_channels(word: str) -> None:
    assert word in YOUTUBE_RESERVED
    for url in (f"https://www.youtube.com/{word}", f"https://m.youtube.com/{word.upper()}/"):
        r = route(url)
        assert r is not None and r.source_type is SourceType.YOUTUBE_UNKNOWN, url


@pytest.mark.parametrize("url", [f"https://www.youtube.com/channel/{UC}/home", "https://www.youtube.com/@KolGuy/home",
                                 "https://www.youtube.com/c/KolGuyTV/home", "https://www.youtube.com/KolGuyTV/home"])
def test_home_is_a_channel_tab(url: str) -> None:
    r = route_strict(url)
    assert r is not None and r.source_type is SourceType.YOUTUBE_CHANNEL
    assert not r.canonical_url.endswith("/home")
