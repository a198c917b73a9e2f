"""One message of a public channel's web preview `t.me/s/{name}/{id}` (HTML).

The channel preview lists messages as `<div class="tgme_widget_message" data-post="{name}/{id}">`
blocks, each with the message text (`tgme_widget_message_text`, links as `<a href>`, line breaks
as `<br>`) and its publish time (`<a class="tgme_widget_message_date"><time datetime="…">`).
Only channels with public posts render it; others redirect to `t.me/{name}`, and then the post
row simply has no text or time. Like the page parser, this never raises on junk HTML.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from html.parser import HTMLParser

from socialrec_pipeline.providers.http import parse_iso

_VOID = frozenset({"br", "img", "hr", "meta", "link", "input", "wbr"})


@dataclass
class ChannelMessage:
    text: str | None = None
    published_at: datetime | None = None
    links: list[str] = field(default_factory=list)


class _MessageParser(HTMLParser):
    def __init__(self, post: str) -> None:
        super().__init__(convert_charrefs=True)
        self.post = post.lower()
        self.found = False
        self.message = ChannelMessage()
        self._in_message = 0  # open tags inside the wanted message block (0 = outside)
        self._text_depth = 0  # open tags inside its text block (0 = outside)
        self._parts: list[str] = []
        self._in_date = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        classes = values.get("class", "").split()
        if not self._in_message:
            if "tgme_widget_message" in classes and values.get("data-post", "").lower() == self.post:
                self.found = True
                self._in_message = 1
            return
        if tag not in _VOID:
            self._in_message += 1
        if self._text_depth:
            if tag == "br":
                self._parts.append("\n")
            elif tag not in _VOID:
                self._text_depth += 1
            if tag == "a" and values.get("href", "").startswith(("http://", "https://")):
                href = values["href"]
                if href not in self.message.links:
                    self.message.links.append(href)
            return
        if "tgme_widget_message_text" in classes and self.message.text is None:
            self._text_depth = 1
            self._parts = []
        elif tag == "a" and "tgme_widget_message_date" in classes:
            self._in_date = True
        elif tag == "time" and self._in_date and self.message.published_at is None:
            self.message.published_at = parse_iso(values.get("datetime"))

    def handle_endtag(self, tag: str) -> None:
        if not self._in_message or tag in _VOID:
            return
        self._in_message -= 1
        if tag == "a":
            self._in_date = False
        if self._text_depth:
            self._text_depth -= 1
            if not self._text_depth:
                lines = [" ".join(line.split()) for line in "".join(self._parts).split("\n")]
                self.message.text = "\n".join(lines).strip() or None

    def handle_data(self, data: str) -> None:
        if self._text_depth:
            self._parts.append(data)


def parse_channel_message(html: str, post: str) -> ChannelMessage | None:
    """The message `post` (`name/id`) of a channel preview page, or None when it is not there."""
    parser = _MessageParser(post)
    try:
        parser.feed(html)
        parser.close()
    except Exception:  # noqa: BLE001 — junk HTML: keep what was read before the parser gave up
        pass
    return parser.message if parser.found else None
