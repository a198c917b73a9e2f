"""TikTokGenerator and the shared ApifyClient against a loopback Apify stand-in."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from socialrec_pipeline.domain.enums import ObjectKind
from socialrec_pipeline.domain.errors import (
    OutOfCredit,
    ProviderError,
    ProviderKeyRejected,
    TargetBlocked,
    TargetNotFound,
    TransientProviderError,
)
from socialrec_pipeline.providers.apify import ApifyClient
from socialrec_pipeline.providers.base import Generator
from socialrec_pipeline.providers.tiktok import ACCOUNT_METRICS, CONTENT_METRICS, TikTokGenerator
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.routing.types import RoutedUrl
from socialrec_pipeline.sandbox.fixture_server import FixtureServer, Reply
from socialrec_pipeline.sandbox.platforms import apify as fx
from tests.providers import CLIENT_TIMEOUT_S, JSON_VALUES, NOW, OPTS, SLOW_REPLY_S, make_routed, slow
from tests.providers.fidelity import Carried, add, assert_faithful, key_of, pick

TOKEN = "apify-secret-token-XYZ"
RUN_PATH = f"/v2/acts/{fx.TIKTOK_ACTOR}/run-sync-get-dataset-items"
VIDEO_URL = "https://tiktok.com/@moonkol/video/7350000000000000001"


def routed(source_type: SourceType, key: str | None, url: str) -> RoutedUrl:
    return make_routed(source_type, key, url, raw_suffix="?is_from_webapp=1")


VIDEO = routed(SourceType.TIKTOK_VIDEO, "7350000000000000001", VIDEO_URL)
PHOTO = routed(SourceType.TIKTOK_PHOTO, "7350000000000000002", "https://tiktok.com/@moonkol/photo/7350000000000000002")
PROFILE = routed(SourceType.TIKTOK_PROFILE, "moonkol", "https://tiktok.com/@moonkol")


@pytest.fixture
def gen(server):
    server.clear()
    client = ApifyClient(server.url, TOKEN, timeout=CLIENT_TIMEOUT_S)
    yield TikTokGenerator(client)
    client.close()


def answer(server: FixtureServer, reply: Any) -> None:
    fx.register_actor(server, fx.TIKTOK_ACTOR, reply, token=TOKEN)


def test_satisfies_protocol(gen):
    assert isinstance(gen, Generator)
    assert gen.makes_external_calls is True
    assert gen.source_types == {SourceType.TIKTOK_VIDEO, SourceType.TIKTOK_PHOTO, SourceType.TIKTOK_PROFILE}


def test_video_graph_exact(server, gen):
    answer(server, [fx.tiktok_video_item()])
    graph = gen.generate(VIDEO, OPTS, NOW)
    assert graph.model_dump() == {
        "root_ref": "root",
        "groups": [
            {
                "ref": "root",
                "parent_ref": None,
                "parent_relation": None,
                "venue": None,
                "creator": {
                    "platform": "tt",
                    "platform_key": "6800000000000000042",
                    "handle": "moonkol",
                    "account_created_at": None,  # TikTok has none (structurally missing)
                    "display_name": "Moon KOL",
                    "bio": "CA: 7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU",
                    "links": ["https://moon.example"],
                    "declared_handles": [],
                    "known_wallets": [],
                    "followers": 12000,
                    "unavailable": None,
                    "metrics": {"fans": 12000, "following": 15, "heart": 340000, "video": 87},
                    "data": {"privateAccount": False},
                },
                "content": {
                    "platform": "tt",
                    "subtype": "video",
                    "platform_key": "7350000000000000001",
                    "url": VIDEO_URL,
                    "published_at": datetime(2024, 12, 10, 7, 0, 30, tzinfo=UTC),
                    "text": {
                        "primary": "gm $MOON to the moon #solana #memecoin",
                        "body": None,
                        "from_media": "https://v16.tiktokcdn.example/sub-asr.vtt",  # ASR before MT
                    },
                    "links": [],
                    "tags": ["solana", "memecoin"],
                    "mentions": [],
                    "metrics": {
                        "playCount": 50210,
                        "diggCount": 3100,
                        "shareCount": 120,
                        "commentCount": 240,
                        "collectCount": 77,
                    },
                    "data": {
                        "musicId": "7300000000000000009",
                        "musicName": "original sound - moonkol",
                        "duration": 26.981,
                    },
                },
            }
        ],
    }
    published = graph.groups[0].content.published_at
    assert published.utcoffset().total_seconds() == 0
    # The documented input, the token in the query string, a descriptive User-Agent.
    (call,) = server.calls(RUN_PATH)
    assert call.json() == {
        "postURLs": [VIDEO_URL],
        "resultsPerPage": 1,
        "shouldDownloadVideos": False,
        "shouldDownloadCovers": False,
    }
    assert call.param("token") == TOKEN
    assert call.headers["user-agent"].startswith("socialrec-pipeline/")


def test_slideshow_is_photo_and_epoch_fallback(server, gen):
    item = fx.tiktok_slideshow_item(createTimeISO=None, createTime=1733814030)
    answer(server, [item])
    content = gen.generate(PHOTO, OPTS, NOW).groups[0].content
    assert content.subtype == "photo"
    assert content.published_at == datetime(2024, 12, 10, 7, 0, 30, tzinfo=UTC)
    assert content.text.from_media is None
    assert content.data == {"musicId": "7300000000000000009", "musicName": "original sound - moonkol", "duration": 0}


def test_video_without_author_id_has_no_creator(server, gen):
    answer(server, [fx.tiktok_video_item(authorMeta={"name": "moonkol"})])
    group = gen.generate(VIDEO, OPTS, NOW).groups[0]
    assert group.creator is None and group.content.platform_key == "7350000000000000001"


def test_profile_graph(server, gen):
    answer(server, [fx.tiktok_video_item()])
    graph = gen.generate(PROFILE, OPTS, NOW)
    (group,) = graph.groups
    assert group.content is None and group.venue is None
    assert group.creator.platform_key == "6800000000000000042"
    assert group.creator.followers == 12000
    assert server.calls(RUN_PATH)[0].json()["profiles"] == ["moonkol"]


def test_private_profile_is_blocked(server, gen):
    item = fx.tiktok_video_item()
    item["authorMeta"]["privateAccount"] = True
    answer(server, [item])
    with pytest.raises(TargetBlocked):
        gen.generate(PROFILE, OPTS, NOW)


# (reply, expected exception class). Covers every error shape named by the contract.
ERROR_CASES = {
    "empty_or_private_item": ([fx.error_item()], TargetNotFound),
    "error_item_after_good_item": ([fx.tiktok_video_item(), fx.error_item("Post not found")], TargetNotFound),
    "private_item": ([fx.error_item("This account is private")], TargetBlocked),
    "unknown_error_item": ([fx.error_item("Actor crashed weirdly")], TransientProviderError),
    "empty_dataset": ([], TargetNotFound),
    "spending_cap_403": (fx.spending_cap(403), OutOfCredit),
    "spending_cap_402": (fx.spending_cap(402), OutOfCredit),
    "spending_cap_400": (fx.spending_cap(400), OutOfCredit),
    "spending_cap_as_item": ([fx.error_item(fx.SPENDING_CAP_MESSAGE)], OutOfCredit),
    "payment_required": (
        fx.api_error("Not enough usage to run paid actor", 402, "not-enough-usage-to-run-paid-actor"),
        OutOfCredit,
    ),
    "forbidden_other": (
        fx.api_error("Insufficient permissions for the actor", 403, "insufficient-permissions"),
        ProviderKeyRejected,
    ),
    "bad_token": (fx.api_error("token not valid", 401, "token-not-valid"), ProviderKeyRejected),
    "actor_missing": (fx.api_error("Actor was not found", 404, "record-not-found"), TransientProviderError),
    "run_timeout_408": (fx.api_error("Run timed out", 408, "run-timeout-exceeded"), TransientProviderError),
    "rate_limited_429": (fx.api_error("Rate limit exceeded", 429, "rate-limit-exceeded"), TransientProviderError),
    "server_500": (Reply.json({"error": {"message": "boom"}}, status=500), TransientProviderError),
    "server_503_html": (Reply.html("<h1>503</h1>", status=503), TransientProviderError),
    "malformed_json": (
        Reply(status=201, body=b'[{"id": "1",', headers={"Content-Type": "application/json"}),
        TransientProviderError,
    ),
    "html_not_json": (Reply.html("<html><body>Apify</body></html>", status=200), TransientProviderError),
    "object_not_array": (Reply.json({"items": []}), TransientProviderError),
    "array_of_non_objects": (Reply.json(["x", 1]), TransientProviderError),
    "timeout": (slow(Reply.json([fx.tiktok_video_item()]), SLOW_REPLY_S), TransientProviderError),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_error_shapes(server, gen, case):
    reply, expected = ERROR_CASES[case]
    answer(server, reply)
    with pytest.raises(ProviderError) as info:
        gen.generate(VIDEO, OPTS, NOW)
    assert type(info.value) is expected
    assert TOKEN not in str(info.value)  # the query-string token never reaches a message


def test_connection_refused_is_transient_and_token_free():
    client = ApifyClient("http://127.0.0.1:9", TOKEN, timeout=0.5)
    with pytest.raises(TransientProviderError) as info:
        TikTokGenerator(client).generate(VIDEO, OPTS, NOW)
    assert TOKEN not in str(info.value)


def test_httpx_request_log_does_not_carry_token(server, gen, caplog):
    answer(server, [fx.tiktok_video_item()])
    with caplog.at_level(logging.DEBUG):
        gen.generate(VIDEO, OPTS, NOW)
    assert any("HTTP Request" in r.getMessage() for r in caplog.records)
    assert all(TOKEN not in r.getMessage() for r in caplog.records)


# Mutilated payloads: whatever a field holds, the answer is a graph or a typed ProviderError.
MUTATIONS: list[tuple[str, Any]] = [
    ("id", None),
    ("id", {}),
    ("id", True),
    ("id", ""),
    ("authorMeta", None),
    ("authorMeta", "x"),
    ("authorMeta", {"id": None, "fans": "many"}),
    ("authorMeta", {"id": [], "bioLink": {"link": 5}}),
    ("hashtags", "solana"),
    ("hashtags", True),
    ("hashtags", 7),
    ("hashtags", [None, 1, {"name": None}]),
    ("createTimeISO", 5),
    ("createTimeISO", "yesterday"),
    ("createTime", "NaN"),
    ("createTime", 1e30),
    ("videoMeta", []),
    ("videoMeta", {"subtitleLinks": "x"}),
    ("videoMeta", {"subtitleLinks": [None, {"downloadLink": 3}]}),
    ("musicMeta", 3),
    ("musicMeta", {"musicId": None}),
    ("playCount", "abc"),
    ("diggCount", -1),
    ("text", 5),
    ("mentions", [{"id": 1}, "@x", None]),
    ("isSlideshow", "yes"),
]


@pytest.mark.parametrize(("field", "value"), MUTATIONS, ids=[f"{f}={v!r}" for f, v in MUTATIONS])
def test_mutilated_items_never_crash(server, gen, field, value):
    item = fx.tiktok_video_item()
    item[field] = value
    answer(server, [item])
    for target in (VIDEO, PROFILE):
        try:
            graph = gen.generate(target, OPTS, NOW)
        except ProviderError:
            continue
        assert_faithful(graph, target.canonical_url, carried(item, target))


def carried(item: dict, target: RoutedUrl) -> Carried:
    """The metrics the item carries, on the objects the graph must hold (tests/providers/fidelity.py)."""
    out: Carried = {}
    meta = item.get("authorMeta")
    if isinstance(meta, dict):
        add(out, ObjectKind.ACCOUNTS, key_of(meta.get("id")), pick(meta, ACCOUNT_METRICS))
    if target is VIDEO:
        add(out, ObjectKind.CONTENTS, key_of(item.get("id")), pick(item, CONTENT_METRICS))
    return out


def test_missing_id_is_error_not_keyerror(server, gen):
    item = fx.tiktok_video_item()
    del item["id"]
    answer(server, [item])
    with pytest.raises(TransientProviderError):
        gen.generate(VIDEO, OPTS, NOW)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(overrides=st.dictionaries(st.sampled_from(sorted(fx.tiktok_video_item())), JSON_VALUES, max_size=4))
def test_hypothesis_items(server, gen, overrides):
    item = fx.tiktok_video_item(**overrides)
    json.dumps(item)
    answer(server, [item])
    for target in (VIDEO, PROFILE):
        try:
            graph = gen.generate(target, OPTS, NOW)
        except ProviderError:
            continue
        assert_faithful(graph, target.canonical_url, carried(item, target))


def test_urls_in_the_video_text_reach_links(server, gen):
    text = "CA on https://moon.example/ca, chart: https://dexscreener.com/solana/abc. gm"
    answer(server, [fx.tiktok_video_item(text=text)])
    content = gen.generate(VIDEO, OPTS, NOW).groups[0].content
    assert content.links == ["https://moon.example/ca", "https://dexscreener.com/solana/abc"]
    assert content.text.primary == text


def test_a_link_in_the_text_to_the_video_itself_is_not_outbound(server, gen):
    # Its own share link, spelled differently (www, query, trailing slash), and "" as absent.
    text = (
        "new vid https://www.tiktok.com/@moonkol/video/7350000000000000001/?is_from_webapp=1 CA https://moon.example/ca"
    )
    answer(server, [fx.tiktok_video_item(text=text, musicMeta={"musicId": "", "musicName": ""})])
    content = gen.generate(VIDEO, OPTS, NOW).groups[0].content
    assert content.links == ["https://moon.example/ca"]
    assert "musicId" not in content.data and "musicName" not in content.data
