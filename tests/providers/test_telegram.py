"""TelegramGenerator against loopback t.me preview pages."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from socialrec_pipeline.domain.enums import Platform, VenueSubtype
from socialrec_pipeline.domain.errors import ProviderError, TargetBlocked, TargetNotFound, TransientProviderError
from socialrec_pipeline.domain.graph import (
    AccountDraft,
    ContentDraft,
    ContentText,
    GraphGroup,
    SocialObjectGraph,
    VenueDraft,
)
from socialrec_pipeline.providers.base import Generator
from socialrec_pipeline.providers.telegram import TelegramGenerator, TelegramPreviewClient, parse_preview
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.sandbox.fixture_server import Reply
from socialrec_pipeline.sandbox.platforms import telegram as tgfix
from tests.conftest import examples
from tests.providers import NOW, OPTS, make_routed, slow
from tests.providers.fidelity import assert_faithful

CHANNEL, INVITE, POST = SourceType.TELEGRAM_CHANNEL, SourceType.TELEGRAM_INVITE, SourceType.TELEGRAM_POST


@pytest.fixture
def fx(server):
    server.clear()
    tgfix.register(server)
    return server


@pytest.fixture
def gen(server):
    client = TelegramPreviewClient(server.url, timeout=2.0)
    yield TelegramGenerator(client)
    client.close()


def venue(key: str, subtype: VenueSubtype, **fields) -> VenueDraft:
    return VenueDraft(platform=Platform.TELEGRAM, subtype=subtype, platform_key=key, **fields)


def test_protocol(gen):
    assert isinstance(gen, Generator) and gen.makes_external_calls
    assert gen.source_types == {CHANNEL, INVITE, POST}


def test_channel_graph_is_exact(fx, gen):
    graph = gen.generate(make_routed(CHANNEL, "pumpchannel"), OPTS, NOW)
    expected = venue(
        "pumpchannel", VenueSubtype.CHANNEL, name="PUMP Official",
        description="CA: 7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU", members=12_345,
        metrics={"subscribers": 12_345},
        data={"platform_key_kind": "username", "username": "pumpchannel", "action_button": "View in Telegram"},
    )
    assert graph == SocialObjectGraph.single(GraphGroup(ref="venue:pumpchannel", venue=expected))
    assert fx.calls()[-1].path == "/pumpchannel"


def test_group_with_stock_description(fx, gen):
    graph = gen.generate(make_routed(CHANNEL, "PumpChat"), OPTS, NOW)
    expected = venue("pumpchat", VenueSubtype.GROUP, name="PUMP Chat", members=1_024,
                     metrics={"members": 1_024, "online": 57},
                     data={"platform_key_kind": "username", "username": "pumpchat",
                           "action_button": "View in Telegram"})
    assert graph == SocialObjectGraph.single(GraphGroup(ref="venue:pumpchat", venue=expected))


def test_shell(fx, gen):
    graph = gen.generate(make_routed(CHANNEL, "emptyshell"), OPTS, NOW)
    assert graph.groups[0].venue == venue("emptyshell", VenueSubtype.SHELL, name="Empty Shell",
                                          data={"platform_key_kind": "username", "username": "emptyshell"})


def test_private_invite(fx, gen):
    graph = gen.generate(make_routed(INVITE, "AbCdEf123"), OPTS, NOW)
    expected = venue("invite:AbCdEf123", VenueSubtype.GROUP, name="PUMP Insiders", members=311,
                     metrics={"members": 311},
                     data={"platform_key_kind": "invite", "invite_code": "AbCdEf123", "action_button": "Join Group"})
    assert graph == SocialObjectGraph.single(GraphGroup(ref="venue:invite:AbCdEf123", venue=expected))
    assert fx.calls()[-1].path == "/+AbCdEf123"


def test_public_post_is_content_in_its_channel(fx, gen):
    graph = gen.generate(make_routed(POST, "pumpchannel/42"), OPTS, NOW)
    group = graph.groups[0]
    assert graph.root_ref == group.ref == "post:pumpchannel/42"
    # Text, publish time and links from the channel's web preview t.me/s/{name}/{id}.
    assert group.content == ContentDraft(
        platform=Platform.TELEGRAM,
        subtype="post",
        platform_key="pumpchannel/42",
        url="https://t.me/pumpchannel/42",
        published_at=datetime(2024, 12, 10, 7, 0, 30, tzinfo=UTC),
        text=ContentText(
            primary="gm! CA: 7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU\nChart: dexscreener.com/solana/pump 🚀"
        ),
        links=["https://dexscreener.com/solana/pump"],
    )
    assert group.venue.platform_key == "pumpchannel" and group.venue.subtype == VenueSubtype.CHANNEL
    assert [c.path for c in fx.calls()][-2:] == ["/pumpchannel", "/s/pumpchannel/42"]


def test_post_links_to_itself_are_not_outbound(fx, gen):
    text = (
        'pinned: <a href="https://telegram.me/PumpChannel/42?single">t.me/pumpchannel/42</a> '
        '<a href="https://t.me/s/pumpchannel/42">here</a> chart <a href="https://dexscreener.com/solana/pump">dex</a>'
    )
    fx.route(
        "GET",
        "/s/pumpchannel/42",
        Reply.html(tgfix.channel_feed_page("pumpchannel", ((42, text, "2024-12-10T07:00:30+00:00"),))),
    )
    content = gen.generate(make_routed(POST, "pumpchannel/42"), OPTS, NOW).groups[0].content
    assert content.links == ["https://dexscreener.com/solana/pump"]
    assert content.text.primary.startswith("pinned: t.me/pumpchannel/42")


def test_post_of_a_bot_name_is_not_found_without_reading_the_feed(fx, gen):
    fx.route(
        "GET", "/moonbot", Reply.html(tgfix.page("Moon Bot", "", extra="1 200 monthly users", buttons=("Start Bot",)))
    )
    with pytest.raises(TargetNotFound):
        gen.generate(make_routed(POST, "moonbot/7"), OPTS, NOW)
    assert "/s/moonbot/7" not in [c.path for c in fx.calls()]


@pytest.mark.parametrize(
    "answer",
    [
        Reply.redirect("https://t.me/pumpchannel"),  # no public posts: t.me/s redirects to the page
        Reply.html(tgfix.channel_feed_page("pumpchannel", ((41, "another post", "2024-12-09T10:00:00+00:00"),))),
        Reply.html(
            "<html><body><div class='tgme_widget_message' data-post='pumpchannel/42'>"
            "<div class='tgme_widget_message_text'>"
        ),
        Reply.json({"error": "boom"}, status=502),
    ],
)
def test_post_without_a_readable_preview_keeps_its_key_only(fx, gen, answer):
    fx.route("GET", "/s/pumpchannel/42", answer)
    content = gen.generate(make_routed(POST, "pumpchannel/42"), OPTS, NOW).groups[0].content
    assert (content.platform_key, content.published_at, content.links) == ("pumpchannel/42", None, [])
    assert content.text.primary is None


@pytest.mark.parametrize(
    ("source_type", "key", "error"),
    [
        (CHANNEL, "nobody", TargetNotFound),
        (CHANNEL, "unknown_name", TargetNotFound),
        (POST, "pumpdev/5", TargetNotFound),  # a user has no public posts
        (POST, "pumpbuybot/5", TargetNotFound),  # nor has a bot
        (POST, "nobody/5", TargetNotFound),
    ],
)
def test_verdicts(fx, gen, source_type, key, error):
    with pytest.raises(error):
        gen.generate(make_routed(source_type, key), OPTS, NOW)


@pytest.mark.parametrize(
    ("source_type", "key", "error"),
    [
        (POST, "c/1234567/89", TargetBlocked),
        (CHANNEL, "a b", TargetNotFound),
        (CHANNEL, None, TargetNotFound),
        (INVITE, "x/../y", TargetNotFound),
        (POST, "pumpchannel/abc", TargetNotFound),
    ],
)
def test_refused_without_a_request(fx, gen, source_type, key, error):
    with pytest.raises(error) as info:
        gen.generate(make_routed(source_type, key), OPTS, NOW)
    assert info.value.external_call_made is False
    assert fx.calls() == []


@pytest.mark.parametrize(
    ("extra", "subtype", "members", "metrics"),
    [
        ("1 234 567 subscribers", VenueSubtype.CHANNEL, 1_234_567, {"subscribers": 1_234_567}),
        ("1\u00a0234 subscribers", VenueSubtype.CHANNEL, 1_234, {"subscribers": 1_234}),
        ("1 subscriber", VenueSubtype.CHANNEL, 1, {"subscribers": 1}),
        ("12 345 members, 1 002 online", VenueSubtype.GROUP, 12_345, {"members": 12_345, "online": 1_002}),
        ("3 members", VenueSubtype.GROUP, 3, {"members": 3}),
        ("many subscribers", VenueSubtype.CHANNEL, None, {}),
    ],
)
def test_extra_line_parsing(server, gen, extra, subtype, members, metrics):
    server.clear()
    server.route("GET", "/abc_chan", Reply.html(tgfix.page("T", "d", extra=extra)))
    got = gen.generate(make_routed(CHANNEL, "abc_chan"), OPTS, NOW).groups[0].venue
    assert (got.subtype, got.members, got.metrics) == (subtype, members, metrics)


@pytest.mark.parametrize(
    ("buttons", "subtype"),
    [
        (("Preview channel",), VenueSubtype.CHANNEL),
        (("Join Channel",), VenueSubtype.CHANNEL),
        (("Join Group",), VenueSubtype.GROUP),
        ((), VenueSubtype.SHELL),
        # Public channels and public groups both show it: the button alone decides nothing.
        (("View in Telegram",), VenueSubtype.SHELL),
    ],
)
def test_button_decides_without_extra_line(server, gen, buttons, subtype):
    server.clear()
    server.route("GET", "/abc_chan", Reply.html(tgfix.page("T", "", buttons=buttons)))
    assert gen.generate(make_routed(CHANNEL, "abc_chan"), OPTS, NOW).groups[0].venue.subtype == subtype


@pytest.mark.parametrize(
    "reply",
    [
        Reply.html("<html>nope</html>", status=404),
        Reply.html("<html>slow down</html>", status=429),
        Reply.html("<html>oops</html>", status=500),
        Reply.html("<html>bad gateway</html>", status=502),
        Reply.redirect("https://t.me/other"),
        Reply.json({"ok": True}),
        Reply.html(""),
        Reply.html("<html><head><title>no og</title></head></html>"),
        Reply(status=200, body=b"\xff\xfe\x00<<<>>>", headers={"Content-Type": "text/html"}),
        Reply.html("x" * (1024 * 1024 + 1)),
    ],
)
def test_broken_pages_are_errors(server, gen, reply):
    server.clear()
    server.route("GET", "/abc_chan", reply)
    with pytest.raises(TransientProviderError):
        gen.generate(make_routed(CHANNEL, "abc_chan"), OPTS, NOW)


def test_timeout_is_transient(server):
    server.clear()
    server.route("GET", "/slow_chan", slow(Reply.html(tgfix.channel_page()), 0.6))
    client = TelegramPreviewClient(server.url, timeout=0.15)
    with pytest.raises(TransientProviderError, match="timed out"):
        TelegramGenerator(client).generate(make_routed(CHANNEL, "slow_chan"), OPTS, NOW)
    client.close()


_JUNK = st.one_of(
    st.text(max_size=300),
    st.lists(
        st.sampled_from(
            [
                "<div class='tgme_page_extra'>",
                "</div>",
                '<a class="tgme_action_button_new">',
                "</a>",
                "<meta ",
                'property="og:title" content="T">',
                '<meta property="og:description" content=',
                "12 345 members",
                "subscribers",
                "Send Message",
                "<!--",
                "<![CDATA[",
                "<script>",
                "</scr",
                "&#xFFFFFFFF;",
                "&",
                "<",
                "Telegram: Contact @x",
                "<div",
                ">",
                "\x00",
            ]
        ),
        max_size=40,
    ).map("".join),
)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(html=_JUNK)
def test_parser_never_raises_on_junk(html):
    page = parse_preview(html)
    assert page.title is None or isinstance(page.title, str)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(html=_JUNK)
def test_generator_only_raises_provider_errors_on_junk(server, gen, html):
    server.clear()
    server.route("GET", "/junk_chan", Reply.html(html))
    try:
        graph = gen.generate(make_routed(CHANNEL, "junk_chan"), OPTS, NOW)
    except ProviderError:
        return
    group = graph.groups[0]
    assert (group.venue or group.creator).platform_key == "junk_chan"
    assert_faithful(graph, "https://t.me/junk_chan")


# -- page kinds as Telegram serves them (contracts § Telegram, issue 13) --------------------------


def account(key: str, **fields) -> AccountDraft:
    return AccountDraft(platform=Platform.TELEGRAM, platform_key=key, **fields)


@pytest.mark.parametrize(
    ("extra", "subtype"),
    [
        ("12 345 subscribers", VenueSubtype.CHANNEL),
        ("1 024 members, 57 online", VenueSubtype.GROUP),
    ],
)
def test_count_line_decides_whatever_the_button(server, gen, extra, subtype):
    server.clear()
    server.route("GET", "/abc_chan", Reply.html(tgfix.page("T", "d", extra=extra, buttons=("View in Telegram",))))
    assert gen.generate(make_routed(CHANNEL, "abc_chan"), OPTS, NOW).groups[0].venue.subtype == subtype


def test_preview_context_link_makes_a_channel_without_a_count_line(server, gen):
    server.clear()
    html = tgfix.page("T", "d", buttons=("View in Telegram",), context_link="Preview channel", name="abc_chan")
    server.route("GET", "/abc_chan", Reply.html(html))
    assert gen.generate(make_routed(CHANNEL, "abc_chan"), OPTS, NOW).groups[0].venue.subtype == VenueSubtype.CHANNEL


def test_restricted_channel_without_count_line_is_never_a_group(fx, gen):
    got = gen.generate(make_routed(CHANNEL, "pumprestricted"), OPTS, NOW).groups[0].venue
    assert got.subtype != VenueSubtype.GROUP
    assert (got.subtype, got.name, got.members, got.metrics) == (VenueSubtype.SHELL, "PUMP Restricted", None, {})
    assert got.data["action_button"] == "View in Telegram"


def test_user_page_is_a_telegram_account(fx, gen):
    graph = gen.generate(make_routed(CHANNEL, "PumpDev"), OPTS, NOW)
    expected = account(
        "pumpdev",
        handle="pumpdev",
        display_name="Pump Dev",
        bio="dev of pump",
        data={
            "platform_key_kind": "username",
            "username": "pumpdev",
            "account_type": "user",
            "action_button": "Send Message",
        },
    )
    assert graph == SocialObjectGraph.single(GraphGroup(ref="account:pumpdev", creator=expected))


def test_bot_page_is_a_telegram_account_with_its_monthly_users(fx, gen):
    graph = gen.generate(make_routed(CHANNEL, "pumpbuybot"), OPTS, NOW)
    expected = account(
        "pumpbuybot",
        handle="pumpbuybot",
        display_name="PUMP Buy Bot",
        bio="Buy $PUMP in one tap.",
        metrics={"monthly_users": 48_210},
        data={
            "platform_key_kind": "username",
            "username": "pumpbuybot",
            "account_type": "bot",
            "action_button": "Start Bot",
        },
    )
    assert graph == SocialObjectGraph.single(GraphGroup(ref="account:pumpbuybot", creator=expected))


def test_bot_without_the_start_button_is_known_by_its_monthly_users(server, gen):
    server.clear()
    server.route("GET", "/abc_bot", Reply.html(tgfix.page("Bot", "", extra="1 203 monthly users", name="abc_bot")))
    creator = gen.generate(make_routed(CHANNEL, "abc_bot"), OPTS, NOW).groups[0].creator
    assert creator.data["account_type"] == "bot" and creator.metrics == {"monthly_users": 1_203}


@pytest.mark.parametrize(
    "html",
    [
        tgfix.not_found_page("ghost_name"),
        tgfix.page("Ghost", "", buttons=("Send Message",), page_title="", photo=False),
        tgfix.page("Ghost", "", page_title="", photo=False),
    ],
)
def test_page_without_title_or_photo_is_not_found(server, gen, html):
    server.clear()
    server.route("GET", "/ghost_name", Reply.html(html))
    with pytest.raises(TargetNotFound):
        gen.generate(make_routed(CHANNEL, "ghost_name"), OPTS, NOW)


def test_invite_generic_title_and_description_are_not_a_name(server, gen):
    server.clear()
    html = tgfix.page(
        "Join group chat on Telegram",
        "You are invited to a group chat on Telegram. Click to join.",
        extra="12 members",
        buttons=("Join Group",),
        page_title="Join group chat on Telegram",
    )
    server.route("GET", "/+ZzYyXx987", Reply.html(html))
    got = gen.generate(make_routed(INVITE, "ZzYyXx987"), OPTS, NOW).groups[0].venue
    assert (got.subtype, got.name, got.description, got.members) == (VenueSubtype.GROUP, None, None, 12)


def test_invite_keeps_the_visible_chat_title(fx, gen):
    got = gen.generate(make_routed(INVITE, "AbCdEf123"), OPTS, NOW).groups[0].venue
    assert (got.name, got.description) == ("PUMP Insiders", None)


def test_invite_to_a_user_is_not_found(server, gen):
    server.clear()
    server.route("GET", "/+AbCdEf999", Reply.html(tgfix.user_page("someone")))
    with pytest.raises(TargetNotFound):
        gen.generate(make_routed(INVITE, "AbCdEf999"), OPTS, NOW)


@pytest.mark.parametrize(
    ("button", "subtype"), [("Join Group", VenueSubtype.GROUP), ("Join Channel", VenueSubtype.CHANNEL)]
)
def test_generic_invite_page_is_a_nameless_invite_venue(server, gen, button, subtype):
    """t.me/+… with Telegram's generic page (no title div, no photo, no count): the invite venue,
    keyed by the invite, the subtype its button says, no name, no description, no count."""
    server.clear()
    server.route("GET", "/+GeNeRiC42", Reply.html(tgfix.generic_invite_page("GeNeRiC42", button)))
    graph = gen.generate(make_routed(INVITE, "GeNeRiC42"), OPTS, NOW)
    expected = venue("invite:GeNeRiC42", subtype,
                     data={"platform_key_kind": "invite", "invite_code": "GeNeRiC42", "action_button": button})
    assert graph == SocialObjectGraph.single(GraphGroup(ref="venue:invite:GeNeRiC42", venue=expected))


def test_send_message_page_without_title_or_photo_stays_not_found_on_an_invite(server, gen):
    server.clear()
    html = tgfix.page("Join group chat on Telegram", "", buttons=("Send Message",), page_title="", photo=False)
    server.route("GET", "/+GeNeRiC43", Reply.html(html))
    with pytest.raises(TargetNotFound):
        gen.generate(make_routed(INVITE, "GeNeRiC43"), OPTS, NOW)
