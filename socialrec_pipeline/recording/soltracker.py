"""SolTracker upstream client (contracts/soltracker-api.md): one token by address, tokens by window.

Every response is validated: a missing required field or a wrong type raises `UpstreamShapeError`,
never an empty result (the earlier system's unverified list format would have failed as a silent
zero). The API key is sent as a header and never appears in any message this module produces.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Protocol

import httpx
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from socialrec_pipeline.domain.events import clean_symbol
from socialrec_pipeline.domain.instants import parse_instant
from socialrec_pipeline.providers.http import (
    ACCEPT_ENCODING,
    USER_AGENT,
    BodyEncodingRefused,
    BodyTooLarge,
    CallDeadline,
    CallTimedOut,
    decoded_response,
    read_body,
    tls_context,
)
from socialrec_pipeline.providers.http import MAX_BODY_BYTES as PROVIDER_MAX_BODY_BYTES

#: SPEC §2.2: no upstream call waits longer than this — the whole call (connect, headers, body),
#: not each network read.
SOLTRACKER_TIMEOUT_S: float = 5.0
#: A cursor chain longer than this is treated as a broken upstream, not followed forever.
MAX_PAGES: int = 10_000
#: Bodies larger than this, as decoded, are refused while downloading and decoding (a page of 200
#: tokens is far smaller): the same bound as the platform clients'.
MAX_BODY_BYTES: int = PROVIDER_MAX_BODY_BYTES

#: The social fields a publisher fills in, in the order they are recorded.
SOCIAL_FIELDS: tuple[str, ...] = ("website", "twitter", "telegram", "discord")


class UpstreamError(Exception):
    """Base class: the upstream could not give a usable answer."""


class UpstreamUnavailable(UpstreamError):
    """5xx, 429, timeout, network failure: transient, try again later."""


class UpstreamConfigError(UpstreamError):
    """401/403 (or a base URL that does not serve the API): an operator must fix configuration."""


class UpstreamShapeError(UpstreamError):
    """The body does not match the contract (not JSON, missing field, wrong type, an answer for
    another address, a body over the size bound). Like `UpstreamConfigError` it is permanent for
    the run that met it: asking again at once gets the same answer."""


def _instant(value: Any) -> datetime | None:
    try:
        return parse_instant(value)
    except ValueError as exc:
        raise ValueError(str(exc)) from None


Instant = Annotated[datetime | None, BeforeValidator(_instant)]


def _symbol(value: Any) -> Any:
    # The event's rule (domain/events.py): a symbol that fails it is dropped, the token stays valid.
    return clean_symbol(value) if isinstance(value, str) else value


Symbol = Annotated[StrictStr | None, BeforeValidator(_symbol)]


class UpstreamToken(BaseModel):
    """One token as the upstream describes it. Social fields are raw publisher text (or None)."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    address: StrictStr = Field(min_length=1)
    total_invested_alpha_finders: StrictInt = Field(alias="totalInvestedAlphaFinders", ge=0)
    symbol: Symbol = None
    name: StrictStr | None = None
    website: StrictStr | None = None
    twitter: StrictStr | None = None
    telegram: StrictStr | None = None
    discord: StrictStr | None = None
    first_flow_timestamp: Instant = Field(default=None, alias="firstFlowTimestamp")
    last_transfer_at: Instant = Field(default=None, alias="lastTransferAt")

    def socials(self) -> list[tuple[str, str | None]]:
        """`(source_field, raw value)` for every social field, in a fixed order."""
        return [(name, getattr(self, name)) for name in SOCIAL_FIELDS]


class TokenPage(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    items: list[UpstreamToken]
    next_cursor: StrictStr | None = Field(alias="nextCursor")


class UpstreamTokens(Protocol):
    """What the recording services need from the upstream (the client or a test double)."""

    def get_token(self, address: str) -> UpstreamToken | None: ...

    def iter_token_pages(
        self, from_: datetime, to: datetime, af_group_ids: Sequence[str], limit: int = 100
    ) -> Iterator[list[UpstreamToken]]: ...


def _iso(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise ValueError("window bounds must be timezone-aware")
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ())) or "body"
    return f"{loc}: {first.get('msg', 'invalid')}"


class SolTrackerClient:
    """`get_token` / `iter_tokens` over httpx with a 5 s whole-call timeout and the `x-api-key` header.

    Each call runs under a `CallDeadline`: whatever the server does (connect slowly, send its
    headers or its body a byte at a time), the call ends within `timeout_s`. Connections are not
    kept alive between calls so that the deadline can cut a connection at any point, headers
    included (a pooled connection is only known once its headers arrived): one connection per
    call, a cost far below the call itself.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout_s: float = SOLTRACKER_TIMEOUT_S,
        transport: httpx.BaseTransport | None = None,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        if not base_url:
            raise UpstreamConfigError("SolTracker base URL is empty: check SOL_TRACKER_BASE_URL")
        if not api_key:
            raise UpstreamConfigError("SolTracker API key is empty: check SOL_TRACKER_API_KEY")
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers={
                "x-api-key": api_key,
                "User-Agent": USER_AGENT,
                "Accept": "application/json",
                "Accept-Encoding": ACCEPT_ENCODING,
            },
            timeout=httpx.Timeout(timeout_s),
            limits=httpx.Limits(max_keepalive_connections=0),
            follow_redirects=False,
            transport=transport,
            verify=tls_context(),
        )
        #: Number of HTTP requests sent (run metadata, tests).
        self.calls = 0
        self.timeout_s = timeout_s
        self.max_body_bytes = max_body_bytes

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> SolTrackerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- calls ---------------------------------------------------------------------------------
    def get_token(self, address: str) -> UpstreamToken | None:
        """The token, or None when the upstream does not know it (404)."""
        path = f"/api/v1/tokens/{address}"
        response = self._get(path, params=None, allow_404=True)
        if response is None:
            return None
        try:
            token = UpstreamToken.model_validate(self._json(response, path))
        except ValidationError as exc:
            raise UpstreamShapeError(f"GET {path}: {_first_error(exc)}") from None
        if token.address != address:
            raise UpstreamShapeError(f"GET {path}: answered for a different address {token.address!r}")
        return token

    def iter_token_pages(
        self, from_: datetime, to: datetime, af_group_ids: Sequence[str], limit: int = 100
    ) -> Iterator[list[UpstreamToken]]:
        """Pages of tokens whose `lastTransferAt` lies in `[from_, to)`, following `nextCursor`."""
        if not 1 <= limit <= 200:
            raise ValueError("limit must be within 1..200")
        path = "/api/v1/tokens"
        params: dict[str, str] = {
            "lastTransferAtFrom": _iso(from_),
            "lastTransferAtTo": _iso(to),
            "limit": str(limit),
        }
        if af_group_ids:
            params["afGroupIds"] = ",".join(af_group_ids)
        seen_cursors: set[str] = set()
        for _ in range(MAX_PAGES):
            response = self._get(path, params=params, allow_404=False)
            assert response is not None
            try:
                page = TokenPage.model_validate(self._json(response, path))
            except ValidationError as exc:
                raise UpstreamShapeError(f"GET {path}: {_first_error(exc)}") from None
            yield list(page.items)
            if page.next_cursor is None:
                return
            if page.next_cursor in seen_cursors:
                raise UpstreamShapeError(f"GET {path}: nextCursor repeats; refusing to loop")
            seen_cursors.add(page.next_cursor)
            params = {**params, "cursor": page.next_cursor}
        raise UpstreamShapeError(f"GET {path}: more than {MAX_PAGES} pages")

    def iter_tokens(
        self, from_: datetime, to: datetime, af_group_ids: Sequence[str], limit: int = 100
    ) -> Iterator[UpstreamToken]:
        for page in self.iter_token_pages(from_, to, af_group_ids, limit):
            yield from page

    # -- internals -----------------------------------------------------------------------------
    def _get(self, path: str, *, params: dict[str, str] | None, allow_404: bool) -> httpx.Response | None:
        self.calls += 1
        with CallDeadline(self.timeout_s) as deadline:
            try:
                response = self._bounded_get(path, params, deadline)
            except (httpx.TimeoutException, CallTimedOut):
                raise UpstreamUnavailable(f"GET {path}: timed out after {self.timeout_s:g} s") from None
            except httpx.HTTPError as exc:
                if deadline.expired:  # the deadline cut the connection under a read
                    raise UpstreamUnavailable(f"GET {path}: timed out after {self.timeout_s:g} s") from None
                raise UpstreamUnavailable(f"GET {path}: {exc.__class__.__name__}") from None
        status = response.status_code
        if status == 404 and allow_404:
            return None
        if status in (401, 403):
            raise UpstreamConfigError(
                f"GET {path}: HTTP {status} from SolTracker: the API key was refused, check SOL_TRACKER_API_KEY"
            )
        if status == 429 or status >= 500:
            raise UpstreamUnavailable(f"GET {path}: HTTP {status}")
        if status == 404:
            raise UpstreamConfigError(f"GET {path}: HTTP 404, check SOL_TRACKER_BASE_URL")
        if status != 200:
            raise UpstreamShapeError(f"GET {path}: unexpected HTTP {status}")
        return response

    def _bounded_get(self, path: str, params: dict[str, str] | None, deadline: CallDeadline) -> httpx.Response:
        """GET with the body streamed, decoded with its output cut at `max_body_bytes`, and the
        whole exchange inside `deadline` (only a 200's body is read: no other answer's body is
        used)."""
        with self._http.stream("GET", path, params=params, extensions=deadline.extensions) as streamed:
            deadline.watch(streamed)
            body = b""
            if streamed.status_code == 200:
                try:
                    body = read_body(streamed, self.max_body_bytes, deadline)
                except BodyTooLarge:
                    raise UpstreamShapeError(f"GET {path}: body over {self.max_body_bytes} bytes refused") from None
                except (BodyEncodingRefused, zlib.error) as exc:
                    raise UpstreamShapeError(f"GET {path}: body cannot be decoded ({exc})") from None
        return decoded_response(streamed, body)

    @staticmethod
    def _json(response: httpx.Response, path: str) -> Any:
        try:
            return response.json()
        except ValueError:
            kind = response.headers.get("content-type", "unknown content type")
            raise UpstreamShapeError(f"GET {path}: body is not JSON ({kind})") from None
