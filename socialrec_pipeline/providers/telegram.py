"""Telegram public preview pages `t.me/{name}` (HTML; contracts/platform-apis.md § Telegram).

Decisions:
- Venue key: the lower-cased public name, with `data.platform_key_kind = "username"` so a later Bot
  API lookup can upgrade it to the numeric chat id. Invite links carry no name: their key is
  `invite:{code}` (the code is case-sensitive and kept as written), `platform_key_kind = "invite"`.
- What the page is (`page_kind`, in this order; contracts § Telegram):
  1. og:title "Telegram: Contact @…", or a page with neither a visible title nor a photo (a "Send
     Message" page, or one without a button) → the name does not exist (`TargetNotFound`). A
     "Join Channel" / "Join Group" page is exempt: a private invite's generic page (og:title "Join
     group chat on Telegram", no title div, no photo, no count) is the invite venue, with the
     subtype its button says, no name and no count (docs/telegram_invites.md);
  2. "Start Bot", or an extra line "N monthly users" → a **bot**; "Send Message" (extra line
     `@handle`) → a **user**. Neither is a community venue: both are recorded as what they are, a
     Telegram `accounts` row (SPEC §4: accounts have no subtype; `data.account_type` says `bot` or
     `user`; a bot's monthly users are its metric `monthly_users`). Never a `shell`;
  3. the count line: "N subscribers" → channel, "N members[, M online]" → group;
  4. no count line: the "Preview channel" link (`tgme_page_context_link`, or the web action button,
     href `/s/{name}`) → channel; a private invite's "Join Channel" / "Join Group" → what it says;
  5. anything else → `shell`. "View in Telegram" alone decides nothing: public channels and public
     groups both show it. A group page always shows its member line, so a restricted channel
     without a count line never becomes a group.
- A private invite's og:title / og:description are Telegram's generic invitation text ("Join group
  chat on Telegram", "You are invited to a group chat…"): not a name or a description. The visible
  title and description are read instead, unless they are generic too.
- `t.me/c/…` (router: `telegram_post` keyed `c/…`) → `TargetBlocked` without a request: private
  chats have no preview. A public post `t.me/{name}/{id}` → the channel page's venue plus a
  `contents(post)` row keyed `{name}/{id}`. Its text, publish time and links come from the
  channel's web preview `t.me/s/{name}/{id}` when the channel has public posts
  (providers/telegram_posts.py); otherwise (a redirect, the message absent, a failed request) the
  row has the key alone and the URL is still `ok`.
- With a Bot API client (`TELEGRAM_BOT_TOKEN`, providers/telegram_bot.py), a public name's venue
  or account also gets `data.chat_id` (the numeric id), `data.chat_type` and
  `data.bot_api_status`; a venue's subtype then follows the chat type (`channel` → channel,
  `group` / `supergroup` → group), which also settles a `shell` page. The key stays the
  lower-cased name. Invites have no name to ask about; a failed lookup never fails the URL.
- Non-200 answers, pages without `og:title`, and bodies over 1 MiB → error. The parser is stdlib
  `html.parser` and never raises on junk: whatever it cannot read is simply absent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from html.parser import HTMLParser

import httpx

from socialrec_pipeline.domain.enums import ContentSubtype, Platform, VenueSubtype
from socialrec_pipeline.domain.errors import ProviderError, TargetBlocked, TargetNotFound, TransientProviderError
from socialrec_pipeline.domain.graph import (
    AccountDraft,
    ContentDraft,
    ContentText,
    GraphGroup,
    SocialObjectGraph,
    VenueDraft,
)
from socialrec_pipeline.providers.base import GenerateOptions, unexpected_shape_is_error
from socialrec_pipeline.providers.http import DEFAULT_TIMEOUT, build_client, send
from socialrec_pipeline.providers.payload import outbound_links
from socialrec_pipeline.providers.telegram_bot import BotChat, TelegramBotClient, bot_api_data
from socialrec_pipeline.providers.telegram_posts import ChannelMessage, parse_channel_message
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.routing.types import RoutedUrl

MAX_PAGE_BYTES = 1024 * 1024
_NAME = re.compile(r"^[A-Za-z0-9_]{3,64}$")
_INVITE = re.compile(r"^[A-Za-z0-9_-]{4,64}$")
_STOCK_DESCRIPTION = re.compile(r"^You can (contact|view and join) @\S+ right away\.?$", re.I)
_COUNT = r"(\d[\d\s\u00a0\u202f,.']*)"
_SUBSCRIBERS = re.compile(_COUNT + r"\s*subscribers?", re.I)
_MEMBERS = re.compile(_COUNT + r"\s*members?", re.I)
_ONLINE = re.compile(_COUNT + r"\s*online", re.I)
_MONTHLY_USERS = re.compile(_COUNT + r"\s*monthly users?", re.I)
_GENERIC_TITLE = re.compile(r"^(?:Telegram: )?Join (?:group chat|group|channel)(?: on Telegram)?\.?$", re.I)
_GENERIC_DESCRIPTION = re.compile(r"^You(?: are|['\u2019]ve been| have been) invited to\b", re.I)
_HANDLE_LINE = re.compile(r"^@([A-Za-z0-9_]{3,64})$")


class PageKind(StrEnum):
    CHANNEL = "channel"
    GROUP = "group"
    SHELL = "shell"
    BOT = "bot"
    USER = "user"


@dataclass
class PreviewPage:
    title: str | None = None
    description: str | None = None
    extra: str | None = None
    buttons: list[str] = field(default_factory=list)
    #: The visible title and description blocks (`tgme_page_title`, `tgme_page_description`).
    page_title: str | None = None
    page_description: str | None = None
    has_photo: bool = False
    #: (text, href) of the context link and of every action button.
    links: list[tuple[str, str]] = field(default_factory=list)


_BLOCKS = {"tgme_page_extra": "extra", "tgme_page_title": "page_title", "tgme_page_description": "page_description",
           "tgme_page_context_link": "link"}


class _PreviewParser(HTMLParser):
    """Collects og:title/og:description, the visible title, description and extra line, the photo,
    the context link and the action buttons."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = PreviewPage()
        self._capture: tuple[str, str, list[str]] | None = None  # (tag, what, text parts)
        self._depth = 0
        self._href = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "meta":
            prop, content = values.get("property", ""), values.get("content", "")
            if prop == "og:title" and self.page.title is None:
                self.page.title = content.strip()
            elif prop == "og:description" and self.page.description is None:
                self.page.description = content.strip()
            return
        if self._capture is not None:
            if tag == self._capture[0]:
                self._depth += 1
            return
        classes = values.get("class", "").split()
        if "tgme_page_photo_image" in classes or "tgme_page_photo" in classes:
            self.page.has_photo = True
        block = next((what for cls, what in _BLOCKS.items() if cls in classes), None)
        if block is not None and (block == "link" or getattr(self.page, block) is None):
            self._capture, self._depth, self._href = (tag, block, []), 0, values.get("href", "")
        elif any(c.startswith("tgme_action_button") for c in classes) and tag in ("a", "button", "div"):
            self._capture, self._depth, self._href = (tag, "button", []), 0, values.get("href", "")

    def handle_endtag(self, tag: str) -> None:
        if self._capture is None or tag != self._capture[0]:
            return
        if self._depth:
            self._depth -= 1
            return
        _, what, parts = self._capture
        text = " ".join("".join(parts).split())
        if what in ("extra", "page_title", "page_description"):
            setattr(self.page, what, text)
        elif what == "link":
            self.page.links.append((text, self._href))
        elif text:
            self.page.buttons.append(text)
            self.page.links.append((text, self._href))
        self._capture = None

    def handle_data(self, data: str) -> None:
        if self._capture is not None:
            self._capture[2].append(data)


def parse_preview(html: str) -> PreviewPage:
    parser = _PreviewParser()
    try:
        parser.feed(html)
        parser.close()
    except Exception:  # noqa: BLE001 — junk HTML: keep what was read before the parser gave up
        pass
    return parser.page


def _count(pattern: re.Pattern[str], text: str) -> int | None:
    match = pattern.search(text)
    if match is None:
        return None
    digits = re.sub(r"\D", "", match.group(1))
    return int(digits) if digits else None


def _is_preview_link(text: str, href: str) -> bool:
    """The "Preview channel" link: only channels with public posts have one (`/s/{name}`)."""
    path = href.split("://", 1)[-1]
    return text.lower() == "preview channel" or path.startswith("/s/") or "/s/" in path.split("?", 1)[0][:80]


def page_kind(page: PreviewPage, platform_key: str) -> PageKind:
    """What a preview page shows (module docstring, "What the page is"); raises the verdicts."""
    title = page.title
    if not title:
        raise TransientProviderError("Telegram preview page without og:title")
    buttons = [b.lower() for b in page.buttons]
    invite = "join channel" in buttons or "join group" in buttons
    # A private invite's generic page has no visible title and no photo either: it is still an
    # invite (contracts § Telegram ties "no title, no photo → no such name" to "Send Message").
    if title.startswith("Telegram: Contact @") or not (page.page_title or page.has_photo or invite):
        raise TargetNotFound(f"t.me preview of {platform_key}: no such name")
    extra = page.extra or ""
    if "start bot" in buttons or _MONTHLY_USERS.search(extra):
        return PageKind.BOT
    if "send message" in buttons:
        return PageKind.USER
    if _count(_SUBSCRIBERS, extra) is not None or "subscriber" in extra.lower():
        return PageKind.CHANNEL
    if _count(_MEMBERS, extra) is not None or "member" in extra.lower():
        return PageKind.GROUP
    if any(_is_preview_link(text, href) for text, href in page.links) or "join channel" in buttons:
        return PageKind.CHANNEL
    if "join group" in buttons:
        return PageKind.GROUP
    return PageKind.SHELL


def _name(page: PreviewPage) -> str | None:
    for candidate in (page.title, page.page_title):
        if candidate and not _GENERIC_TITLE.match(candidate) and not candidate.startswith("Telegram: "):
            return candidate
    return None


def _description(page: PreviewPage) -> str | None:
    for candidate in (page.description, page.page_description):
        if candidate and not _STOCK_DESCRIPTION.match(candidate) and not _GENERIC_DESCRIPTION.match(candidate):
            return candidate
    return None


def preview_venue(page: PreviewPage, platform_key: str, data: dict[str, object]) -> VenueDraft:
    """A parsed channel / group / shell page → venue (`preview_object` for any page)."""
    kind = page_kind(page, platform_key)
    if kind in (PageKind.BOT, PageKind.USER):
        raise TargetNotFound(f"t.me preview of {platform_key} is a {kind}, not a channel or group")
    extra = page.extra or ""
    metrics: dict[str, int] = {}
    members: int | None = None
    if kind is PageKind.CHANNEL and (subscribers := _count(_SUBSCRIBERS, extra)) is not None:
        members = metrics["subscribers"] = subscribers
    elif kind is PageKind.GROUP and (count := _count(_MEMBERS, extra)) is not None:
        members = metrics["members"] = count
        if (online := _count(_ONLINE, extra)) is not None:
            metrics["online"] = online
    if page.buttons:
        data = {**data, "action_button": page.buttons[0]}
    return VenueDraft(
        platform=Platform.TELEGRAM,
        subtype=VenueSubtype(kind.value),
        platform_key=platform_key,
        name=_name(page),
        description=_description(page),
        members=members,
        metrics=metrics,
        data=data,
    )


def preview_account(page: PreviewPage, platform_key: str, data: dict[str, object]) -> AccountDraft:
    """A bot's or a user's page → a Telegram account keyed like venues (the lower-cased name)."""
    kind = page_kind(page, platform_key)
    handle_line = _HANDLE_LINE.match(page.extra or "")
    metrics: dict[str, int] = {}
    if kind is PageKind.BOT and (users := _count(_MONTHLY_USERS, page.extra or "")) is not None:
        metrics["monthly_users"] = users
    data = {**data, "account_type": kind.value}
    if page.buttons:
        data["action_button"] = page.buttons[0]
    return AccountDraft(
        platform=Platform.TELEGRAM,
        platform_key=platform_key,
        handle=handle_line.group(1) if handle_line else str(data.get("username") or platform_key),
        display_name=_name(page),
        bio=_description(page),
        metrics=metrics,
        data=data,
    )


class TelegramPreviewClient:
    """Fetches `{base}/{path}` preview pages. No key; redirects are not followed."""

    def __init__(
        self,
        base_url: str = "https://t.me",
        *,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._http = build_client(base_url, headers={"Accept": "text/html"}, timeout=timeout, transport=transport)

    def close(self) -> None:
        self._http.close()

    def html(self, path: str) -> str | None:
        """The page's HTML, or None when it does not answer 200 (a redirect included)."""
        response = send(self._http, "GET", path, max_bytes=MAX_PAGE_BYTES)
        return response.text if response.status_code == 200 else None

    def page(self, path: str) -> PreviewPage:
        response = send(self._http, "GET", path, max_bytes=MAX_PAGE_BYTES)
        if response.status_code != 200:
            raise TransientProviderError(f"t.me {path}: HTTP {response.status_code}")
        return parse_preview(response.text)


#: Bot API chat type → venue subtype (a `private` chat is a user or a bot: an account).
_VENUE_OF_CHAT_TYPE = {"channel": VenueSubtype.CHANNEL, "group": VenueSubtype.GROUP, "supergroup": VenueSubtype.GROUP}


class TelegramGenerator:
    source_types = frozenset({SourceType.TELEGRAM_CHANNEL, SourceType.TELEGRAM_INVITE, SourceType.TELEGRAM_POST})
    makes_external_calls = True

    def __init__(self, client: TelegramPreviewClient, bot: TelegramBotClient | None = None) -> None:
        self._client = client
        #: Optional (`TELEGRAM_BOT_TOKEN`): the numeric chat id and type of public names.
        self._bot = bot

    def generate(self, routed: RoutedUrl, options: GenerateOptions, observed_at: datetime) -> SocialObjectGraph:
        key = (routed.source_key or "").strip().strip("/")
        with unexpected_shape_is_error("t.me", "page"):
            if routed.source_type == SourceType.TELEGRAM_INVITE:
                return self._invite(key.lstrip("+"))
            if routed.source_type == SourceType.TELEGRAM_POST:
                return self._post(key)
            if routed.source_type == SourceType.TELEGRAM_CHANNEL:
                return SocialObjectGraph.single(self._channel_group(key.lstrip("@")))
        raise TransientProviderError(f"TelegramGenerator cannot handle {routed.source_type}", external_call_made=False)

    def _channel_group(self, name: str) -> GraphGroup:
        if not _NAME.match(name):
            raise TargetNotFound(f"{name!r} is not a Telegram public name", external_call_made=False)
        key = name.lower()
        page = self._client.page(f"/{key}")
        data: dict[str, object] = {"platform_key_kind": "username", "username": key}
        kind = page_kind(page, key)  # raises the page's verdict before any Bot API call
        chat = self._bot.get_chat(key) if self._bot is not None else None
        if chat is not None:
            data.update(bot_api_data(chat))
        if kind in (PageKind.BOT, PageKind.USER):
            return GraphGroup(ref=f"account:{key}", creator=preview_account(page, key, data))
        venue = preview_venue(page, key, data)
        if isinstance(chat, BotChat) and chat.type in _VENUE_OF_CHAT_TYPE:
            venue.subtype = _VENUE_OF_CHAT_TYPE[chat.type]  # the Bot API knows; the page may not say
        return GraphGroup(ref=f"venue:{key}", venue=venue)

    def _invite(self, code: str) -> SocialObjectGraph:
        if not _INVITE.match(code):
            raise TargetNotFound(f"{code!r} is not an invite code", external_call_made=False)
        key = f"invite:{code}"
        venue = preview_venue(self._client.page(f"/+{code}"), key, {"platform_key_kind": "invite", "invite_code": code})
        return SocialObjectGraph.single(GraphGroup(ref=f"venue:{key}", venue=venue))

    def _post(self, key: str) -> SocialObjectGraph:
        if key.startswith("c/"):
            raise TargetBlocked(f"t.me/{key} is a private chat without a public preview", external_call_made=False)
        name, _, message_id = key.partition("/")
        if not (message_id.isascii() and message_id.isdigit()):
            raise TargetNotFound(f"{key!r} is not a public post", external_call_made=False)
        group = self._channel_group(name)
        if group.venue is None:  # a bot or a user has no public posts
            raise TargetNotFound(f"t.me/{key}: {name} is not a channel or group")
        post_key = f"{name.lower()}/{int(message_id)}"
        group.ref = f"post:{post_key}"
        message = self._message(post_key)
        group.content = ContentDraft(
            platform=Platform.TELEGRAM,
            subtype=ContentSubtype.POST,
            platform_key=post_key,
            url=f"https://t.me/{post_key}",
            published_at=message.published_at if message else None,
            text=ContentText(primary=message.text if message else None),
            # A message linking its own permalink names no outbound link.
            links=outbound_links(message.links, f"https://t.me/{post_key}") if message else [],
        )
        return SocialObjectGraph.single(group)

    def _message(self, post_key: str) -> ChannelMessage | None:
        try:
            html = self._client.html(f"/s/{post_key}")
        except ProviderError:
            return None  # the venue and the post key are known; the text is a bonus
        return parse_channel_message(html, post_key) if html else None
