"""Telegram Bot API `getChat`: the numeric chat id behind a public name (optional enrichment).

`GET {base}/bot{token}/getChat?chat_id=@{name}` answers `{"ok": true, "result": Chat}` with the
chat's numeric `id` (`-100…` for channels and supergroups) and its `type` (`private`, `group`,
`supergroup`, `channel`); an error answers `{"ok": false, "error_code", "description",
"parameters"?}` (contracts § Telegram; Bot API "Making requests"). Only configured with
`TELEGRAM_BOT_TOKEN`; without it nothing is called and nothing changes.

Decisions (docs/decisions.md, "Routing and providers"; docs/telegram.md):
- The public name stays the key (`platform_key`); the id and the type are recorded in `data`
  (`chat_id`, `chat_type`, and `bot_api_status`: "ok" or why not) for a later migration to key
  on. The preview page stays the authority on existence: the Bot API cannot see every chat
  (users, bots and chats it never met answer 400 "chat not found"), so its failures never fail
  the URL. `get_chat` returns a `BotChat` or a `BotApiFailure` saying why not.
- 429 answers carry `parameters.retry_after` (seconds): the client makes no call before that time
  has passed (the lookups meanwhile report `rate limited`), so flood control is never hammered.
- 401 (and 404, the answer to a malformed token) means the token is refused: the client makes no
  further call for its lifetime (one run's steps), rather than one rejected call per URL.
- The token is part of the URL path. It never appears in a failure reason or an exception, and a
  logging filter masks it in httpx's INFO request log line, which prints the full URL.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from socialrec_pipeline.domain.errors import ProviderError
from socialrec_pipeline.providers.http import DEFAULT_TIMEOUT, build_client, json_or_none, send

#: Chat types the Bot API documents.
CHAT_TYPES = frozenset({"private", "group", "supergroup", "channel"})
#: The longest wait a 429 can impose on this client (a bogus `retry_after` never blocks for days).
MAX_RETRY_AFTER_S = 3600
MAX_ANSWER_BYTES = 256 * 1024

_TOKEN_IN_PATH = re.compile(r"(/bot)[^/\s?]+")
_NAME = re.compile(r"^[A-Za-z0-9_]{3,64}$")


class _RedactBotTokenFilter(logging.Filter):
    """httpx logs `HTTP Request: GET https://api.telegram.org/bot<token>/getChat…`; mask the token."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken record is not ours to fix
            return True
        if "/bot" in message:
            record.msg = _TOKEN_IN_PATH.sub(r"\1***", message)
            record.args = ()
        return True


_FILTER = _RedactBotTokenFilter()


def _install_log_filter() -> None:
    for name in ("httpx", "httpcore"):
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)


@dataclass(frozen=True)
class BotChat:
    """What `getChat` says about a chat: its stable numeric id and its type."""

    id: int
    type: str


@dataclass(frozen=True)
class BotApiFailure:
    """Why no chat was read (recorded as `data.bot_api_status`; never contains the token)."""

    reason: str


class TelegramBotClient:
    """`TelegramBotClient(base_url, token)`; `get_chat(name) -> BotChat | BotApiFailure`."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if not token:
            raise ValueError("a Telegram bot token is required; pass no client to skip the Bot API")
        self._token = token
        self._http = build_client(base_url, headers={"Accept": "application/json"}, timeout=timeout,
                                  transport=transport)
        self._monotonic = monotonic
        self._paused_until = 0.0
        self._refused = False
        _install_log_filter()

    def close(self) -> None:
        self._http.close()

    def _redact(self, text: str) -> str:
        return _TOKEN_IN_PATH.sub(r"\1***", text).replace(self._token, "***")

    def get_chat(self, name: str) -> BotChat | BotApiFailure:
        """The chat behind the public `name` (without `@`); never raises for the API's answers."""
        if not _NAME.match(name):
            return BotApiFailure("not a public name")
        if self._refused:
            return BotApiFailure("token refused")
        if self._monotonic() < self._paused_until:
            return BotApiFailure("rate limited")
        try:
            response = send(
                self._http, "GET", f"/bot{self._token}/getChat", params={"chat_id": f"@{name}"},
                max_bytes=MAX_ANSWER_BYTES,
            )
        except ProviderError as exc:
            return BotApiFailure(f"unavailable: {self._redact(str(exc))}"[:200])
        return self._read(response)

    def _read(self, response: httpx.Response) -> BotChat | BotApiFailure:
        payload = json_or_none(response)
        body = payload if isinstance(payload, dict) else {}
        status = response.status_code
        if status == 200 and body.get("ok") is True:
            result = body.get("result")
            chat_id = result.get("id") if isinstance(result, dict) else None
            chat_type = result.get("type") if isinstance(result, dict) else None
            if isinstance(chat_id, int) and not isinstance(chat_id, bool) and chat_type in CHAT_TYPES:
                return BotChat(id=chat_id, type=str(chat_type))
            return BotApiFailure("unexpected answer")
        description = body.get("description")
        detail = self._redact(description)[:120] if isinstance(description, str) else ""
        code = body.get("error_code") if isinstance(body.get("error_code"), int) else status
        if status == 429 or code == 429:
            parameters = body.get("parameters")
            retry_after = parameters.get("retry_after") if isinstance(parameters, dict) else None
            wait = retry_after if isinstance(retry_after, int) and not isinstance(retry_after, bool) else 1
            wait = min(max(wait, 1), MAX_RETRY_AFTER_S)
            self._paused_until = self._monotonic() + wait
            return BotApiFailure(f"rate limited (retry after {wait} s)")
        if status in (401, 404) or code in (401, 404):
            self._refused = True
            return BotApiFailure("token refused")
        if code == 400 and "chat not found" in detail.lower():
            return BotApiFailure("chat not found")
        if body.get("ok") is False:
            return BotApiFailure(f"error {code}: {detail}" if detail else f"error {code}")
        return BotApiFailure(f"unexpected answer (HTTP {status})")


def bot_api_data(answer: BotChat | BotApiFailure) -> dict[str, Any]:
    """The `data` keys one lookup contributes: `chat_id`, `chat_type` and `bot_api_status: "ok"`,
    or only `bot_api_status` with the reason. The status is the last lookup's (it moves forward
    with each observation); an id once read stays, as a chat's id never changes."""
    if isinstance(answer, BotChat):
        return {"chat_id": answer.id, "chat_type": answer.type, "bot_api_status": "ok"}
    return {"bot_api_status": answer.reason}
