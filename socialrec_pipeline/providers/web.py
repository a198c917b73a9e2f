"""Websites: a URL-only `contents` row, optionally enriched from urlscan.io.

The site itself is never fetched (SPEC §10: URLs come from anyone). Without a urlscan key the
generator makes no request at all (`makes_external_calls = False`).

Enrichment is optional, so its failure never fails the URL: a 429, 5xx, timeout, bad key or
malformed answer from urlscan still yields the URL-only row, with `data.urlscan_error` naming what
went wrong (the row is status `ok`; the URL itself was recorded correctly). `data.urlscan` holds
the first result's `page` facts, `task_time` and the scan's `uuid`; urlscan's `domainAgeDays` is
deliberately left out because it counts urlscan's own sightings, not the domain's registration age,
and would be misread as such.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from socialrec_pipeline.domain.enums import ContentSubtype, Platform
from socialrec_pipeline.domain.errors import ProviderError, TransientProviderError
from socialrec_pipeline.domain.graph import ContentDraft, GraphGroup, SocialObjectGraph
from socialrec_pipeline.providers.base import GenerateOptions, KeyedClient
from socialrec_pipeline.providers.http import (
    as_int,
    json_body,
    parse_iso,
    raise_for_transient,
    send,
)
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.routing.types import RoutedUrl

#: A plain DNS name with an alphabetic TLD: anything else (an IP literal, characters of urlscan's
#: query syntax) is not queried.
_DOMAIN = re.compile(r"^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$")
_PAGE_FIELDS = ("domain", "apexDomain", "server", "ip", "country", "title")


class UrlscanClient(KeyedClient):
    """`UrlscanClient(base_url, api_key)`; `search_domain(domain) -> list[dict]` (the results)."""

    credential = ("headers", "API-Key")
    missing_key_message = "a urlscan API key is required; pass no client to skip enrichment"

    def search_domain(self, domain: str) -> list[dict[str, Any]]:
        response = send(self._http, "GET", "/api/v1/search/", params={"q": f"page.domain:{domain}"})
        raise_for_transient(response)
        if response.status_code != 200:
            raise TransientProviderError(f"urlscan search: HTTP {response.status_code}")
        body = json_body(response)
        results = body.get("results") if isinstance(body, dict) else None
        if not isinstance(results, list):
            raise TransientProviderError("urlscan search: answer without a results array")
        return [r for r in results if isinstance(r, dict)]


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    """The first result's `page` facts, provider key names kept; `task.time` as aware UTC."""
    page = result.get("page")
    if not isinstance(page, dict):
        raise TransientProviderError("urlscan result without page")
    summary: dict[str, Any] = {k: page[k] for k in _PAGE_FIELDS if isinstance(page.get(k), str) and page[k]}
    asn = page.get("asn")
    if (isinstance(asn, str) and asn) or as_int(asn) is not None:
        summary["asn"] = asn
    task = result.get("task")
    task_time = parse_iso(task.get("time")) if isinstance(task, dict) else None
    if task_time is not None:
        summary["task_time"] = task_time
    # urlscan's `_id` is the scan's uuid (its result page is /result/{uuid}/). Stored as `uuid`:
    # in our documents a name ending in `_id` is always an ObjectId we issued (SPEC §4).
    if isinstance(result.get("_id"), str) and result["_id"]:
        summary["uuid"] = result["_id"]
    return summary


def domain_of(canonical_url: str) -> str | None:
    try:
        host = (urlsplit(canonical_url).hostname or "").lower().rstrip(".")
    except ValueError:
        return None
    return host if _DOMAIN.match(host) else None


class WebGenerator:
    source_types = frozenset({SourceType.WEBSITE})

    def __init__(self, urlscan: UrlscanClient | None = None) -> None:
        self._urlscan = urlscan
        # Accurate per instance: without a key no request ever leaves the process.
        self.makes_external_calls = urlscan is not None

    def generate(self, routed: RoutedUrl, options: GenerateOptions, observed_at: datetime) -> SocialObjectGraph:
        url = routed.canonical_url
        data: dict[str, Any] = {}
        queried = False
        if self._urlscan is not None:
            data, queried = self._enrichment(url)
        content = ContentDraft(platform=Platform.WEB, subtype=ContentSubtype.SITE, platform_key=url, url=url, data=data)
        graph = SocialObjectGraph.single(GraphGroup(ref="root", content=content))
        # A site that urlscan was never asked about was built from its URL alone: no attempt.
        graph.external_call_made = queried
        return graph

    def _enrichment(self, url: str) -> tuple[dict[str, Any], bool]:
        """(data, whether urlscan was asked)."""
        assert self._urlscan is not None
        domain = domain_of(url)
        if domain is None:
            return {"urlscan_error": "not a plain DNS name; not queried"}, False
        try:
            results = self._urlscan.search_domain(domain)
            return {"urlscan": summarize(results[0]) if results else {}}, True
        except ProviderError as exc:
            return {"urlscan_error": str(exc)[:200]}, exc.external_call_made
