# The page templates copy the markup of the real preview pages line for line; wrapping them
# would change the served HTML, so the line-length rule does not apply to this file.
# ruff: noqa: E501
"""t.me preview-page stand-in: HTML in the shape the public preview pages have (contracts § Telegram).

Page kinds as Telegram serves them: a public channel (count line "N subscribers", "View in
Telegram", and the "Preview channel" context link to `/s/{name}`), a public group ("N members, M
online", "View in Telegram" too), a restricted channel (title and "View in Telegram" only), a user
("Send Message", extra line `@handle`), a bot ("Start Bot", "N monthly users"), a name that does not
exist (og:title "Telegram: Contact @name", no visible title, no photo), an empty shell (title, no
line, no button), a private invite (generic og:title / og:description, the chat's visible title,
its member count, "Join Group") and a private invite's generic page (the generic text and the
button only). `BotApiFixtures` stands in for the Bot API's `getChat` (answers and errors in the
documented `{ok, result | error_code, description, parameters}` shape).
"""

from __future__ import annotations

import copy
from html import escape
from typing import Any

from socialrec_pipeline.sandbox.fixture_server import FixtureServer, Reply, Request


def page(
    title: str,
    description: str,
    *,
    extra: str | None = None,
    buttons: tuple[str, ...] = (),
    name: str = "name",
    context_link: str | None = None,
    page_title: str | None = None,
    photo: bool = True,
) -> str:
    """A preview page: og meta tags, photo, visible title, optional extra line, description,
    optional context link, action buttons. `page_title` defaults to `title`; "" leaves it out."""
    visible = title if page_title is None else page_title
    extra_html = f'<div class="tgme_page_extra">{escape(extra)}</div>' if extra is not None else ""
    title_html = (
        f'<div class="tgme_page_title" dir="auto"><span dir="auto">{escape(visible)}</span></div>' if visible else ""
    )
    photo_html = (
        f'<div class="tgme_page_photo"><a href="tg://resolve?domain={name}">'
        '<img class="tgme_page_photo_image" src="x.jpg"></a></div>'
        if photo
        else ""
    )
    button_html = "".join(
        f'<div class="tgme_page_action"><a class="tgme_action_button_new shine" href="tg://resolve?domain={name}">'
        f"{escape(b)}</a></div>"
        for b in buttons
    )
    context_html = (
        f'<div class="tgme_page_context_link_wrap"><a href="/s/{name}" class="tgme_page_context_link">'
        f"{escape(context_link)}</a></div>"
        if context_link
        else ""
    )
    description_html = (
        f'<div class="tgme_page_description" dir="auto">{escape(description)}</div>' if description else ""
    )
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Telegram: Contact @{escape(name)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<meta property="og:title" content="{escape(title)}">
<meta property="og:image" content="https://cdn4.telesco.pe/file/x.jpg">
<meta property="og:site_name" content="Telegram">
<meta property="og:description" content="{escape(description)}">
<meta property="twitter:title" content="{escape(title)}">
</head><body class="no_transition">
<div class="tgme_page_wrap"><div class="tgme_page">
{photo_html}
{title_html}
{extra_html}
{description_html}
{button_html}
{context_html}
</div></div></body></html>"""


def channel_page(name: str = "pumpchannel", subscribers: str = "12 345 subscribers") -> str:
    return page(
        "PUMP Official",
        "CA: 7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU",
        extra=subscribers,
        buttons=("View in Telegram",),
        context_link="Preview channel",
        name=name,
    )


def group_page(name: str = "pumpchat", extra: str = "1 024 members, 57 online") -> str:
    return page(
        "PUMP Chat",
        "You can view and join @pumpchat right away.",
        extra=extra,
        buttons=("View in Telegram",),
        name=name,
    )


def restricted_channel_page(name: str = "pumprestricted") -> str:
    """A channel whose posts and count are not public: title, description, the button, nothing else."""
    return page("PUMP Restricted", "announcements only", buttons=("View in Telegram",), name=name)


def user_page(name: str = "pumpdev") -> str:
    return page("Pump Dev", "dev of pump", extra=f"@{name}", buttons=("Send Message",), name=name)


def bot_page(name: str = "pumpbuybot", monthly: str = "48 210 monthly users") -> str:
    return page("PUMP Buy Bot", "Buy $PUMP in one tap.", extra=monthly, buttons=("Start Bot",), name=name)


def not_found_page(name: str = "nobody") -> str:
    return page(
        f"Telegram: Contact @{name}",
        f"You can contact @{name} right away.",
        buttons=("Send Message",),
        name=name,
        page_title="",
        photo=False,
    )


def shell_page(name: str = "emptyshell") -> str:
    return page("Empty Shell", "", name=name)


def private_invite_page(code: str = "AbCdEf123") -> str:
    return page(
        "Join group chat on Telegram",
        "You are invited to a group chat on Telegram. Click to join.",
        extra="311 members",
        buttons=("Join Group",),
        name=code,
        page_title="PUMP Insiders",
    )


def generic_invite_page(code: str = "GeNeRiC42", button: str = "Join Group") -> str:
    """A private invite's generic page (contracts § Telegram, issue 22): Telegram's invitation
    text as og:title / og:description, the "Join Group" / "Join Channel" button, and no visible
    title, no photo, no count line. Nothing on it names the chat. (`<title>` and og:image are the
    template's placeholders: the parser reads neither.)"""
    return page(
        "Join group chat on Telegram",
        "You are invited to a group chat on Telegram. Click to join.",
        buttons=(button,),
        name=code,
        page_title="",
        photo=False,
    )


def channel_feed_page(name: str = "pumpchannel", posts: tuple[tuple[int, str, str], ...] = ()) -> str:
    """`t.me/s/{name}/{id}`: the channel's web preview, one widget block per `(id, html text, ISO time)`."""
    blocks = "".join(
        f"""<div class="tgme_widget_message_wrap js-widget_message_wrap"><div class="tgme_widget_message text_not_supported_wrap js-widget_message" data-post="{name}/{post_id}" data-view="x">
<div class="tgme_widget_message_user"><a href="https://t.me/{name}"><i class="tgme_widget_message_user_photo"></i></a></div>
<div class="tgme_widget_message_bubble"><div class="tgme_widget_message_author accent_color"><a class="tgme_widget_message_owner_name" href="https://t.me/{name}"><span dir="auto">PUMP Official</span></a></div>
<div class="tgme_widget_message_text js-message_text" dir="auto">{text}</div>
<div class="tgme_widget_message_footer compact js-message_footer"><div class="tgme_widget_message_info short js-message_info">
<span class="tgme_widget_message_views">1.2K</span><span class="copyonly">views</span>
<span class="tgme_widget_message_meta"><a class="tgme_widget_message_date" href="https://t.me/{name}/{post_id}"><time datetime="{at}" class="time">07:00</time></a></span>
</div></div></div></div></div>"""
        for post_id, text, at in posts
    )
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>PUMP Official – Telegram</title>
<meta property="og:title" content="PUMP Official"><meta property="og:description" content="CA inside"></head>
<body class="widget_frame_base tgme_webpage"><header class="tgme_header"><div class="tgme_header_title">PUMP Official</div></header>
<main class="tgme_main"><section class="tgme_channel_history js-message_history">{blocks}</section></main></body></html>"""


#: The demo channel's post 42, as its web preview shows it (text with a link, a line break, a time).
DEMO_POST = (
    42,
    'gm! CA: 7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU<br/>Chart: <a href="https://dexscreener.com/solana/pump" '
    'target="_blank" rel="noopener">dexscreener.com/solana/pump</a> <i class="emoji" style="">🚀</i>',
    "2024-12-10T07:00:30+00:00",
)


def demo_pages() -> dict[str, str]:
    """Path → HTML for the offline demo and the tests."""
    return {
        "/pumpchannel": channel_page(),
        "/pumpchat": group_page(),
        "/pumprestricted": restricted_channel_page(),
        "/pumpdev": user_page(),
        "/pumpbuybot": bot_page(),
        "/nobody": not_found_page(),
        "/emptyshell": shell_page(),
        "/+AbCdEf123": private_invite_page(),
        "/s/pumpchannel/42": channel_feed_page(
            "pumpchannel",
            (
                (41, "older post", "2024-12-09T10:00:00+00:00"),
                DEMO_POST,
                (43, "newer post", "2024-12-11T10:00:00+00:00"),
            ),
        ),
    }


def register(server: FixtureServer, pages: dict[str, str] | None = None) -> None:
    for path, html in (demo_pages() if pages is None else pages).items():
        server.route("GET", path, Reply.html(html))
    # t.me answers unknown names with the "Contact @name" page, never a 404.
    server.route_prefix("GET", "/", lambda r: Reply.html(not_found_page(r.path.strip("/") or "x")))


# --------------------------------------------------------------------------- Bot API stand-in

#: The stand-in's bot token (the Bot API's `{bot id}:{secret}` shape).
DEMO_BOT_TOKEN = "123456789:AAH-demo_bot_token_for_the_stand_in"


def bot_chat(chat_id: int, chat_type: str, username: str, title: str = "PUMP Official") -> dict[str, Any]:
    """A `ChatFullInfo` as `getChat` returns it for a public channel or supergroup."""
    return {
        "id": chat_id,
        "type": chat_type,
        "title": title,
        "username": username,
        "accent_color_id": 3,
        "max_reaction_count": 11,
        "description": "CA: 7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU",
        "accepted_gift_types": {"unlimited_gifts": False, "limited_gifts": False, "unique_gifts": False,
                                "premium_subscription": False},
    }


def bot_error(code: int, description: str, *, retry_after: int | None = None) -> Reply:
    """An error answer: HTTP status = `error_code`, body `{ok: false, error_code, description,
    parameters?}` (429 carries `parameters.retry_after` in seconds)."""
    body: dict[str, Any] = {"ok": False, "error_code": code, "description": description}
    if retry_after is not None:
        body["parameters"] = {"retry_after": retry_after}
    return Reply.json(body, status=code)


class BotApiFixtures:
    """`GET /bot{token}/getChat?chat_id=@name` → `{ok: true, result: chats[name]}`; an unknown name
    → 400 "Bad Request: chat not found"; another token → 401 "Unauthorized"; another method → 404."""

    def __init__(self, token: str = DEMO_BOT_TOKEN) -> None:
        self.token = token
        self.chats: dict[str, dict[str, Any]] = {
            "pumpchannel": bot_chat(-1001234567890, "channel", "pumpchannel"),
            "pumpchat": bot_chat(-1009876543210, "supergroup", "PumpChat", title="PUMP Chat"),
        }

    def register(self, server: FixtureServer) -> BotApiFixtures:
        server.route_prefix("GET", "/bot", self._answer)
        return self

    def _answer(self, request: Request) -> Reply:
        token, _, method = request.path[len("/bot"):].partition("/")
        if token != self.token:
            return bot_error(401, "Unauthorized")
        if method != "getChat":
            return bot_error(404, "Not Found")
        chat_id = request.param("chat_id") or ""
        found = self.chats.get(chat_id.removeprefix("@").lower()) if chat_id.startswith("@") else None
        if found is None:
            return bot_error(400, "Bad Request: chat not found")
        return Reply.json({"ok": True, "result": copy.deepcopy(found)})
