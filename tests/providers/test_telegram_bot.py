"""The Telegram Bot API `getChat` enrichment against a loopback stand-in answering in the Bot API's
documented shape (`{ok, result}` / `{ok: false, error_code, description, parameters}`)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from socialrec_pipeline.domain.enums import Platform, VenueSubtype
from socialrec_pipeline.domain.errors import TargetNotFound
from socialrec_pipeline.providers.telegram import TelegramGenerator, TelegramPreviewClient
from socialrec_pipeline.providers.telegram_bot import BotApiFailure, BotChat, TelegramBotClient
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.sandbox.fixture_server import FixtureServer, Reply
from socialrec_pipeline.sandbox.platforms import telegram as tgfix
from tests.providers import NOW, OPTS, make_routed

CHANNEL, INVITE, POST = SourceType.TELEGRAM_CHANNEL, SourceType.TELEGRAM_INVITE, SourceType.TELEGRAM_POST
TOKEN = tgfix.DEMO_BOT_TOKEN


class FakeMonotonic:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def bot_server() -> Iterator[FixtureServer]:
    with FixtureServer() as srv:
        yield srv


@pytest.fixture
def pages(server):
    server.clear()
    tgfix.register(server)
    return server


@pytest.fixture
def bot_api(bot_server):
    bot_server.clear()
    bot_server.reset_log()
    return tgfix.BotApiFixtures().register(bot_server)


@pytest.fixture
def monotonic():
    return FakeMonotonic()


@pytest.fixture
def bot(bot_server, monotonic):
    client = TelegramBotClient(bot_server.url, TOKEN, timeout=2.0, monotonic=monotonic)
    yield client
    client.close()


@pytest.fixture
def gen(server, bot):
    client = TelegramPreviewClient(server.url, timeout=2.0)
    yield TelegramGenerator(client, bot)
    client.close()


def bot_calls(bot_server) -> list:
    return bot_server.calls("/bot")


def test_a_channel_gets_its_numeric_id_and_type_and_keeps_its_name_as_key(pages, bot_api, bot_server, gen):
    venue = gen.generate(make_routed(CHANNEL, "PumpChannel"), OPTS, NOW).groups[0].venue
    assert (venue.platform_key, venue.subtype) == ("pumpchannel", VenueSubtype.CHANNEL)
    assert venue.data == {
        "platform_key_kind": "username", "username": "pumpchannel", "action_button": "View in Telegram",
        "chat_id": -1001234567890, "chat_type": "channel", "bot_api_status": "ok",
    }
    [call] = bot_calls(bot_server)
    assert call.path == f"/bot{TOKEN}/getChat" and call.param("chat_id") == "@pumpchannel"


def test_the_chat_type_decides_the_venue_subtype(pages, bot_api, gen):
    # A supergroup is a group; a page that only shows a title (a shell) is what the Bot API says.
    assert gen.generate(make_routed(CHANNEL, "pumpchat"), OPTS, NOW).groups[0].venue.subtype == VenueSubtype.GROUP
    bot_api.chats["emptyshell"] = tgfix.bot_chat(-1005555555555, "channel", "emptyshell", title="Empty Shell")
    shell = gen.generate(make_routed(CHANNEL, "emptyshell"), OPTS, NOW).groups[0].venue
    assert (shell.subtype, shell.data["chat_id"]) == (VenueSubtype.CHANNEL, -1005555555555)


def test_accounts_get_the_id_too_and_keep_the_page_kind(pages, bot_api, gen):
    bot_api.chats["pumpbuybot"] = {"id": 7000000001, "type": "private", "username": "pumpbuybot",
                                   "first_name": "PUMP Buy Bot"}
    account = gen.generate(make_routed(CHANNEL, "pumpbuybot"), OPTS, NOW).groups[0].creator
    assert (account.platform, account.platform_key) == (Platform.TELEGRAM, "pumpbuybot")
    assert {k: account.data[k] for k in ("account_type", "chat_id", "chat_type", "bot_api_status")} == {
        "account_type": "bot", "chat_id": 7000000001, "chat_type": "private", "bot_api_status": "ok",
    }


def test_chat_not_found_keeps_the_page_and_says_why(pages, bot_api, gen):
    """400 "Bad Request: chat not found" (the Bot API does not see users): the page decides."""
    account = gen.generate(make_routed(CHANNEL, "pumpdev"), OPTS, NOW).groups[0].creator
    assert account.data["account_type"] == "user" and account.data["bot_api_status"] == "chat not found"
    assert "chat_id" not in account.data and "chat_type" not in account.data


def test_429_pauses_the_client_for_retry_after(pages, bot_api, bot_server, gen, monotonic):
    bot_server.fail_with(tgfix.bot_error(429, "Too Many Requests: retry after 30", retry_after=30))
    first = gen.generate(make_routed(CHANNEL, "pumpchannel"), OPTS, NOW).groups[0].venue
    assert first.data["bot_api_status"] == "rate limited (retry after 30 s)" and "chat_id" not in first.data
    assert first.subtype == VenueSubtype.CHANNEL  # the page's own verdict stands

    monotonic.now += 29
    second = gen.generate(make_routed(CHANNEL, "pumpchat"), OPTS, NOW).groups[0].venue
    assert second.data["bot_api_status"] == "rate limited" and len(bot_calls(bot_server)) == 1  # not called

    monotonic.now += 2
    third = gen.generate(make_routed(CHANNEL, "pumpchat"), OPTS, NOW).groups[0].venue
    assert third.data["chat_id"] == -1009876543210 and len(bot_calls(bot_server)) == 2


def test_a_refused_token_is_not_used_again(pages, bot_server, bot, gen):
    """401 "Unauthorized" (a revoked token): no further call for the client's lifetime."""
    bot_server.clear()
    bot_server.reset_log()
    tgfix.BotApiFixtures(token="999:another_bot").register(bot_server)
    for name in ("pumpchannel", "pumpchat"):
        venue = gen.generate(make_routed(CHANNEL, name), OPTS, NOW).groups[0].venue
        assert venue.data["bot_api_status"] == "token refused" and "chat_id" not in venue.data
    assert len(bot_calls(bot_server)) == 1


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (Reply.json({"ok": False, "error_code": 400, "description": "Bad Request: chat not found"}), "chat not found"),
        (tgfix.bot_error(400, "Bad Request: invalid chat_id"), "error 400: Bad Request: invalid chat_id"),
        (Reply.json({"ok": False}, status=200), "error 200"),
        (Reply.json({"ok": True, "result": {"id": "-100123", "type": "channel"}}), "unexpected answer"),
        (Reply.json({"ok": True, "result": {"id": True, "type": "channel"}}), "unexpected answer"),
        (Reply.json({"ok": True, "result": {"id": -100123, "type": "forum"}}), "unexpected answer"),
        (Reply.json({"ok": True, "result": []}), "unexpected answer"),
        (Reply.json([1, 2, 3]), "unexpected answer (HTTP 200)"),
        (Reply.html("<html>bad gateway</html>", status=502), "unexpected answer (HTTP 502)"),
        (Reply(status=200, body=b"\xff\xfe{", headers={"Content-Type": "application/json"}),
         "unexpected answer (HTTP 200)"),
    ],
)
def test_odd_answers_are_reasons_never_exceptions(bot_server, bot, reply, reason):
    bot_server.clear()
    bot_server.route("GET", f"/bot{TOKEN}/getChat", reply)
    assert bot.get_chat("pumpchannel") == BotApiFailure(reason)


def test_network_failure_is_a_reason_without_the_token(caplog, monotonic):
    with FixtureServer() as dead:
        url = dead.url
    bot = TelegramBotClient(url, TOKEN, timeout=1.0, monotonic=monotonic)
    answer = bot.get_chat("pumpchannel")
    bot.close()
    assert isinstance(answer, BotApiFailure) and answer.reason.startswith("unavailable: ")
    assert TOKEN not in answer.reason and TOKEN.split(":")[1] not in answer.reason


def test_the_token_never_reaches_the_logs(pages, bot_api, gen, caplog):
    with caplog.at_level(logging.DEBUG):
        gen.generate(make_routed(CHANNEL, "pumpchannel"), OPTS, NOW)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "getChat" in text  # httpx did log the request line ...
    assert TOKEN.split(":")[1] not in text  # ... with the token masked


def test_no_lookup_without_a_name_or_for_a_name_that_does_not_exist(pages, bot_api, bot_server, gen):
    gen.generate(make_routed(INVITE, "AbCdEf123"), OPTS, NOW)
    with pytest.raises(TargetNotFound):
        gen.generate(make_routed(CHANNEL, "nobody"), OPTS, NOW)
    assert bot_calls(bot_server) == []
    assert isinstance(TelegramBotClient("http://127.0.0.1:9", TOKEN).get_chat("a b"), BotApiFailure)


def test_without_a_token_nothing_is_called_and_nothing_changes(pages, bot_api, bot_server, server):
    client = TelegramPreviewClient(server.url, timeout=2.0)
    venue = TelegramGenerator(client).generate(make_routed(CHANNEL, "pumpchannel"), OPTS, NOW).groups[0].venue
    client.close()
    assert venue.data == {"platform_key_kind": "username", "username": "pumpchannel",
                          "action_button": "View in Telegram"}
    assert bot_calls(bot_server) == []


def test_a_public_post_carries_the_channel_id(pages, bot_api, gen):
    group = gen.generate(make_routed(POST, "pumpchannel/42"), OPTS, NOW).groups[0]
    assert group.venue.data["chat_id"] == -1001234567890 and group.content.platform_key == "pumpchannel/42"


def test_get_chat_reads_the_documented_answer(bot_api, bot):
    assert bot.get_chat("PumpChat") == BotChat(id=-1009876543210, type="supergroup")
    with pytest.raises(ValueError):
        TelegramBotClient("http://127.0.0.1:9", "")
