"""Apify `run-sync-get-dataset-items`: one client for every paid actor (TikTok, Instagram).

Answer → error mapping (contracts/platform-apis.md "TikTok and Instagram", decisions in
docs/generators.md):

| answer | raised |
| --- | --- |
| any status whose error message contains "usage hard limit exceeded" | `OutOfCredit` |
| 402 (Payment Required), or 403 whose message speaks of usage / credit / payment | `OutOfCredit` |
| 408 (run over 300 s), 429, 5xx, 401, other 403, 404 (actor), any other non-2xx | `TransientProviderError` |
| 2xx that is not a JSON array of objects | `TransientProviderError` |
| 2xx with an empty array (the run found nothing) | `TargetNotFound` |
| 2xx with an error item on ANY position | per `classify_error_item` |

The token travels in the query string (`?token=`) as the contract documents. It is therefore
kept out of every exception message, and a logging filter redacts it from httpx's INFO request
log line, which prints the full URL.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import httpx

from socialrec_pipeline.domain.errors import (
    AccountSuspended,
    OutOfCredit,
    ProviderError,
    ProviderKeyRejected,
    ProviderStop,
    TargetBlocked,
    TargetNotFound,
    TransientProviderError,
)
from socialrec_pipeline.providers.http import build_client, json_body, json_or_none, send

#: Apify answers a synchronous run after at most 300 s (then 408); wait a little longer than that.
APIFY_TIMEOUT = httpx.Timeout(315.0, connect=5.0)

_SPENDING_CAP = "usage hard limit exceeded"
#: 402/403 wording that means "the account cannot pay for this run" (Apify error types/messages).
_CREDIT_WORDS = ("usage", "credit", "payment", "paid actor", "billing", "limit exceeded")

_TOKEN_IN_URL = re.compile(r"(token=)[^&\s\"']+", re.IGNORECASE)


class _RedactTokenFilter(logging.Filter):
    """httpx logs `HTTP Request: POST http://…?token=SECRET …` at INFO; mask the value."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken record is not ours to fix
            return True
        if "token=" in message.lower():
            record.msg = _TOKEN_IN_URL.sub(r"\1***", message)
            record.args = ()
        return True


_FILTER = _RedactTokenFilter()


def _install_log_filter() -> None:
    for name in ("httpx", "httpcore"):
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)


def classify_error_item(message: str) -> ProviderError:
    """Map an actor's error item (`{"error", "errorDescription"}`) to a typed failure.

    "Empty or private data" is what the scrapers say both for deleted and for private targets;
    it is mapped to `TargetNotFound`: the actor saw nothing, privacy that the actor CAN see is
    reported structurally (`authorMeta.privateAccount`, `private: true`) and becomes `blocked`,
    and both outcomes are absorbing, so the choice never costs a paid retry. Unknown messages are
    `error` (retryable) rather than a guess at an absorbing status.
    """
    text = message.lower()
    if _SPENDING_CAP in text:
        return OutOfCredit("Apify: monthly usage hard limit exceeded")
    short = message[:200]
    if "empty or private" in text:
        return TargetNotFound(f"Apify actor: {short}")
    if "suspended" in text or "banned" in text:
        return AccountSuspended(f"Apify actor: {short}")
    if any(
        word in text
        for word in ("not found", "not_found", "does not exist", "doesn't exist", "no longer available", "deleted")
    ):
        return TargetNotFound(f"Apify actor: {short}")
    if any(
        word in text for word in ("private", "restricted", "login required", "age-restricted", "unavailable in your")
    ):
        return TargetBlocked(f"Apify actor: {short}")
    return TransientProviderError(f"Apify actor error item: {short}")


def _error_message(payload: Any) -> str:
    """The human text of an Apify API error body `{"error": {"type", "message"}}` (or a string)."""
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict):
            parts = [error.get("type"), error.get("message")]
            return " ".join(str(p) for p in parts if isinstance(p, str))
        if isinstance(error, str):
            return " ".join(str(p) for p in (error, payload.get("errorDescription")) if isinstance(p, str))
    return ""


class ApifyClient:
    """`ApifyClient(base_url, token)`; `run_actor(actor, run_input) -> list[dict]`."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: httpx.Timeout | float = APIFY_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not token:
            raise ValueError("an Apify token is required")
        self._token = token
        self._client = build_client(base_url, timeout=timeout, transport=transport)
        _install_log_filter()

    def close(self) -> None:
        self._client.close()

    def _redact(self, text: str) -> str:
        return _TOKEN_IN_URL.sub(r"\1***", text).replace(self._token, "***")

    def run_actor(self, actor: str, run_input: dict[str, Any]) -> list[dict[str, Any]]:
        """Dataset items of one synchronous run; raises a `ProviderError` subclass otherwise."""
        path = f"/v2/acts/{actor}/run-sync-get-dataset-items"
        try:
            return self._run(path, run_input)
        except ProviderError as exc:
            # Belt and braces: whatever produced the message, the token never leaves in it.
            clean = self._redact(str(exc))
            if clean != str(exc):
                if isinstance(exc, ProviderStop):
                    raise type(exc)(clean, setting=exc.setting) from None
                raise type(exc)(clean) from None
            raise

    def _run(self, path: str, run_input: dict[str, Any]) -> list[dict[str, Any]]:
        response = send(self._client, "POST", path, params={"token": self._token}, json=run_input)
        status = response.status_code
        if not 200 <= status < 300:
            self._raise_for_status(path, response)
        items = json_body(response)
        if not isinstance(items, list):
            raise TransientProviderError(f"Apify {path}: expected a JSON array, got {type(items).__name__}")
        if not all(isinstance(item, dict) for item in items):
            raise TransientProviderError(f"Apify {path}: dataset item that is not an object")
        # Every item is checked: an actor can return a good item next to an error item.
        for item in items:
            error = item.get("error")
            if error:
                description = item.get("errorDescription")
                message = " ".join(str(p) for p in (error, description) if isinstance(p, (str, int, float)))
                raise classify_error_item(message or "unknown error item")
        if not items:
            raise TargetNotFound(f"Apify {path}: the run returned no dataset items")
        return items

    def _raise_for_status(self, path: str, response: httpx.Response) -> None:
        status = response.status_code
        message = _error_message(json_or_none(response))
        lowered = message.lower()
        # The spending cap wins over whatever HTTP status it came with.
        if _SPENDING_CAP in lowered:
            raise OutOfCredit(f"Apify {path}: HTTP {status}: monthly usage hard limit exceeded")
        if status == 402 or (status == 403 and any(word in lowered for word in _CREDIT_WORDS)):
            raise OutOfCredit(f"Apify {path}: HTTP {status}: {message[:160]}")
        if status == 408:
            raise TransientProviderError(f"Apify {path}: run exceeded the synchronous limit (HTTP 408)")
        if status in (401, 403):  # our token, never the target: fix APIFY_TOKEN (unsupported, no attempt)
            raise ProviderKeyRejected(
                f"Apify {path}: HTTP {status}: token rejected: {message[:160]}", setting="APIFY_TOKEN"
            )
        # 404 (unknown actor) and anything else: our configuration or a glitch, never the target's.
        raise TransientProviderError(f"Apify {path}: HTTP {status}: {message[:160]}")
