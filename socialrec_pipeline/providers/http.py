"""What every provider client shares: bounded httpx clients and response → error mapping."""

from __future__ import annotations

import contextlib
import functools
import socket
import ssl
import threading
import time
import zlib
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
#: The content codings we ask for and can decode with a bound on the output: a server that
#: answers in another one (br, zstd) is refused, never decoded without a bound.
ACCEPT_ENCODING = "gzip, deflate"


class BodyTooLarge(ValueError):
    """The body, as decoded, grew past its bound; what was read so far is dropped."""


class BodyEncodingRefused(ValueError):
    """The body came in a content coding we did not ask for and do not decode."""


class _Inflater:
    """One content coding's decoder whose output is bounded *while* decoding: each compressed
    chunk may produce at most what is left of the bound (plus one byte, to notice the excess),
    so a small compressed body that inflates to gigabytes is refused after `max_bytes`, not after
    it was inflated in memory (httpx decodes a whole network chunk at once: ~64 KiB of gzip can be
    ~64 MiB)."""

    def __init__(self, coding: str) -> None:
        self._coding = coding
        self._zlib: Any = None
        if coding == "gzip":
            self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif coding == "deflate":
            self._zlib = zlib.decompressobj()  # zlib-wrapped; a raw stream is retried below
        elif coding not in ("", "identity"):
            raise BodyEncodingRefused(f"content-encoding {coding!r} refused (we ask for {ACCEPT_ENCODING})")
        self._first = True

    def feed(self, data: bytes, room: int) -> bytes:
        if self._zlib is None:
            return data
        try:
            out = self._zlib.decompress(data, room + 1)
        except zlib.error:
            if not (self._coding == "deflate" and self._first):
                raise
            # "deflate" without its zlib wrapper, as some servers send it (httpx does the same).
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
            out = self._zlib.decompress(data, room + 1)
        self._first = False
        return bytes(out)

    def flush(self) -> bytes:
        return bytes(self._zlib.flush()) if self._zlib is not None else b""


def read_body(streamed: httpx.Response, max_bytes: int, deadline: CallDeadline | None = None) -> bytes:
    """The body of a streamed response, decoded, at most `max_bytes` of it *after* decoding:
    `BodyTooLarge` the moment it grows past that (a compression bomb is refused after `max_bytes`
    of output, never inflated first), `BodyEncodingRefused` for a coding we did not ask for,
    `zlib.error` for a corrupt one. With a `deadline`, a body still arriving when it passes
    raises `CallTimedOut`, however fast each piece comes."""
    if streamed.is_stream_consumed:  # built in memory (a test transport): httpx decoded it already
        content = streamed.content
        if len(content) > max_bytes:
            raise BodyTooLarge(f"body over {max_bytes} bytes refused")
        return content
    coding = streamed.headers.get("content-encoding", "").strip().lower()
    inflater = _Inflater(coding)
    body = bytearray()
    for raw in streamed.iter_raw():
        if deadline is not None:
            deadline.check()
        body += inflater.feed(raw, max_bytes - len(body))
        if len(body) > max_bytes:
            raise BodyTooLarge(f"body over {max_bytes} bytes refused")
    body += inflater.flush()
    if len(body) > max_bytes:
        raise BodyTooLarge(f"body over {max_bytes} bytes refused")
    return bytes(body)


def decoded_response(streamed: httpx.Response, body: bytes) -> httpx.Response:
    """A plain response holding the already decoded `body` (the headers that would make httpx
    decode it again are dropped)."""
    headers = streamed.headers.copy()
    for name in ("content-encoding", "content-length", "transfer-encoding"):
        headers.pop(name, None)
    return httpx.Response(streamed.status_code, headers=headers, content=body, request=streamed.request)


class CallTimedOut(Exception):
    """A call's whole-call deadline passed (connect, headers and body together)."""


class CallDeadline:
    """A bound on a whole HTTP call, not on each network read.

    httpx's timeouts apply to each connect / read / write: a server that sends a byte just
    before every read timeout holds a call for as long as it likes. A `CallDeadline` starts a
    timer; when it fires, it shuts down the call's socket (learnt from httpcore's documented
    `trace` extension when the connection is made, or the response's `network_stream`), which
    ends a read that is waiting at once, and every later step raises `CallTimedOut`. Use:

        with CallDeadline(5.0) as deadline:
            with client.stream("GET", path, extensions=deadline.extensions) as streamed:
                deadline.watch(streamed)
                body = read_body(streamed, max_bytes, deadline)

    and treat an `httpx.HTTPError` raised while `deadline.expired` as the timeout. A connection
    taken from a keep-alive pool is only known once its response headers arrived, so a client
    that needs the headers bounded too keeps no idle connections (`httpx.Limits(
    max_keepalive_connections=0)`).
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._ends_at = time.monotonic() + seconds
        self._socket: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self.extensions: dict[str, Any] = {"trace": self._trace}

    def __enter__(self) -> CallDeadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def check(self) -> None:
        if self.expired or time.monotonic() >= self._ends_at:
            self.expired = True
            raise CallTimedOut(f"the call took longer than {self.seconds:g} s")

    def watch(self, response: httpx.Response) -> None:
        """Learn the socket of a response whose connection came from a pool."""
        self._adopt(response.extensions.get("network_stream"))

    def _trace(self, event: str, info: Mapping[str, Any]) -> None:
        if event in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            self._adopt(info.get("return_value"))

    def _adopt(self, stream: Any) -> None:
        get_extra_info = getattr(stream, "get_extra_info", None)
        sock = get_extra_info("socket") if get_extra_info is not None else None
        if isinstance(sock, socket.socket):
            with self._lock:
                self._socket = sock
            if self.expired:
                self._shutdown()

    def _expire(self) -> None:
        self.expired = True
        self._shutdown()

    def _shutdown(self) -> None:
        with self._lock:
            sock = self._socket
        if sock is None:
            return
        # The plain socket's shutdown, also for a TLS socket: it ends a recv() blocked in another
        # thread without touching the TLS object that thread is using. Already closed: nothing waits.
        with contextlib.suppress(OSError):
            socket.socket.shutdown(sock, socket.SHUT_RDWR)


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
        headers={"User-Agent": USER_AGENT, "Accept-Encoding": ACCEPT_ENCODING, **(headers or {})},
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

    The body is streamed and decoded with its output bounded (`read_body`), so a huge, endless or
    highly compressed answer never occupies more than `max_bytes` of memory. The returned
    response holds the decoded body."""
    try:
        with client.stream(method, url, **kwargs) as streamed:
            body = read_body(streamed, max_bytes)
    except httpx.TimeoutException as exc:
        raise TransientProviderError(f"{method} {url}: timed out ({exc.__class__.__name__})") from None
    except httpx.HTTPError as exc:
        raise TransientProviderError(f"{method} {url}: {exc.__class__.__name__}: {exc}") from None
    except (BodyTooLarge, BodyEncodingRefused, zlib.error) as exc:
        raise TransientProviderError(f"{method} {url}: {exc}") from None
    return decoded_response(streamed, body)


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
