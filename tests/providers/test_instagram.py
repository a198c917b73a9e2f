"""InstagramGenerator against a loopback Apify stand-in answering in the documented shapes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from socialrec_pipeline.domain.enums import ObjectKind
from socialrec_pipeline.domain.errors import (
    OutOfCredit,
    ProviderError,
    TargetBlocked,
    TargetNotFound,
    TransientProviderError,
)
from socialrec_pipeline.providers.apify import ApifyClient
from socialrec_pipeline.providers.base import Generator
from socialrec_pipeline.providers.instagram import ACCOUNT_METRICS, CONTENT_METRICS, InstagramGenerator
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.routing.types import RoutedUrl
from socialrec_pipeline.sandbox.fixture_server import FixtureServer, Reply
from socialrec_pipeline.sandbox.platforms import apify as fx
from tests.providers import CLIENT_TIMEOUT_S, JSON_VALUES, NOW, OPTS, SLOW_REPLY_S, make_routed, slow
from tests.providers.fidelity import Carried, add, assert_faithful, key_of, pick

TOKEN = "apify-secret-token-IG"
RUN_PATH = f"/v2/acts/{fx.INSTAGRAM_ACTOR}/run-sync-get-dataset-items"


def routed(source_type: SourceType, key: str, url: str) -> RoutedUrl:
    return make_routed(source_type, key, url, raw_suffix="/?igsh=abc")


POST = routed(SourceType.INSTAGRAM_POST, "C1aBcDeFgHi", "https://instagram.com/p/C1aBcDeFgHi")
REEL_AS_P = routed(SourceType.INSTAGRAM_POST, "C2ReelCode1", "https://instagram.com/p/C2ReelCode1")
TV = routed(SourceType.INSTAGRAM_TV, "C3TvCode", "https://instagram.com/tv/C3TvCode")
PROFILE = routed(SourceType.INSTAGRAM_PROFILE, "moonproject", "https://instagram.com/moonproject")


@pytest.fixture
def gen(server):
    server.clear()
    client = ApifyClient(server.url, TOKEN, timeout=CLIENT_TIMEOUT_S)
    yield InstagramGenerator(client)
    client.close()


def answer(server: FixtureServer, reply: Any) -> None:
    fx.register_actor(server, fx.INSTAGRAM_ACTOR, reply, token=TOKEN)


def test_protocol_and_story_left_unsupported(gen):
    assert isinstance(gen, Generator) and gen.makes_external_calls is True
    # Stories are not fetchable by the actor: unregistered, so recorded `unsupported`.
    assert SourceType.INSTAGRAM_STORY not in gen.source_types
    assert gen.source_types == {
        SourceType.INSTAGRAM_POST, SourceType.INSTAGRAM_REEL, SourceType.INSTAGRAM_TV, SourceType.INSTAGRAM_PROFILE
    }


def test_post_graph_exact(server, gen):
    answer(server, [fx.instagram_post_item()])
    graph = gen.generate(POST, OPTS, NOW)
    assert graph.model_dump() == {
        "root_ref": "root",
        "groups": [
            {
                "ref": "root",
                "parent_ref": None,
                "parent_relation": None,
                "venue": None,
                "creator": {
                    "platform": "ig",
                    "platform_key": "58000000001",
                    "handle": "moonproject",
                    "account_created_at": None,
                    "display_name": None,
                    "bio": None,
                    "links": [],
                    "declared_handles": [],
                    "known_wallets": [],
                    "followers": None,
                    "unavailable": None,
                    "metrics": {},
                    "data": {"source_ref": "post"},  # thin: the owner's profile is another paid run
                },
                "content": {
                    "platform": "ig",
                    "subtype": "post",
                    "platform_key": "3300000000000000001",
                    "url": "https://instagram.com/p/C1aBcDeFgHi",
                    "published_at": datetime(2024, 12, 10, 7, 0, 30, tzinfo=UTC),
                    "text": {
                        "primary": "Launching $MOON today #solana",
                        "body": None,
                        "from_media": "Photo by Moon Project. May be an image of text that says 'MOON'.",
                    },
                    "links": [],
                    "tags": ["solana"],
                    "mentions": [],
                    "metrics": {"likesCount": 420, "commentsCount": 12},
                    "data": {
                        "shortCode": "C1aBcDeFgHi",
                        "type": "Image",
                        "productType": "feed",
                        "mentions": ["moonteam"],
                    },
                },
            }
        ],
    }
    assert graph.groups[0].content.published_at.utcoffset().total_seconds() == 0
    (call,) = server.calls(RUN_PATH)
    assert call.json() == {
        "directUrls": ["https://instagram.com/p/C1aBcDeFgHi"],
        "resultsType": "posts",
        "resultsLimit": 1,
    }


def test_clips_is_reel_and_hidden_likes_store_nothing(server, gen):
    answer(server, [fx.instagram_reel_item()])
    content = gen.generate(REEL_AS_P, OPTS, NOW).groups[0].content
    assert content.subtype == "reel"
    assert content.metrics == {"commentsCount": 12, "videoViewCount": 8800, "videoPlayCount": 15000}
    assert "likesCount" not in content.metrics and -1 not in content.metrics.values()


def test_tv_subtype_from_route(server, gen):
    answer(server, [fx.instagram_post_item(type="Video", productType="igtv")])
    assert gen.generate(TV, OPTS, NOW).groups[0].content.subtype == "tv"


def test_owner_without_id_is_not_returned(server, gen):
    item = fx.instagram_post_item()
    del item["ownerId"]
    answer(server, [item])
    group = gen.generate(POST, OPTS, NOW).groups[0]
    assert group.creator is None
    assert group.content.data["ownerUsername"] == "moonproject"


def test_profile_graph_exact(server, gen):
    answer(server, [fx.instagram_profile_item()])
    graph = gen.generate(PROFILE, OPTS, NOW)
    assert graph.model_dump()["groups"] == [
        {
            "ref": "root",
            "parent_ref": None,
            "parent_relation": None,
            "venue": None,
            "content": None,
            "creator": {
                "platform": "ig",
                "platform_key": "58000000001",
                "handle": "moonproject",
                "account_created_at": None,  # structurally missing on Instagram
                "display_name": "Moon Project",
                "bio": "The moon is a memecoin",
                "links": ["https://moon.example"],
                "declared_handles": [],
                "known_wallets": [],
                "followers": 9100,
                "unavailable": None,
                "metrics": {"followersCount": 9100, "followsCount": 3, "postsCount": 41},
                "data": {"verified": False},
            },
        }
    ]
    assert server.calls(RUN_PATH)[0].json()["resultsType"] == "details"


def test_external_urls_as_strings(server, gen):
    answer(server, [fx.instagram_profile_item(externalUrls=["https://a.example", None, 3])])
    assert gen.generate(PROFILE, OPTS, NOW).groups[0].creator.links == ["https://a.example"]


def test_private_profile_is_blocked(server, gen):
    answer(server, [fx.instagram_profile_item(private=True)])
    with pytest.raises(TargetBlocked):
        gen.generate(PROFILE, OPTS, NOW)


ERROR_CASES = {
    "empty_or_private": ([fx.error_item()], TargetNotFound),
    "not_found_item": ([fx.error_item("not_found", "Page not found")], TargetNotFound),
    "restricted_item": ([fx.error_item("restricted_page", "This profile is private")], TargetBlocked),
    "error_item_second": ([fx.instagram_post_item(), fx.error_item()], TargetNotFound),
    "empty_dataset": ([], TargetNotFound),
    "spending_cap": (fx.spending_cap(403), OutOfCredit),
    "spending_cap_item": ([fx.error_item("failed", fx.SPENDING_CAP_MESSAGE)], OutOfCredit),
    "rate_limited": (fx.api_error("Rate limit", 429, "rate-limit-exceeded"), TransientProviderError),
    "server_502": (Reply.html("bad gateway", status=502), TransientProviderError),
    "run_timeout_408": (fx.api_error("Run timed out", 408, "run-timeout-exceeded"), TransientProviderError),
    "malformed_json": (
        Reply(status=201, body=b"[{", headers={"Content-Type": "application/json"}),
        TransientProviderError,
    ),
    "html_not_json": (Reply.html("<html>login</html>"), TransientProviderError),
    "null_body": (Reply.json(None), TransientProviderError),
    "timeout": (slow(Reply.json([fx.instagram_post_item()]), SLOW_REPLY_S), TransientProviderError),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
@pytest.mark.parametrize("target", [POST, PROFILE], ids=["post", "profile"])
def test_error_shapes(server, gen, case, target):
    reply, expected = ERROR_CASES[case]
    answer(server, reply)
    with pytest.raises(ProviderError) as info:
        gen.generate(target, OPTS, NOW)
    assert type(info.value) is expected
    assert TOKEN not in str(info.value)


@pytest.mark.parametrize(
    ("item", "target"),
    [
        ({"shortCode": "x"}, POST),  # no id
        (fx.instagram_post_item(id=None), POST),
        (fx.instagram_profile_item(id=""), PROFILE),
        ({"username": "moonproject"}, PROFILE),
    ],
)
def test_missing_key_is_error(server, gen, item, target):
    answer(server, [item])
    with pytest.raises(TransientProviderError):
        gen.generate(target, OPTS, NOW)


_FIELDS = sorted(set(fx.instagram_post_item()) | set(fx.instagram_profile_item()))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(overrides=st.dictionaries(st.sampled_from(_FIELDS), JSON_VALUES, max_size=4))
def test_hypothesis_items(server, gen, overrides):
    for base, target in ((fx.instagram_post_item(), POST), (fx.instagram_profile_item(), PROFILE)):
        base.update(overrides)
        answer(server, [base])
        try:
            graph = gen.generate(target, OPTS, NOW)
        except ProviderError:
            continue
        expected: Carried = {}
        if target is PROFILE:
            add(expected, ObjectKind.ACCOUNTS, key_of(base.get("id")), pick(base, ACCOUNT_METRICS))
        else:
            add(expected, ObjectKind.CONTENTS, key_of(base.get("id")), pick(base, CONTENT_METRICS))
        assert_faithful(graph, target.canonical_url, expected)


def test_urls_in_the_caption_reach_links(server, gen):
    caption = "Launching $MOON today! Site: https://moon.example/ (CA in bio) more: https://t.me/moonportal."
    answer(server, [fx.instagram_post_item(caption=caption)])
    content = (
        gen.generate(routed(SourceType.INSTAGRAM_POST, "C1aBcDeFgHi", "https://instagram.com/p/C1aBcDeFgHi"), OPTS, NOW)
        .groups[0]
        .content
    )
    assert content.links == ["https://moon.example/", "https://t.me/moonportal"]


def test_a_caption_link_to_the_post_itself_is_not_outbound(server, gen):
    caption = "gm https://www.instagram.com/p/C1aBcDeFgHi/?igsh=abc site https://moon.example/"
    answer(server, [fx.instagram_post_item(caption=caption)])
    content = (
        gen.generate(routed(SourceType.INSTAGRAM_POST, "C1aBcDeFgHi", "https://instagram.com/p/C1aBcDeFgHi"), OPTS, NOW)
        .groups[0]
        .content
    )
    assert content.links == ["https://moon.example/"]
