"""A SolTracker stand-in: documented-shape routes on a `FixtureServer`, from an in-memory table.

Used by the tests and by the offline demo. Tokens are plain dicts in the upstream's camelCase
shape (`address`, `symbol`, `website`, ..., `lastTransferAt`, `totalInvestedAlphaFinders`); an
optional `afGroupIds` list on a token lets the list endpoint filter by group.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from socialrec_pipeline.domain.instants import parse_instant
from socialrec_pipeline.sandbox.fixture_server import Faults, FixtureServer, Reply, Request

TOKEN_PATH_PREFIX = "/api/v1/tokens/"
LIST_PATH = "/api/v1/tokens"
ADMIN_PATH = "/sandbox/tokens"
#: A token row with this key set is answered 503 by the one-token route (the demo's stuck token).
FAILING_KEY = "sandboxFailing"


class SolTrackerFixture:
    """`SolTrackerFixture(tokens, api_key="k").install(server)`; then point the client at `server.url`.

    `fail_with(reply, times)` makes the next authorised calls answer `reply` (500, HTML, a wrong
    shape, ...); `failing(...)` does it for a `with` block; `clear_faults()` drops the unused ones.
    """

    def __init__(self, tokens: Iterable[Mapping[str, Any]] = (), *, api_key: str = "test-key") -> None:
        self.api_key = api_key
        self._tokens: dict[str, dict[str, Any]] = {}
        self._faults = Faults()
        self._lock = threading.Lock()
        for token in tokens:
            self.put(token)

    # -- table ---------------------------------------------------------------------------------
    def put(self, token: Mapping[str, Any]) -> None:
        with self._lock:
            self._tokens[str(token["address"])] = dict(token)

    def remove(self, address: str) -> None:
        with self._lock:
            self._tokens.pop(address, None)

    def fail_with(self, reply: Reply, times: int = 1) -> None:
        self._faults.add(reply, times)

    def failing(self, reply: Reply, times: int = 1) -> contextlib.AbstractContextManager[None]:
        return self._faults.injected(reply, times)

    def clear_faults(self) -> int:
        return self._faults.clear()

    def install(self, server: FixtureServer) -> FixtureServer:
        server.route("GET", LIST_PATH, self._list)
        server.route_prefix("GET", TOKEN_PATH_PREFIX, self._one)
        return server

    def install_admin(self, server: FixtureServer) -> FixtureServer:
        """`POST /sandbox/tokens` (a JSON list of token rows, same key): the demo's publish adds the
        tokens of fresh sample events. Not part of the SolTracker contract; the demo only."""
        server.route("POST", ADMIN_PATH, self._add)
        return server

    def _add(self, request: Request) -> Reply:
        if request.headers.get("x-api-key") != self.api_key:
            return Reply.json({"message": "Unauthorized"}, status=401)
        try:
            rows = request.json()
            if not isinstance(rows, list) or not all(
                isinstance(r, dict) and isinstance(r.get("address"), str) for r in rows
            ):
                raise ValueError("expected a list of token rows with an address")
        except ValueError as exc:
            return Reply.json({"message": f"bad request: {exc}"}, status=400)
        for row in rows[:100]:
            self.put(row)
        return Reply.json({"added": min(len(rows), 100)})

    # -- handlers ------------------------------------------------------------------------------
    def _gate(self, request: Request) -> Reply | None:
        if request.headers.get("x-api-key") != self.api_key:
            return Reply.json({"message": "Unauthorized"}, status=401)
        return self._faults.take()

    def _one(self, request: Request) -> Reply:
        refused = self._gate(request)
        if refused is not None:
            return refused
        address = request.path[len(TOKEN_PATH_PREFIX) :]
        with self._lock:
            token = self._tokens.get(address)
        if token is None:
            return Reply.json({"message": "Token not found"}, status=404)
        if token.get(FAILING_KEY):  # the demo's token that never records: an upstream outage for it alone
            return Reply.json({"message": "Service Unavailable"}, status=503)
        return Reply.json(_public(token))

    def _list(self, request: Request) -> Reply:
        refused = self._gate(request)
        if refused is not None:
            return refused
        try:
            start = _bound(request.param("lastTransferAtFrom"))
            end = _bound(request.param("lastTransferAtTo"))
            limit = int(request.param("limit") or 100)
            offset = int(request.param("cursor") or 0)
        except ValueError as exc:
            return Reply.json({"message": f"bad request: {exc}"}, status=400)
        if not 1 <= limit <= 200:
            return Reply.json({"message": "limit must be 1..200"}, status=400)
        groups = {g for g in (request.param("afGroupIds") or "").split(",") if g}
        with self._lock:
            rows = sorted(self._tokens.values(), key=lambda t: (str(t.get("lastTransferAt")), t["address"]))
        selected = []
        for token in rows:
            at = parse_instant(token.get("lastTransferAt"))
            if at is None or (start and at < start) or (end and at >= end):
                continue
            if groups and token.get("afGroupIds") is not None and not groups & set(token["afGroupIds"]):
                continue
            selected.append(_public(token))
        page = selected[offset : offset + limit]
        next_offset = offset + limit
        cursor = str(next_offset) if next_offset < len(selected) else None
        return Reply.json({"items": page, "nextCursor": cursor})


def _bound(value: str | None) -> datetime | None:
    return parse_instant(value) if value else None


def _public(token: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in token.items() if k not in ("afGroupIds", FAILING_KEY)}


def upstream_token(
    address: str,
    *,
    af: int = 6,
    symbol: str | None = "TKN",
    website: str | None = None,
    twitter: str | None = None,
    telegram: str | None = None,
    discord: str | None = None,
    first_flow: str | None = "2026-11-29T21:14:03.512Z",
    last_transfer: str = "2026-11-30T02:00:00Z",
    af_group_ids: list[str] | None = None,
) -> dict[str, Any]:
    """A token row in the documented shape, for tests and the demo."""
    token: dict[str, Any] = {
        "address": address,
        "symbol": symbol,
        "name": symbol,
        "website": website,
        "twitter": twitter,
        "telegram": telegram,
        "discord": discord,
        "firstFlowTimestamp": first_flow,
        "lastTransferAt": last_transfer,
        "totalInvestedAlphaFinders": af,
    }
    if af_group_ids is not None:
        token["afGroupIds"] = af_group_ids
    return token
