"""Alerts that reach a person: one Slack-compatible webhook, at most one message per subject per hour.

The webhook (`SOCIALREC_ALERT_WEBHOOK_URL`) receives `{"text": ...}` as JSON, the shape Slack's
incoming webhooks, Mattermost, Discord's `/slack` endpoint and Teams workflows accept. Unset: nothing
is sent (and nothing fails). The throttle is a Redis key per subject with a one-hour expiry, taken
before the post and given back when the post fails, so several daemons or sensors never send the
same subject twice in an hour and a failed delivery is tried again on the next evaluation.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass

import httpx
import redis

from socialrec_pipeline.providers.http import USER_AGENT, tls_context

log = logging.getLogger(__name__)

WEBHOOK_ENV = "SOCIALREC_ALERT_WEBHOOK_URL"
UI_BASE_URL_ENV = "SOCIALREC_UI_BASE_URL"
DEFAULT_UI_BASE_URL = "http://127.0.0.1:3000"
THROTTLE_S = 3600
#: A webhook that does not answer within this is given up for this evaluation (tried again later).
TIMEOUT_S = 5.0
#: Chat services cut long messages anyway; a bounded body also bounds what a bad payload can carry.
MAX_TEXT = 3000
#: Redis keys of the throttle: one per subject (hashed: subjects carry addresses and check names).
KEY_PREFIX = "socialrec:alert:"


@dataclass(frozen=True, slots=True)
class AlertSettings:
    webhook_url: str | None
    ui_base_url: str

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> AlertSettings:
        url = (env.get(WEBHOOK_ENV) or "").strip() or None
        if url is not None and not url.startswith(("https://", "http://")):
            raise ValueError(f"{WEBHOOK_ENV} must be an http(s) URL")
        ui = (env.get(UI_BASE_URL_ENV) or "").strip() or DEFAULT_UI_BASE_URL
        return cls(webhook_url=url, ui_base_url=ui.rstrip("/"))

    def run_link(self, run_id: str) -> str:
        return f"{self.ui_base_url}/runs/{run_id}"


class AlertSender:
    """Posts alerts to the webhook; `send` says whether this call delivered one."""

    def __init__(
        self,
        settings: AlertSettings,
        redis_client: redis.Redis,
        *,
        throttle_s: int = THROTTLE_S,
        timeout_s: float = TIMEOUT_S,
        key_prefix: str = KEY_PREFIX,
    ) -> None:
        self._settings = settings
        self._redis = redis_client
        self._throttle_s = throttle_s
        self._timeout_s = timeout_s
        self._key_prefix = key_prefix

    @property
    def enabled(self) -> bool:
        return self._settings.webhook_url is not None

    def throttle_key(self, subject: str) -> str:
        return self._key_prefix + hashlib.sha256(subject.encode()).hexdigest()[:32]

    def send(self, subject: str, text: str) -> bool:
        """Deliver `text` unless the webhook is unset or `subject` was alerted within the hour.

        Raises nothing for a webhook that fails: it is logged, the subject is released, and the
        caller tries again on its next evaluation. A Redis error propagates (the throttle cannot be
        trusted, and a tick that fails loudly is better than a flood)."""
        url = self._settings.webhook_url
        if url is None:
            return False
        key = self.throttle_key(subject)
        if not self._redis.set(key, "1", nx=True, ex=self._throttle_s):
            return False
        body = json.dumps({"text": text[:MAX_TEXT]}).encode()
        try:
            # No redirects: the webhook is the one address we post to.
            with httpx.Client(timeout=self._timeout_s, verify=tls_context(), follow_redirects=False) as http:
                response = http.post(
                    url, content=body, headers={"Content-Type": "application/json", "User-Agent": USER_AGENT}
                )
            response.raise_for_status()
        except httpx.HTTPError as exc:
            self._redis.delete(key)
            log.warning(
                "alert webhook failed (%s); the alert is tried again on the next evaluation", type(exc).__name__
            )
            return False
        return True


def _cut(text: str | None, limit: int = 600) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def failed_run_text(*, job: str, token: str | None, step: str | None, message: str | None, link: str) -> str:
    what = f"`{job}`" + (f" for token `{token}`" if token else "")
    where = f" at step `{step}`" if step else ""
    return f":red_circle: Run failed: {what}{where}: {_cut(message) or 'no message'}\n{link}"


def check_text(*, asset: str, check: str, severity: str, description: str | None, link: str | None) -> str:
    icon = ":red_circle:" if severity == "ERROR" else ":warning:"
    tail = f"\n{link}" if link else ""
    return f"{icon} Check `{asset}` / `{check}` is {severity}: {_cut(description) or 'no description'}{tail}"


def stuck_token_text(*, token: str, symbol: str | None, failures: int, link: str | None) -> str:
    name = f"`{token}`" + (f" ({_cut(symbol, 40)})" if symbol else "")
    tail = f"\nlast failed run: {link}" if link else ""
    return (
        f":warning: Token {name} gave up after {failures} failed run(s): it is relaunched only by a new "
        f"token.flow event or by hand (record_token_job){tail}"
    )
