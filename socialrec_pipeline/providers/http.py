"""What every provider client shares: bounded httpx clients and response → error mapping."""

from __future__ import annotations

import functools
import ssl
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import httpx

from socialrec_pipeline.domain.errors import TransientProviderError

USER_AGENT = "socialrec-pipeline/0.1 (+https://github.com/socialrec; token social footprint recorder)"

#: Connect / read / write / pool timeouts for platform APIs. No call may wait longer than this.
DEFAULT_TIMEOUT = httpx.Timeout(10.0, connect=5.0)

#: Bodies larger than this are refused while downloading (an HTML error page is never that big).
MAX_BODY_BYTES = 8 * 1024 * 1024


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One verifying TLS context for every client of the process. Building one reads the CA bundle
    (~25 ms); a run builds a client per provider and step, so they share this one (an
    `SSLContext` is safe to share between clients and threads)."""
    return httpx.create_ssl_context()  # httpx's own defaults (certifi bundle, SSL_CERT_FILE)


def build_client(
    base_url: str,
    *,
    headers: Mapping[str, str] | None = None,
    params: Mapping[str, str] | None = None,
    timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
    transport: httpx.BaseTransport | None = None,
) -> httpx.Client:
    """An httpx client for one provider. Redirects are off: a provider API never needs them, and
    following them blindly is how arbitrary URLs get fetched."""
    return httpx.Client(
        base_url=base_url.rstrip("/"),
        headers={"User-Agent": USER_AGENT, **(headers or {})},
        params=params,
        timeout=timeout,
        follow_redirects=False,
        transport=transport,
        verify=tls_context(),
    )


def send(
    client: httpx.Client, method: str, url: str, *, max_bytes: int = MAX_BODY_BYTES, **kwargs: Any
) -> httpx.Response:
    """Issue one request and read its body, at most `max_bytes` of it; network failures, timeouts
    and oversized bodies become `TransientProviderError`.

    The body is streamed and the download stops at the bound, so a huge or endless answer never
    occupies more than `max_bytes` of memory. The returned response holds the decoded body."""
    try:
        with client.stream(method, url, **kwargs) as streamed:
            body = bytearray()
            for chunk in streamed.iter_bytes():
                body += chunk
                if len(body) > max_bytes:
                    raise TransientProviderError(f"{method} {url}: body over {max_bytes} bytes refused")
    except httpx.TimeoutException as exc:
        raise TransientProviderError(f"{method} {url}: timed out ({exc.__class__.__name__})") from None
    except httpx.HTTPError as exc:
        raise TransientProviderError(f"{method} {url}: {exc.__class__.__name__}: {exc}") from None
    # The body is already decoded: drop the headers that would make httpx decode it again.
    headers = streamed.headers.copy()
    for name in ("content-encoding", "content-length", "transfer-encoding"):
        headers.pop(name, None)
    return httpx.Response(streamed.status_code, headers=headers, content=bytes(body), request=streamed.request)


def json_body(response: httpx.Response) -> Any:
    """The decoded JSON body, or `TransientProviderError` when the body is not JSON."""
    try:
        return response.json()
    except (ValueError, RecursionError):  # RecursionError: nesting deeper than the decoder's stack
        snippet = response.text[:80].replace("\n", " ")
        raise TransientProviderError(
            f"expected JSON from {response.request.url.path}, got {response.headers.get('content-type')!r}: {snippet!r}"
        ) from None


def json_or_none(response: httpx.Response) -> Any:
    """The decoded JSON body of an error answer, or None when it is not JSON (an HTML error page)."""
    try:
        return response.json()
    except (ValueError, RecursionError):
        return None


def raise_for_transient(response: httpx.Response) -> None:
    """5xx and 429 are transient whatever the provider (contracts: common rules)."""
    if response.status_code == 429 or response.status_code >= 500:
        raise TransientProviderError(
            f"{response.request.method} {response.request.url.path}: HTTP {response.status_code}"
        )


def parse_iso(value: Any) -> datetime | None:
    """ISO-8601 (`...Z` or with offset) into aware UTC; None for missing or unparseable values."""
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def parse_epoch_seconds(value: Any) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return datetime.fromtimestamp(float(value), tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def as_int(value: Any) -> int | None:
    """Integers, and integers sent as strings (YouTube statistics); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        digits = value.strip().removeprefix("-")
        # ASCII only: str.isdigit() also accepts superscripts ('²'), which int() refuses.
        if digits.isascii() and digits.isdigit():
            return int(value.strip())
    return None
