"""XGenerator against a loopback twitterapi.io stand-in answering in the documented shapes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from socialrec_pipeline.domain.enums import ObjectKind, ParentRelation, Platform, VenueSubtype
from socialrec_pipeline.domain.errors import (
    AccountSuspended,
    OutOfCredit,
    ProviderError,
    ProviderKeyRejected,
    TargetNotFound,
    TransientProviderError,
)
from socialrec_pipeline.domain.graph import (
    AccountDraft,
    ContentDraft,
    ContentText,
    GraphGroup,
    Mention,
    SocialObjectGraph,
    VenueDraft,
)
from socialrec_pipeline.providers.base import GenerateOptions, Generator
from socialrec_pipeline.providers.x import (
    COMMUNITY_METRICS,
    TWEET_METRICS,
    USER_METRICS,
    TwitterApiClient,
    XGenerator,
    parse_legacy_date,
)
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.routing.types import RoutedUrl
from socialrec_pipeline.sandbox.fixture_server import Reply
from socialrec_pipeline.sandbox.platforms import x as xfix
from tests.providers import NOW, make_routed, mutilations, sampled, slow
from tests.providers.fidelity import Carried, add, assert_faithful, key_of, pick

OPTS = GenerateOptions(enable_community=True)
KEY = "sekrit-key-123"


def routed(source_type: SourceType, key: str, url: str = "https://x.com/") -> RoutedUrl:
    return make_routed(source_type, key, url)


@pytest.fixture
def fx(server):
    server.clear()
    return xfix.demo_fixtures().register(server)


@pytest.fixture
def gen(server):
    client = TwitterApiClient(server.url, KEY, timeout=2.0)
    yield XGenerator(client)
    client.close()


def kolguy_account(**overrides) -> AccountDraft:
    fields = dict(
        platform=Platform.X,
        platform_key="44196397",
        handle="kolguy",
        display_name="Kol Guy",
        bio="calls only. BNB: 0x0Ae024D3C20",
        account_created_at=datetime(2024, 12, 10, 7, 0, 30, tzinfo=UTC),
        links=["https://kol.guy/", "https://t.me/kolchat"],
        followers=120_500,
        unavailable=False,
        metrics={"followers": 120_500, "following": 321, "statusesCount": 9_876,
                 "favouritesCount": 4_321, "mediaCount": 210},
        data={"isBlueVerified": True},
    )
    fields.update(overrides)
    return AccountDraft(**fields)


TWEET_METRIC_VALUES = {"viewCount": 20_000, "likeCount": 150, "retweetCount": 12, "replyCount": 3,
                       "quoteCount": 2, "bookmarkCount": 7}


def test_generator_satisfies_protocol(gen):
    assert isinstance(gen, Generator)
    assert gen.makes_external_calls is True
    assert gen.source_types == {SourceType.X_TWEET, SourceType.X_PROFILE, SourceType.X_COMMUNITY}


def test_quote_tweet_graph_is_exact(fx, gen, server):
    graph = gen.generate(routed(SourceType.X_TWEET, "1866000000000000001"), OPTS, NOW)
    original_author = AccountDraft(
        platform=Platform.X, platform_key="2002", handle="dev_anon", display_name="Dev Anon",
        bio="calls only. BNB: 0x0Ae024D3C20",
        account_created_at=datetime(2024, 12, 10, 7, 0, 30, tzinfo=UTC),
        links=["https://kol.guy/", "https://t.me/kolchat"], followers=900, unavailable=False,
        metrics={"followers": 900, "following": 321, "statusesCount": 9_876, "favouritesCount": 4_321,
                 "mediaCount": 210},
        data={"isBlueVerified": True, "source_ref": "tweet"},
    )
    published = datetime(2024, 12, 11, 15, 30, tzinfo=UTC)
    expected = SocialObjectGraph(
        root_ref="tweet:1866000000000000001",
        groups=[
            GraphGroup(
                ref="tweet:1866000000000000001",
                creator=kolguy_account(data={"isBlueVerified": True, "source_ref": "tweet"}),
                content=ContentDraft(
                    platform=Platform.X, subtype="tweet", platform_key="1866000000000000001",
                    url="https://x.com/kolguy/status/1866000000000000001", published_at=published,
                    text=ContentText(primary="gm $PUMP is live https://t.co/xyz #solana @friend"),
                    links=["https://pump.fun/abc"], tags=["solana"],
                    mentions=[Mention(platform_key="1001", screen_name="friend")],
                    metrics=TWEET_METRIC_VALUES,
                    data={"conversationId": "1866000000000000001", "isReply": False, "lang": "en"},
                ),
                parent_ref="tweet:1865000000000000000",
                parent_relation=ParentRelation.QUOTE,
            ),
            GraphGroup(
                ref="tweet:1865000000000000000",
                creator=original_author,
                content=ContentDraft(
                    platform=Platform.X, subtype="tweet", platform_key="1865000000000000000",
                    url="https://x.com/dev_anon/status/1865000000000000000", published_at=published,
                    text=ContentText(primary="launching soon"),
                    links=["https://pump.fun/abc"], tags=["solana"],
                    mentions=[Mention(platform_key="1001", screen_name="friend")],
                    metrics=TWEET_METRIC_VALUES,
                    data={"conversationId": "1865000000000000000", "isReply": False, "lang": "en"},
                ),
            ),
        ],
    )
    assert graph == expected
    call = server.calls("/twitter/tweets")[-1]
    assert call.param("tweet_ids") == "1866000000000000001"
    assert call.headers["x-api-key"] == KEY
    assert "socialrec" in call.headers["user-agent"]


def test_retweet_wins_over_top_level_quote_and_reply_data(fx, gen):
    base = fx.tweets["1865000000000000000"]
    other = xfix.tweet("1864", xfix.user("3003", "third"), text="q")
    rt = xfix.tweet("1867", retweeted=base, quoted=other, isReply=True, inReplyToId="1860",
                    conversationId="1860")
    fx.tweets["1867"] = rt
    graph = gen.generate(routed(SourceType.X_TWEET, "1867"), OPTS, NOW)
    root = next(g for g in graph.groups if g.ref == graph.root_ref)
    assert (root.parent_ref, root.parent_relation) == ("tweet:1865000000000000000", ParentRelation.RETWEET)
    assert root.content.data == {"conversationId": "1860", "isReply": True, "inReplyToId": "1860", "lang": "en"}
    assert {g.ref for g in graph.groups} == {"tweet:1867", "tweet:1865000000000000000"}


def test_quote_chain_is_capped_at_depth_two(fx, gen):
    a = xfix.tweet("1", text="a")
    b = xfix.tweet("2", quoted=a)
    c = xfix.tweet("3", quoted=b)
    d = xfix.tweet("4", quoted=c)
    fx.tweets["4"] = d
    graph = gen.generate(routed(SourceType.X_TWEET, "4"), OPTS, NOW)
    assert [g.ref for g in graph.groups] == ["tweet:4", "tweet:3", "tweet:2"]
    assert graph.groups[-1].parent_ref is None


def test_tweet_url_uses_the_routers_lower_cased_handle(fx, gen):
    fx.tweets["88"] = xfix.tweet("88", xfix.user("9", "KolGuy"))
    assert gen.generate(routed(SourceType.X_TWEET, "88"), OPTS, NOW).groups[0].content.url == (
        "https://x.com/kolguy/status/88")


def test_community_info_on_a_tweet_becomes_its_venue(fx, gen):
    fx.tweets["77"] = xfix.tweet("77", communityInfo={"id": "1790000000000000042", "name": "PUMP holders"})
    graph = gen.generate(routed(SourceType.X_TWEET, "77"), OPTS, NOW)
    assert graph.groups[0].venue == VenueDraft(platform=Platform.X, subtype=VenueSubtype.COMMUNITY,
                                               platform_key="1790000000000000042", name="PUMP holders")


def test_profile_graph_is_exact(fx, gen, server):
    graph = gen.generate(routed(SourceType.X_PROFILE, "kolguy"), OPTS, NOW)
    assert graph == SocialObjectGraph.single(GraphGroup(ref="account:44196397", creator=kolguy_account()))
    assert server.calls("/twitter/user/info")[-1].param("userName") == "kolguy"


def test_community_graph_is_exact(fx, gen, server):
    graph = gen.generate(routed(SourceType.X_COMMUNITY, "1790000000000000042"), OPTS, NOW)
    venue = VenueDraft(
        platform=Platform.X, subtype=VenueSubtype.COMMUNITY, platform_key="1790000000000000042",
        name="PUMP holders", description="official community",
        venue_created_at=datetime(2024, 12, 10, 7, 0, 30, tzinfo=UTC), members=1_234,
        metrics={"member_count": 1_234, "moderator_count": 3},
        data={"join_policy": "Open", "rules": ["No spam"], "adminHandle": "pumpadmin"},
    )
    expected = GraphGroup(ref="community:1790000000000000042", venue=venue,
                          creator=kolguy_account(data={"isBlueVerified": True, "source_ref": "community"}))
    assert graph == SocialObjectGraph.single(expected)
    assert server.calls("/twitter/community/info")[-1].param("community_id") == "1790000000000000042"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Tue Dec 10 07:00:30 +0000 2024", datetime(2024, 12, 10, 7, 0, 30, tzinfo=UTC)),
        ("Tue Dec 10 09:00:30 +0200 2024", datetime(2024, 12, 10, 7, 0, 30, tzinfo=UTC)),
        ("2024-12-10T07:00:30Z", None),
        ("Tue Foo 10 07:00:30 +0000 2024", None),
        (None, None),
    ],
)
def test_legacy_date(text, expected):
    parsed = parse_legacy_date(text)
    assert parsed == expected
    if parsed is not None:
        assert parsed.tzinfo is not None and parsed.utcoffset().total_seconds() == 0


# -- error shapes --------------------------------------------------------------------------------

TWEET, PROFILE, COMMUNITY = (
    (SourceType.X_TWEET, "/twitter/tweets", "1866000000000000001"),
    (SourceType.X_PROFILE, "/twitter/user/info", "kolguy"),
    (SourceType.X_COMMUNITY, "/twitter/community/info", "1790000000000000042"),
)


def test_missing_tweet_is_not_found(fx, gen):
    with pytest.raises(TargetNotFound):
        gen.generate(routed(SourceType.X_TWEET, "999"), OPTS, NOW)


def test_suspended_user(fx, gen):
    with pytest.raises(AccountSuspended):
        gen.generate(routed(SourceType.X_PROFILE, "rugger"), OPTS, NOW)


def test_unavailable_user_that_does_not_exist_is_not_found(fx, gen):
    fx.users["ghost"] = {"userName": "ghost", "unavailable": True, "unavailableReason": "NotFound",
                         "message": "User does not exist"}
    with pytest.raises(TargetNotFound):
        gen.generate(routed(SourceType.X_PROFILE, "ghost"), OPTS, NOW)


@pytest.mark.parametrize("target", [PROFILE, COMMUNITY])
def test_soft_not_found(fx, gen, target):
    with pytest.raises(TargetNotFound):
        gen.generate(routed(target[0], "nobody_here"), OPTS, NOW)


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (Reply.json({"status": "error", "msg": "User is suspended"}), AccountSuspended),
        (Reply.json({"status": "error", "message": "Insufficient credits"}), OutOfCredit),
        (Reply.json({"status": "error", "message": "internal"}), TransientProviderError),
        (Reply.json({"error": "Unauthorized"}, status=401), ProviderKeyRejected),
        (Reply.json({"error": "Forbidden"}, status=403), ProviderKeyRejected),
        (Reply.json({"error": "payment required"}, status=402), OutOfCredit),
        (Reply.json({"error": "too fast"}, status=429), TransientProviderError),
        (Reply.json({"error": "boom"}, status=500), TransientProviderError),
        (Reply.json({"error": "bad gateway"}, status=502), TransientProviderError),
        (Reply.json({"error": "teapot"}, status=418), TransientProviderError),
        (Reply(status=200, body=b'{"tweets": [', headers={"Content-Type": "application/json"}), TransientProviderError),
        (Reply.html("<html><body>Cloudflare</body></html>"), TransientProviderError),
        (Reply.json([1, 2, 3]), TransientProviderError),
    ],
)
@pytest.mark.parametrize("target", [TWEET, PROFILE, COMMUNITY])
def test_error_shapes_map_to_one_status(server, gen, target, reply, error):
    server.clear()
    server.route("GET", target[1], reply)
    with pytest.raises(error):
        gen.generate(routed(target[0], target[2]), OPTS, NOW)


def test_timeout_is_transient(server):
    server.clear()
    server.route("GET", "/twitter/tweets", slow(Reply.json({"tweets": []}), 0.6))
    client = TwitterApiClient(server.url, KEY, timeout=0.15)
    with pytest.raises(TransientProviderError, match="timed out"):
        XGenerator(client).generate(routed(SourceType.X_TWEET, "1"), OPTS, NOW)
    client.close()


def test_connection_refused_is_transient():
    client = TwitterApiClient("http://127.0.0.1:9", KEY, timeout=0.5)
    with pytest.raises(TransientProviderError):
        XGenerator(client).generate(routed(SourceType.X_PROFILE, "kolguy"), OPTS, NOW)


def test_key_never_appears_in_errors_or_repr(server, gen):
    server.clear()
    server.route("GET", "/twitter/user/info", Reply.json({}, status=401))
    with pytest.raises(ProviderKeyRejected) as info:
        gen.generate(routed(SourceType.X_PROFILE, "kolguy"), OPTS, NOW)
    assert "key" in str(info.value) and KEY not in str(info.value)
    assert info.value.setting == "TWITTERAPI_API_KEY" and info.value.status == "unsupported"
    assert KEY not in repr(gen._client)


# -- mutilated payloads: always a typed ProviderError, never KeyError/TypeError ------------------

def _bodies():
    quote = xfix.tweet(quoted=xfix.tweet("5", communityInfo={"id": "9"}))
    yield "/twitter/tweets", SourceType.X_TWEET, "1866000000000000001", {"tweets": [quote], "status": "success"}
    yield "/twitter/user/info", SourceType.X_PROFILE, "kolguy", {"data": xfix.user(), "status": "success"}
    yield "/twitter/community/info", SourceType.X_COMMUNITY, "1", {"community_info": xfix.community("1"),
                                                                    "status": "success"}


def _carried(body) -> Carried:
    """Metrics the root object and its author carry (tests/providers/fidelity.py)."""
    out: Carried = {}
    for item, kind, names in ((next(iter(body.get("tweets") or []), None), ObjectKind.CONTENTS, TWEET_METRICS),
                              (body.get("data"), ObjectKind.ACCOUNTS, USER_METRICS),
                              (body.get("community_info"), ObjectKind.VENUES, COMMUNITY_METRICS)):
        if not isinstance(item, dict):
            continue
        key = key_of(item.get("id")) or (key_of(item.get("community_id")) if kind is ObjectKind.VENUES else None)
        add(out, kind, key, pick(item, names))
        author = item.get("author") if kind is ObjectKind.CONTENTS else item.get("creator")
        if isinstance(author, dict) and kind is not ObjectKind.ACCOUNTS:
            add(out, ObjectKind.ACCOUNTS, key_of(author.get("id")), pick(author, USER_METRICS))
    return out


def test_mutilated_payloads_never_crash(server, gen):
    checked = 0
    for path, source_type, key, answer in _bodies():
        for body in sampled(mutilations(answer)):
            server.clear()
            server.route("GET", path, Reply.json(body))
            try:
                graph = gen.generate(routed(source_type, key), OPTS, NOW)
            except ProviderError:
                continue
            assert isinstance(graph, SocialObjectGraph)
            for group in graph.groups:  # whatever survives still carries keys
                for draft in (group.creator, group.venue):
                    assert draft is None or draft.platform_key
            assert_faithful(graph, "https://x.com/i/status/1", _carried(body))
            checked += 1
    assert checked > 100


@pytest.mark.parametrize("body", [{"status": "success"}, {"tweets": None, "status": "success"}])
def test_tweets_missing_or_null_is_error_never_not_found(server, gen, body):
    """`not_found` is permanent: only a `tweets` list without the id may say the tweet is gone."""
    server.clear()
    server.route("GET", "/twitter/tweets", Reply.json(body))
    with pytest.raises(ProviderError) as info:
        gen.generate(routed(SourceType.X_TWEET, "1866000000000000001"), OPTS, NOW)
    assert info.value.status == "error" and not isinstance(info.value, TargetNotFound)


def test_an_empty_tweets_list_is_not_found(server, gen):
    server.clear()
    server.route("GET", "/twitter/tweets", Reply.json({"tweets": [], "status": "success"}))
    with pytest.raises(TargetNotFound):
        gen.generate(routed(SourceType.X_TWEET, "1866000000000000001"), OPTS, NOW)
