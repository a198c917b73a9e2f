"""RedditGenerator against a loopback Reddit stand-in answering in the documented shapes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from socialrec_pipeline.domain.enums import ObjectKind
from socialrec_pipeline.domain.errors import (
    AccountSuspended,
    ProviderError,
    TargetBlocked,
    TargetNotFound,
    TransientProviderError,
)
from socialrec_pipeline.providers.base import GenerateOptions, Generator
from socialrec_pipeline.providers.reddit import RedditClient, RedditGenerator
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.sandbox.fixture_server import Reply
from socialrec_pipeline.sandbox.platforms import reddit as fx
from tests.providers import CLIENT_TIMEOUT_S, JSON_VALUES, NOW, OPTS, SLOW_REPLY_S, slow
from tests.providers import make_routed as routed
from tests.providers.fidelity import Carried, add, assert_faithful, key_of, pick

POST_URL = "https://reddit.com/r/solana/comments/1abcde"


POST = routed(SourceType.REDDIT_POST, "1abcde", POST_URL)
SUB = routed(SourceType.REDDIT_SUBREDDIT, "solana", "https://reddit.com/r/solana")
USER = routed(SourceType.REDDIT_USER, "moon_dev", "https://reddit.com/user/moon_dev")
#: The stored author and subreddit rows are fresh: the post graph keeps the embedded copies.
FRESH = GenerateOptions(profile_is_fresh=lambda kind, platform, key: True)


@pytest.fixture
def anon(server):
    """No client credentials: anonymous `.json` endpoints."""
    server.clear()
    fx.register_reddit(server)
    client = RedditClient(server.url, timeout=CLIENT_TIMEOUT_S)
    yield RedditGenerator(client)
    client.close()


@pytest.fixture
def oauth(server):
    server.clear()
    fx.register_reddit(server, token=fx.DEMO_ACCESS_TOKEN)
    client = RedditClient(
        server.url,
        auth_base_url=server.url,
        client_id=fx.DEMO_CLIENT_ID,
        client_secret=fx.DEMO_CLIENT_SECRET,
        timeout=CLIENT_TIMEOUT_S,
    )
    yield RedditGenerator(client)
    client.close()


def test_protocol(anon):
    assert isinstance(anon, Generator) and anon.makes_external_calls is True
    assert anon.source_types == {SourceType.REDDIT_POST, SourceType.REDDIT_SUBREDDIT, SourceType.REDDIT_USER}


def test_post_graph_exact(server, anon):
    graph = anon.generate(POST, FRESH, NOW)
    assert graph.model_dump() == {
        "root_ref": "root",
        "groups": [
            {
                "ref": "root",
                "parent_ref": None,
                "parent_relation": None,
                "creator": {
                    "platform": "rd",
                    "platform_key": "moon_dev",
                    "handle": "moon_dev",
                    "account_created_at": None,
                    "display_name": None,
                    "bio": None,
                    "links": [],
                    "declared_handles": [],
                    "known_wallets": [],
                    "followers": None,
                    "unavailable": None,
                    "metrics": {},
                    "data": {"source_ref": "post"},
                },
                "venue": {
                    "platform": "rd",
                    "subtype": "subreddit",
                    "platform_key": "solana",
                    "name": "solana",
                    "description": None,
                    "venue_created_at": None,
                    "members": None,
                    "metrics": {},
                    "data": {"source_ref": "post"},
                },
                "content": {
                    "platform": "rd",
                    "subtype": "post",
                    "platform_key": "1abcde",
                    "url": POST_URL,
                    "published_at": datetime(2024, 12, 10, 7, 0, 30, tzinfo=UTC),
                    "text": {
                        "primary": "$MOON just launched on Solana",
                        "body": "Contract on https://moon.example/ca and chart below",
                        "from_media": None,
                    },
                    # A self post's `url` is its own permalink: only the body's link is outbound.
                    "links": ["https://moon.example/ca"],
                    "tags": [],
                    "mentions": [],
                    "metrics": {"score": 42, "upvote_ratio": 0.87, "num_comments": 9},
                    "data": {
                        "name": "t3_1abcde",
                        "permalink": "/r/solana/comments/1abcde/moon_just_launched_on_solana/",
                        "over_18": False,
                    },
                },
            }
        ],
    }
    assert graph.groups[0].content.published_at.utcoffset().total_seconds() == 0
    (call,) = server.calls("/comments/")
    assert call.path == "/comments/1abcde.json"
    assert "authorization" not in call.headers
    assert call.headers["user-agent"].startswith("socialrec-pipeline/")


def test_link_post_removed_and_deleted_author(server, anon):
    server.route(
        "GET",
        "/comments/1abcde.json",
        Reply.json(
            fx.post_listing(
                author="[deleted]",
                url="https://moon.example",
                selftext="",
                removed_by_category="moderator",
                subreddit="SolanaMemes",
            )
        ),
    )
    group = anon.generate(POST, OPTS, NOW).groups[0]
    assert group.creator is None  # deleted author: no creator
    assert group.venue.platform_key == "solanamemes" and group.venue.name == "SolanaMemes"
    assert group.content.links == ["https://moon.example"]
    assert group.content.text.body is None
    assert group.content.data["removed_by_category"] == "moderator"


def test_subreddit_graph_exact(anon):
    (group,) = anon.generate(SUB, OPTS, NOW).groups
    assert group.model_dump()["venue"] == {
        "platform": "rd",
        "subtype": "subreddit",
        "platform_key": "solana",
        "name": "Solana",
        "description": "The Solana subreddit",
        "venue_created_at": datetime(2018, 3, 2, 14, 13, 20, tzinfo=UTC),
        "members": 250000,
        "metrics": {"subscribers": 250000},
        "data": {
            "display_name": "solana",
            "id": "2qh1i",
            "name": "t5_2qh1i",
            "subreddit_type": "public",
            "over18": False,
            "quarantine": False,
        },
    }
    assert group.creator is None and group.content is None


def test_user_graph_exact(anon):
    (group,) = anon.generate(USER, OPTS, NOW).groups
    assert group.model_dump()["creator"] == {
        "platform": "rd",
        "platform_key": "moon_dev",
        "handle": "moon_dev",
        "account_created_at": datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC),
        "display_name": "Moon Dev",
        "bio": "building $MOON",
        "links": [],
        "declared_handles": [],
        "known_wallets": [],
        "followers": None,
        "unavailable": False,
        "metrics": {"total_karma": 1520, "link_karma": 900, "comment_karma": 620},
        "data": {"id": "abc123"},
    }


def test_token_fetched_once_and_bearer_sent(server, oauth):
    oauth.generate(POST, OPTS, NOW)  # the post, then its author's and subreddit's profiles
    oauth.generate(SUB, OPTS, NOW)
    oauth.generate(USER, OPTS, NOW)
    assert len(server.calls("/api/v1/access_token")) == 1
    api_calls = [c for c in server.requests if not c.path.startswith("/api/v1/")]
    assert len(api_calls) == 5
    assert all(c.headers["authorization"] == f"bearer {fx.DEMO_ACCESS_TOKEN}" for c in api_calls)


def test_token_renewed_after_expiry(server):
    server.clear()
    fx.register_reddit(server, token=fx.DEMO_ACCESS_TOKEN)
    now = [1000.0]
    client = RedditClient(
        server.url,
        auth_base_url=server.url,
        client_id=fx.DEMO_CLIENT_ID,
        client_secret=fx.DEMO_CLIENT_SECRET,
        timeout=CLIENT_TIMEOUT_S,
        clock=lambda: now[0],
    )
    gen = RedditGenerator(client)
    gen.generate(SUB, OPTS, NOW)
    now[0] += 86400 - 120  # still inside the lifetime minus the renewal margin
    gen.generate(SUB, OPTS, NOW)
    assert len(server.calls("/api/v1/access_token")) == 1
    now[0] += 100  # within the margin: renew before the token dies
    gen.generate(SUB, OPTS, NOW)
    assert len(server.calls("/api/v1/access_token")) == 2


def test_revoked_token_is_replaced_once(server, oauth):
    oauth.generate(SUB, OPTS, NOW)
    fx.register_token_endpoint(server, token="second-token")
    fx.register_reddit(server, token="second-token")  # the first token is now refused with 401
    oauth.generate(SUB, OPTS, NOW)
    assert len(server.calls("/api/v1/access_token")) == 2


@pytest.mark.parametrize("status", [401, 500])
def test_token_endpoint_failure_is_error(server, status):
    server.clear()
    server.route("POST", "/api/v1/access_token", Reply.json({"error": status, "secret": "s3cr3t"}, status=status))
    client = RedditClient(
        server.url, auth_base_url=server.url, client_id="id", client_secret="s3cr3t", timeout=CLIENT_TIMEOUT_S
    )
    with pytest.raises(TransientProviderError) as info:
        RedditGenerator(client).generate(SUB, OPTS, NOW)
    assert "s3cr3t" not in str(info.value)
    assert not server.calls("/r/")


ERROR_CASES: dict[str, tuple[Any, type[ProviderError]]] = {
    "banned_404": (fx.banned(), TargetNotFound),
    "plain_404": (Reply.json({"message": "Not Found", "error": 404}, status=404), TargetNotFound),
    "private_403": (fx.restricted("private"), TargetBlocked),
    "quarantined_403": (fx.restricted("quarantined"), TargetBlocked),
    "gated_403": (fx.restricted("gated"), TargetBlocked),
    "antibot_403_html": (Reply.html("<html>blocked</html>", status=403), TransientProviderError),
    "rate_limited_429": (
        Reply.json({"message": "Too Many Requests", "error": 429}, status=429),
        TransientProviderError,
    ),
    "server_500": (Reply.json({"error": 500}, status=500), TransientProviderError),
    "redirect_302": (Reply.redirect("https://www.reddit.com/subreddits/search.json?q=x"), TransientProviderError),
    "malformed_json": (
        Reply(status=200, body=b'{"kind": "t5", ', headers={"Content-Type": "application/json"}),
        TransientProviderError,
    ),
    "html_200": (Reply.html("<html>reddit</html>"), TransientProviderError),
    "wrong_kind": (Reply.json({"kind": "Listing", "data": {"children": []}}), TransientProviderError),
    "null_data": (Reply.json({"kind": "t5", "data": None}), TransientProviderError),
    "timeout": (slow(Reply.json(fx.subreddit_about()), SLOW_REPLY_S), TransientProviderError),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
@pytest.mark.parametrize("target", [POST, SUB, USER], ids=["post", "sub", "user"])
def test_error_shapes(server, anon, case, target):
    reply, expected = ERROR_CASES[case]
    server.clear()
    server.route_prefix("GET", "/", reply)
    with pytest.raises(ProviderError) as info:
        anon.generate(target, OPTS, NOW)
    assert type(info.value) is expected


def test_suspended_user(server, anon):
    with pytest.raises(AccountSuspended):
        anon.generate(routed(SourceType.REDDIT_USER, "gone_dev", "https://reddit.com/user/gone_dev"), OPTS, NOW)


def test_private_and_banned_subreddits_from_demo(anon):
    with pytest.raises(TargetBlocked):
        anon.generate(routed(SourceType.REDDIT_SUBREDDIT, "privatesub", "https://reddit.com/r/privatesub"), OPTS, NOW)
    with pytest.raises(TargetNotFound):
        anon.generate(routed(SourceType.REDDIT_SUBREDDIT, "gone", "https://reddit.com/r/gone"), OPTS, NOW)


def test_empty_post_listing_is_not_found(server, anon):
    server.route("GET", "/comments/1abcde.json", Reply.json([{"kind": "Listing", "data": {"children": []}}]))
    with pytest.raises(TargetNotFound):
        anon.generate(POST, OPTS, NOW)


def test_unsafe_names_make_no_call(server, anon):
    bad = routed(SourceType.REDDIT_SUBREDDIT, "../../admin", "https://reddit.com/r/..%2F..%2Fadmin")
    with pytest.raises(TransientProviderError) as info:
        anon.generate(bad, OPTS, NOW)
    assert info.value.external_call_made is False and not server.requests


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    post=st.dictionaries(st.sampled_from(sorted(fx.post_fields())), JSON_VALUES, max_size=4),
    about=st.dictionaries(
        st.sampled_from(sorted(fx.subreddit_about()["data"]) + ["is_suspended", "subreddit"]), JSON_VALUES, max_size=4
    ),
)
def test_hypothesis_payloads(server, anon, post, about):
    server.route("GET", "/comments/1abcde.json", Reply.json(fx.post_listing(**post)))
    server.route("GET", "/r/solana/about.json", Reply.json(fx.subreddit_about(**about)))
    server.route("GET", "/user/moon_dev/about.json", Reply.json(fx.user_about(**about)))
    post_data, sub_data, user_data = (
        fx.post_fields(**post),
        fx.subreddit_about(**about)["data"],
        fx.user_about(**about)["data"],
    )
    for target in (POST, SUB, USER):
        try:
            graph = anon.generate(target, OPTS, NOW)
        except ProviderError:
            continue
        expected: Carried = {}
        if target is POST:
            add(
                expected,
                ObjectKind.CONTENTS,
                key_of(post_data.get("id")),
                pick(post_data, ("score", "upvote_ratio", "num_comments"), strings=False),
            )
        elif target is SUB:
            name = key_of(sub_data.get("display_name"))
            add(expected, ObjectKind.VENUES, name and name.lower(), pick(sub_data, ("subscribers",)))
        else:
            add(
                expected,
                ObjectKind.ACCOUNTS,
                key_of(user_data.get("name")),
                pick(user_data, ("total_karma", "link_karma", "comment_karma")),
            )
        assert_faithful(graph, target.canonical_url, expected)


@pytest.mark.parametrize(
    "payload",
    [
        None,
        [],
        [None],
        [{"kind": "Listing"}],
        [{"kind": "Listing", "data": {"children": [None]}}],
        [{"kind": "Listing", "data": {"children": [{"kind": "t3", "data": {}}]}}],
        "text",
        5,
    ],
)
def test_mutilated_post_answers(server, anon, payload):
    server.route("GET", "/comments/1abcde.json", Reply.json(payload))
    with pytest.raises(ProviderError):
        anon.generate(POST, OPTS, NOW)


def test_post_author_and_subreddit_get_their_profiles_in_the_same_step(server, anon):
    group = anon.generate(POST, OPTS, NOW).groups[0]
    assert group.creator == anon.generate(USER, OPTS, NOW).groups[0].creator  # /user/moon_dev/about.json
    assert group.creator.bio == "building $MOON" and group.creator.unavailable is False
    assert group.venue == anon.generate(SUB, OPTS, NOW).groups[0].venue  # /r/solana/about.json
    assert (group.venue.members, group.venue.description) == (250000, "The Solana subreddit")
    assert group.content.platform_key == "1abcde"


def test_fresh_stored_profiles_are_not_fetched_again(server, anon):
    asked = []
    options = GenerateOptions(
        profile_is_fresh=lambda kind, platform, key: asked.append((kind, platform, key)) or kind == "venues"
    )
    group = anon.generate(POST, options, NOW).groups[0]
    assert asked == [("accounts", "rd", "moon_dev"), ("venues", "rd", "solana")]
    assert [c.path for c in server.calls() if "about" in c.path] == ["/user/moon_dev/about.json"]
    assert group.venue.data == {"source_ref": "post"} and group.creator.display_name == "Moon Dev"


def test_suspended_author_is_recorded_unavailable_and_failed_profiles_stay_thin(server, anon):
    server.route(
        "GET", "/comments/2gone.json", Reply.json(fx.post_listing(id="2gone", author="gone_dev", subreddit="nosuchsub"))
    )
    post = routed(SourceType.REDDIT_POST, "2gone", "https://reddit.com/r/nosuchsub/comments/2gone")
    group = anon.generate(post, OPTS, NOW).groups[0]
    assert (group.creator.platform_key, group.creator.unavailable) == ("gone_dev", True)
    assert group.creator.data == {"source_ref": "post"}
    assert group.venue.data == {"source_ref": "post"} and group.venue.members is None  # banned: 404
