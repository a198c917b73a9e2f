"""YouTubeGenerator against a loopback Data API v3 stand-in answering in the documented shapes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from socialrec_pipeline.domain.enums import ObjectKind, Platform
from socialrec_pipeline.domain.errors import (
    ProviderError,
    ProviderKeyRejected,
    ProviderQuotaExceeded,
    TargetNotFound,
    TransientProviderError,
)
from socialrec_pipeline.domain.graph import AccountDraft, ContentDraft, ContentText, GraphGroup, SocialObjectGraph
from socialrec_pipeline.providers.base import Generator
from socialrec_pipeline.providers.youtube import CHANNEL_METRICS, VIDEO_METRICS, YouTubeClient, YouTubeGenerator
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.sandbox.fixture_server import Reply
from socialrec_pipeline.sandbox.platforms import youtube as ytfix
from tests.providers import NOW, OPTS, make_routed, mutilations, sampled, slow
from tests.providers.fidelity import Carried, add, assert_faithful, key_of, pick

KEY = "AIza-sekrit"
VIDEO, SHORT, CHANNEL = SourceType.YOUTUBE_VIDEO, SourceType.YOUTUBE_SHORT, SourceType.YOUTUBE_CHANNEL
CID = ytfix.CHANNEL_ID


@pytest.fixture
def fx(server):
    server.clear()
    return ytfix.demo_fixtures().register(server)


@pytest.fixture
def gen(server):
    client = YouTubeClient(server.url, KEY, timeout=2.0)
    yield YouTubeGenerator(client)
    client.close()


CHANNEL_ACCOUNT = AccountDraft(
    platform=Platform.YOUTUBE, platform_key=CID, handle="pumpchannel", display_name="Pump Channel",
    bio="daily calls", account_created_at=datetime(2019, 5, 1, 12, 34, 56, 789000, tzinfo=UTC),
    followers=12_300, metrics={"subscriberCount": 12_300, "videoCount": 88, "viewCount": 987_654},
    data={"hiddenSubscriberCount": False, "customUrl": "@pumpchannel"},
)


def test_protocol(gen):
    assert isinstance(gen, Generator) and gen.makes_external_calls
    assert gen.source_types == {VIDEO, SHORT, CHANNEL}


@pytest.mark.parametrize("source_type", [VIDEO, SHORT])
def test_video_graph_is_exact(fx, gen, server, source_type):
    graph = gen.generate(make_routed(source_type, "dQw4w9WgXcQ"), OPTS, NOW)
    expected = GraphGroup(
        ref="video:dQw4w9WgXcQ",
        creator=CHANNEL_ACCOUNT,
        content=ContentDraft(
            platform=Platform.YOUTUBE,
            subtype="video",
            platform_key="dQw4w9WgXcQ",
            url=(
                "https://youtube.com/shorts/dQw4w9WgXcQ"
                if source_type is SHORT
                else "https://youtube.com/watch?v=dQw4w9WgXcQ"
            ),
            published_at=datetime(2024, 12, 9, 18, tzinfo=UTC),
            text=ContentText(primary="PUMP launch stream", body="CA: 7xKX...pump\nhttps://pump.fun/abc"),
            links=["https://pump.fun/abc"],
            tags=["solana", "pump"],
            metrics={"viewCount": 15_234, "likeCount": 321, "commentCount": 45},
            data={"categoryId": "22", "liveBroadcastContent": "none"},
        ),
    )
    assert graph == SocialObjectGraph.single(expected)
    video_call, channel_call = server.calls()[-2:]
    assert (video_call.path, video_call.param("id"), video_call.param("part"), video_call.param("key")) == (
        "/videos",
        "dQw4w9WgXcQ",
        "snippet,statistics",
        KEY,
    )
    assert (channel_call.path, channel_call.param("id")) == ("/channels", CID)


def test_video_whose_channel_is_gone_keeps_a_minimal_creator(fx, gen):
    fx.videos["orphan"] = ytfix.video("orphan", channel_id="UCgonegonegonegonegone00")
    creator = gen.generate(make_routed(VIDEO, "orphan"), OPTS, NOW).groups[0].creator
    assert creator == AccountDraft(
        platform=Platform.YOUTUBE,
        platform_key="UCgonegonegonegonegone00",
        display_name="Pump Channel",
        data={"source_ref": "video"},
    )


@pytest.mark.parametrize(
    ("key", "url", "param"),
    [
        ("c/pumpchannel", "https://youtube.com/c/pumpchannel", ("forHandle", "@pumpchannel")),
        ("@pumpchannel", "https://youtube.com/@pumpchannel", ("forHandle", "@pumpchannel")),
        (CID, f"https://youtube.com/channel/{CID}", ("id", CID)),
    ],
)
def test_channel_graph_is_exact(fx, gen, server, key, url, param):
    graph = gen.generate(make_routed(CHANNEL, key, url), OPTS, NOW)
    assert graph == SocialObjectGraph.single(GraphGroup(ref=f"account:{CID}", creator=CHANNEL_ACCOUNT))
    assert server.calls("/channels")[-1].param(param[0]) == param[1]


def test_legacy_user_url_uses_for_username(fx, gen, server):
    with pytest.raises(TargetNotFound):
        gen.generate(make_routed(CHANNEL, "user/oldname", "https://youtube.com/user/oldname"), OPTS, NOW)
    assert server.calls("/channels")[-1].param("forUsername") == "oldname"


def test_hidden_subscriber_count_is_not_a_follower_count(fx, gen):
    fx.channels[CID] = ytfix.channel(hidden=True)
    account = gen.generate(make_routed(CHANNEL, CID), OPTS, NOW).groups[0].creator
    assert account.followers is None and "subscriberCount" not in account.metrics
    assert account.data["hiddenSubscriberCount"] is True


@pytest.mark.parametrize(("source_type", "key"), [(VIDEO, "nope"), (CHANNEL, "nobody"), (CHANNEL, "UC" + "x" * 22)])
def test_missing_target_is_not_found(fx, gen, source_type, key):
    with pytest.raises(TargetNotFound):
        gen.generate(make_routed(source_type, key), OPTS, NOW)


def test_total_results_zero_with_items_key_is_not_found(server, gen):
    server.clear()
    server.route("GET", "/videos", Reply.json(ytfix.listing("video", [])))
    with pytest.raises(TargetNotFound):
        gen.generate(make_routed(VIDEO, "x"), OPTS, NOW)


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (ytfix.quota_exceeded(), ProviderQuotaExceeded),
        (Reply.json({"error": {"code": 403, "errors": [{"reason": "forbidden"}]}}, status=403), ProviderKeyRejected),
        (Reply.json({"error": {"code": 400, "errors": [{"reason": "keyInvalid"}]}}, status=400), ProviderKeyRejected),
        (
            Reply.json({"error": {"code": 429, "errors": [{"reason": "rateLimitExceeded"}]}}, status=429),
            TransientProviderError,
        ),
        (Reply.json({"error": {"code": 404, "errors": [{"reason": "notFound"}]}}, status=404), TransientProviderError),
        (Reply.json({"error": {"code": 500}}, status=500), TransientProviderError),
        (Reply.html("<html>503</html>", status=503), TransientProviderError),
        (Reply(status=200, body=b'{"items": [', headers={"Content-Type": "application/json"}), TransientProviderError),
        (Reply.html("<html>consent</html>"), TransientProviderError),
        (Reply.json({"items": {"id": "x"}}), TransientProviderError),
        (Reply.json(None), TransientProviderError),
    ],
)
@pytest.mark.parametrize(("source_type", "path"), [(VIDEO, "/videos"), (CHANNEL, "/channels")])
def test_error_shapes(server, gen, source_type, path, reply, error):
    server.clear()
    ytfix.demo_fixtures().register(server)
    server.route("GET", path, reply)
    with pytest.raises(error):
        gen.generate(make_routed(source_type, "dQw4w9WgXcQ" if source_type is VIDEO else CID), OPTS, NOW)


def test_video_fails_when_its_channel_lookup_runs_out_of_quota(fx, gen, server):
    server.route("GET", "/channels", ytfix.quota_exceeded())
    with pytest.raises(ProviderQuotaExceeded) as info:
        gen.generate(make_routed(VIDEO, "dQw4w9WgXcQ"), OPTS, NOW)
    # error (retryable) without an attempt, and it names the key whose quota is spent
    assert (info.value.status, info.value.judges_target, info.value.setting) == ("error", False, "YOUTUBE_API_KEY")


def test_timeout_is_transient_and_key_stays_out_of_messages(server):
    server.clear()
    server.route("GET", "/videos", slow(Reply.json({}), 0.6))
    client = YouTubeClient(server.url, KEY, timeout=0.15)
    with pytest.raises(TransientProviderError, match="timed out") as info:
        YouTubeGenerator(client).generate(make_routed(VIDEO, "v"), OPTS, NOW)
    assert KEY not in str(info.value) and KEY not in repr(client)
    client.close()


@pytest.mark.parametrize(
    ("source_type", "path", "payload"),
    [
        (VIDEO, "/videos", ytfix.listing("video", [ytfix.video()])),
        (CHANNEL, "/channels", ytfix.listing("channel", [ytfix.channel()])),
    ],
)
def test_mutilated_payloads_never_crash(server, gen, source_type, path, payload):
    server.clear()
    ytfix.demo_fixtures().register(server)
    seen = 0
    for body in sampled(mutilations(payload)):
        server.route("GET", path, Reply.json(body))
        try:
            graph = gen.generate(make_routed(source_type, "dQw4w9WgXcQ" if source_type is VIDEO else CID), OPTS, NOW)
        except ProviderError:
            continue
        seen += 1
        assert all(g.creator is None or g.creator.platform_key for g in graph.groups)
        expected: Carried = {}
        items = body.get("items") if isinstance(body, dict) else None
        item = items[0] if isinstance(items, list) and items and isinstance(items[0], dict) else {}
        stats = item.get("statistics") if isinstance(item.get("statistics"), dict) else {}
        if source_type is VIDEO:
            add(expected, ObjectKind.CONTENTS, key_of(item.get("id")), pick(stats, VIDEO_METRICS))
        else:
            names = CHANNEL_METRICS if stats.get("hiddenSubscriberCount") is not True else ("videoCount", "viewCount")
            add(expected, ObjectKind.ACCOUNTS, key_of(item.get("id")), pick(stats, names))
        assert_faithful(graph, "https://youtube.com/", expected)
    assert seen > 20


def test_outbound_links_in_the_description_are_the_video_links(fx, gen):
    """`links[]` holds the outbound links of the body, and a video's body is its
    description — the place a drainer or a contract link is posted. Each distinct URL once."""
    fx.videos["linky"] = ytfix.video(
        "linky", description="buy: https://pump.fun/coin/ABC (ca)\nhttps://t.me/pumpchat, https://pump.fun/coin/ABC"
    )
    content = gen.generate(make_routed(VIDEO, "linky"), OPTS, NOW).groups[0].content
    assert content.links == ["https://pump.fun/coin/ABC", "https://t.me/pumpchat"]
