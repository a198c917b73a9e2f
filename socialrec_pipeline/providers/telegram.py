"""Telegram public preview pages `t.me/{name}` (HTML; contracts/platform-apis.md § Telegram).

Decisions:
- Venue key: the lower-cased public name, with `data.platform_key_kind = "username"` so a later Bot
  API lookup can upgrade it to the numeric chat id. Invite links carry no name: their key is
  `invite:{code}` (the code is case-sensitive and kept as written), `platform_key_kind = "invite"`.
- Kind: "N subscribers" → channel, "N members[, M online]" → group; without that line the action
  button decides (Preview channel / Join Channel → channel, Join Group / View in Telegram → group);
  neither line nor button → `shell`.
- "Send Message" (a user or a bot) → `TargetNotFound`: no channel or group lives at that name, and
  retrying cannot change that. "Telegram: Contact @…" titles → `TargetNotFound` too.
- `t.me/c/…` (router: `telegram_post` keyed `c/…`) → `TargetBlocked` without a request: private
  chats have no preview. A public post `t.me/{name}/{id}` → the channel page's venue plus a
  `contents(post)` row keyed `{name}/{id}` (the post page itself is not fetched: its shape is
  undocumented).
- Non-200 answers, pages without `og:title`, and bodies over 1 MiB → error. The parser is stdlib
  `html.parser` and never raises on junk: whatever it cannot read is simply absent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from html.parser import HTMLParser

import httpx

from socialrec_pipeline.domain.enums import ContentSubtype, Platform, VenueSubtype
from socialrec_pipeline.domain.errors import TargetBlocked, TargetNotFound, TransientProviderError
from socialrec_pipeline.domain.graph import ContentDraft, GraphGroup, SocialObjectGraph, VenueDraft
from socialrec_pipeline.providers.base import GenerateOptions, unexpected_shape_is_error
from socialrec_pipeline.providers.http import DEFAULT_TIMEOUT, build_client, send
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
_CHANNEL_BUTTONS = ("preview channel", "join channel")
_GROUP_BUTTONS = ("join group", "view in telegram")


@dataclass
class PreviewPage:
    title: str | None = None
    description: str | None = None
    extra: str | None = None
    buttons: list[str] = field(default_factory=list)


class _PreviewParser(HTMLParser):
    """Collects og:title/og:description, the `tgme_page_extra` text and action-button texts."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = PreviewPage()
        self._capture: tuple[str, str, list[str]] | None = None  # (tag, what, text parts)
        self._depth = 0

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
        if "tgme_page_extra" in classes and self.page.extra is None:
            self._capture, self._depth = (tag, "extra", []), 0
        elif any(c.startswith("tgme_action_button") for c in classes) and tag in ("a", "button", "div"):
            self._capture, self._depth = (tag, "button", []), 0

    def handle_endtag(self, tag: str) -> None:
        if self._capture is None or tag != self._capture[0]:
            return
        if self._depth:
            self._depth -= 1
            return
        _, what, parts = self._capture
        text = " ".join("".join(parts).split())
        if what == "extra":
            self.page.extra = text
        elif text:
            self.page.buttons.append(text)
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


def preview_venue(page: PreviewPage, platform_key: str, data: dict[str, object]) -> VenueDraft:
    """A parsed preview page → venue, or the verdict the page implies."""
    title = page.title
    if not title:
        raise TransientProviderError("Telegram preview page without og:title")
    if title.startswith("Telegram: Contact @"):
        raise TargetNotFound(f"t.me preview of {platform_key}: {title}")
    buttons = [b.lower() for b in page.buttons]
    if "send message" in buttons:
        raise TargetNotFound(f"t.me preview of {platform_key} is a user or bot, not a channel or group")
    extra = page.extra or ""
    metrics: dict[str, int] = {}
    if (subscribers := _count(_SUBSCRIBERS, extra)) is not None or "subscriber" in extra.lower():
        subtype, members = VenueSubtype.CHANNEL, subscribers
        if subscribers is not None:
            metrics["subscribers"] = subscribers
    elif (count := _count(_MEMBERS, extra)) is not None or "member" in extra.lower():
        subtype, members = VenueSubtype.GROUP, count
        if count is not None:
            metrics["members"] = count
        if (online := _count(_ONLINE, extra)) is not None:
            metrics["online"] = online
    elif any(b in _CHANNEL_BUTTONS for b in buttons):
        subtype, members = VenueSubtype.CHANNEL, None
    elif any(b in _GROUP_BUTTONS for b in buttons):
        subtype, members = VenueSubtype.GROUP, None
    else:
        subtype, members = VenueSubtype.SHELL, None
    if page.buttons:
        data = {**data, "action_button": page.buttons[0]}
    description = page.description
    if description and _STOCK_DESCRIPTION.match(description):
        description = None
    return VenueDraft(
        platform=Platform.TELEGRAM,
        subtype=subtype,
        platform_key=platform_key,
        name=title,
        description=description or None,
        members=members,
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

    def page(self, path: str) -> PreviewPage:
        response = send(self._http, "GET", path, max_bytes=MAX_PAGE_BYTES)
        if response.status_code != 200:
            raise TransientProviderError(f"t.me {path}: HTTP {response.status_code}")
        return parse_preview(response.text)


class TelegramGenerator:
    source_types = frozenset({SourceType.TELEGRAM_CHANNEL, SourceType.TELEGRAM_INVITE, SourceType.TELEGRAM_POST})
    makes_external_calls = True

    def __init__(self, client: TelegramPreviewClient) -> None:
        self._client = client

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
        venue = preview_venue(self._client.page(f"/{key}"), key, {"platform_key_kind": "username", "username": key})
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
        post_key = f"{name.lower()}/{int(message_id)}"
        group.ref = f"post:{post_key}"
        group.content = ContentDraft(
            platform=Platform.TELEGRAM,
            subtype=ContentSubtype.POST,
            platform_key=post_key,
            url=f"https://t.me/{post_key}",
        )
        return SocialObjectGraph.single(group)
