"""WebGenerator: URL-only rows, optional urlscan enrichment against a loopback stand-in."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from socialrec_pipeline.providers.base import Generator
from socialrec_pipeline.providers.web import UrlscanClient, WebGenerator
from socialrec_pipeline.routing.source_types import SOURCE_TYPE_TABLE, SourceType
from socialrec_pipeline.routing.types import RoutedUrl
from socialrec_pipeline.sandbox.fixture_server import Reply
from socialrec_pipeline.sandbox.platforms import urlscan as fx
from tests.providers import CLIENT_TIMEOUT_S, NOW, OPTS, SLOW_REPLY_S, slow
from tests.providers.fidelity import assert_faithful

KEY = "urlscan-secret-key"
SITE_URL = "https://moon.example/path"


def routed(url: str) -> RoutedUrl:
    info = SOURCE_TYPE_TABLE[SourceType.WEBSITE]
    return RoutedUrl(url + "/?utm_source=x", url, SourceType.WEBSITE, url, info.object, info.platform, info.subtype)


SITE = routed(SITE_URL)


@pytest.fixture
def keyed(server):
    server.clear()
    fx.register_urlscan(server, api_key=KEY)
    client = UrlscanClient(server.url, KEY, timeout=CLIENT_TIMEOUT_S)
    yield WebGenerator(client)
    client.close()


def _content(url: str, data: dict) -> dict:
    return {
        "platform": "web",
        "subtype": "site",
        "platform_key": url,
        "url": url,
        "published_at": None,
        "text": {"primary": None, "body": None, "from_media": None},
        "links": [],
        "tags": [],
        "mentions": [],
        "metrics": {},
        "data": data,
    }


def test_without_key_url_only_and_zero_requests(server):
    server.clear()
    fx.register_urlscan(server, api_key=KEY)
    gen = WebGenerator()
    assert isinstance(gen, Generator)
    assert gen.makes_external_calls is False
    graph = gen.generate(SITE, OPTS, NOW)
    assert graph.model_dump() == {
        "root_ref": "root",
        "groups": [
            {"ref": "root", "parent_ref": None, "parent_relation": None, "creator": None, "venue": None,
             "content": _content(SITE_URL, {})}
        ],
    }
    assert server.requests == []


def test_keyed_enrichment_exact(server, keyed):
    assert keyed.makes_external_calls is True
    graph = keyed.generate(SITE, OPTS, NOW)
    assert graph.groups[0].content.model_dump() == _content(
        SITE_URL,
        {
            "urlscan": {
                "domain": "moon.example",
                "apexDomain": "moon.example",
                "server": "cloudflare",
                "ip": "104.21.0.1",
                "country": "US",
                "title": "MOON - the memecoin",
                "asn": "AS13335",
                "task_time": datetime(2024, 12, 10, 7, 5, tzinfo=UTC),
                # urlscan's `_id` under urlscan's own name for a scan: a stored name ending in
                # `_id` is always an ObjectId we issued (SPEC §4), and this one is a uuid string
                "uuid": "0195c0de-0000-7000-8000-00000000abcd",
                # no domainAgeDays: urlscan's own sighting age, not registration age
            }
        },
    )
    (call,) = server.requests
    assert call.path == "/api/v1/search/"
    assert call.param("q") == "page.domain:moon.example"
    assert call.headers["api-key"] == KEY
    assert call.headers["user-agent"].startswith("socialrec-pipeline/")


def test_never_seen_domain(server, keyed):
    data = keyed.generate(routed("https://fresh.example"), OPTS, NOW).groups[0].content.data
    assert data == {"urlscan": {}}


FAILURES = {
    "rate_limited_429": Reply.json({"message": "Rate limit exceeded", "status": 429}, status=429),
    "server_500": Reply.json({"message": "boom"}, status=500),
    "bad_key_401": Reply.json({"message": "Unauthorized"}, status=401),
    "malformed_json": Reply(status=200, body=b'{"results": [', headers={"Content-Type": "application/json"}),
    "html": Reply.html("<html>cloudflare</html>"),
    "results_not_list": Reply.json({"results": None}),
    "page_missing": Reply.json({"results": [{"task": {}}]}),
    "page_not_object": Reply.json({"results": [{"page": "x"}]}),
    "timeout": slow(fx.search_reply([fx.search_result()]), SLOW_REPLY_S),
}


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_failed_enrichment_keeps_url_only_row(server, keyed, case):
    server.clear()
    server.route("GET", "/api/v1/search/", FAILURES[case])
    content = keyed.generate(SITE, OPTS, NOW).groups[0].content
    assert content.platform_key == SITE_URL and content.url == SITE_URL
    assert set(content.data) == {"urlscan_error"}
    assert KEY not in content.data["urlscan_error"]


def test_odd_host_is_not_sent_to_urlscan(server, keyed):
    data = keyed.generate(routed("https://127.0.0.1:8080/x"), OPTS, NOW).groups[0].content.data
    assert "urlscan_error" in data
    assert server.requests == []


def test_mistyped_fields_are_dropped(server, keyed):
    server.clear()
    server.route("GET", "/api/v1/search/", fx.search_reply([fx.search_result(ip=5, asn=None, title="")]))
    summary = keyed.generate(SITE, OPTS, NOW).groups[0].content.data["urlscan"]
    assert "ip" not in summary and "asn" not in summary and "title" not in summary


def test_empty_key_is_refused():
    with pytest.raises(ValueError):
        UrlscanClient("http://127.0.0.1:9", "")


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(page=st.dictionaries(st.sampled_from(sorted(fx.search_result()["page"])), _json, max_size=4), task=_json)
def test_hypothesis_results_never_fail_the_url(server, keyed, page, task):
    result = fx.search_result(**page)
    result["task"] = task
    server.route("GET", "/api/v1/search/", fx.search_reply([result]))
    graph = keyed.generate(SITE, OPTS, NOW)
    assert graph.groups[0].content.platform_key == SITE_URL
    assert_faithful(graph, SITE_URL)
