"""Canned urlscan.io search answers in the documented shape, for tests and the offline demo."""

from __future__ import annotations

import copy
from typing import Any

from socialrec_pipeline.sandbox.fixture_server import FixtureServer, Reply, Request

DEMO_API_KEY = "urlscan-demo-key"

_RESULT: dict[str, Any] = {
    "_id": "0195c0de-0000-7000-8000-00000000abcd",
    "page": {
        "domain": "moon.example",
        "apexDomain": "moon.example",
        "server": "cloudflare",
        "ip": "104.21.0.1",
        "asn": "AS13335",
        "country": "US",
        "title": "MOON - the memecoin",
        "domainAgeDays": 3,
    },
    "task": {"time": "2024-12-10T07:05:00.000Z", "url": "https://moon.example/", "visibility": "public"},
}


def search_result(**page_overrides: Any) -> dict[str, Any]:
    result = copy.deepcopy(_RESULT)
    result["page"].update(page_overrides)
    return result


def search_reply(results: list[dict[str, Any]]) -> Reply:
    return Reply.json({"results": results, "total": len(results), "took": 12, "has_more": False})


def register_urlscan(
    server: FixtureServer, *, api_key: str = DEMO_API_KEY, known: dict[str, list[dict[str, Any]]] | None = None
) -> None:
    """`GET /api/v1/search/?q=page.domain:D` answers `known[D]` (default: `moon.example`), else no
    results; a wrong `API-Key` gets 401."""
    table = known if known is not None else {"moon.example": [search_result()]}

    def handler(request: Request) -> Reply:
        if request.headers.get("api-key") != api_key:
            return Reply.json({"message": "Unauthorized", "status": 401}, status=401)
        query = request.param("q") or ""
        domain = query.removeprefix("page.domain:")
        return search_reply(table.get(domain, []))

    server.route("GET", "/api/v1/search/", handler)
