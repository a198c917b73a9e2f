"""ShortLinkResolver guards and ShortLinkGenerator delegation, against loopback fixture servers.

The resolver insists on real platform hostnames; `ForwardToServer` carries its sockets to the
fixture server while its host checks still see `t.co`, and `resolve_host` is faked so the DNS guard
sees public addresses (or, in the SSRF cases, private ones).
"""

from __future__ import annotations

import httpx
import pytest

from socialrec_pipeline.domain.enums import FetchStatus
from socialrec_pipeline.domain.errors import TargetBlocked, TargetNotFound, TransientProviderError
from socialrec_pipeline.providers.base import GenerateOptions, Generator, GeneratorRegistry
from socialrec_pipeline.providers.shortlinks import (
    ShortLinkGenerator,
    ShortLinkResolver,
    TargetGated,
    is_platform_host,
    is_public_address,
)
from socialrec_pipeline.providers.web import WebGenerator
from socialrec_pipeline.providers.x import TwitterApiClient, XGenerator
from socialrec_pipeline.routing.route import route
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.sandbox.fixture_server import Reply
from socialrec_pipeline.sandbox.platforms import x as xfix
from socialrec_pipeline.sandbox.shortlinks import ForwardToServer
from tests.providers import NOW, OPTS, make_routed, slow

TWEET_URL = "https://x.com/KolGuy/status/1866000000000000001"
PUBLIC = ["104.244.42.1"]


@pytest.fixture
def fx(server):
    server.clear()
    return xfix.demo_fixtures().register(server, prefix="/api")


@pytest.fixture
def transport(server):
    forward = ForwardToServer(server.url)
    yield forward
    forward.close()


def make_resolver(transport, resolve_host=lambda host, port: PUBLIC, **kwargs) -> ShortLinkResolver:
    return ShortLinkResolver(resolve_host=resolve_host, transport=transport, timeout=2.0, **kwargs)


@pytest.fixture
def gen(server, transport):
    client = TwitterApiClient(server.url + "/api", "k", timeout=2.0)
    resolver = make_resolver(transport)
    yield ShortLinkGenerator(resolver, route, GeneratorRegistry([XGenerator(client)]))
    resolver.close()
    client.close()


def t_co(code: str):
    return make_routed(SourceType.X_SHORTLINK, code, f"https://t.co/{code}")


def test_protocol(gen):
    assert isinstance(gen, Generator) and gen.makes_external_calls
    assert gen.source_types == {SourceType.X_SHORTLINK, SourceType.TIKTOK_SHORTLINK,
                                SourceType.REDDIT_SHARE}


def test_t_co_to_tweet_delegates_and_sets_the_resolved_canonical_url(fx, gen, server, transport):
    server.route("GET", "/abc", Reply.redirect(TWEET_URL, 301))
    graph = gen.generate(t_co("abc"), OPTS, NOW)
    root = next(g for g in graph.groups if g.ref == graph.root_ref)
    assert root.content.platform_key == "1866000000000000001"
    assert root.content.url == route(TWEET_URL).canonical_url == "https://x.com/kolguy/status/1866000000000000001"
    assert [g.parent_relation for g in graph.groups] == ["quote", None]  # the delegate's graph, intact
    # Only the short link was requested (with its real Host); the tweet page itself never was.
    assert transport.forwarded == [("t.co", "/abc")]
    assert server.calls("/api/twitter/tweets")[-1].param("tweet_ids") == "1866000000000000001"


def test_several_hops_and_relative_locations(fx, gen, server, transport):
    server.route("GET", "/one", Reply.redirect("https://t.co/two", 302))
    server.route("GET", "/two", Reply.redirect("/three", 307))
    server.route("GET", "/three", Reply.redirect(TWEET_URL, 301))
    graph = gen.generate(t_co("one"), OPTS, NOW)
    assert graph.root_ref == "tweet:1866000000000000001"
    assert transport.forwarded == [("t.co", "/one"), ("t.co", "/two"), ("t.co", "/three")]


@pytest.mark.parametrize("location", [
    "http://2130706433/",
    "https://user:pw@x.com/kolguy/status/1",
    "file:///etc/passwd",
    "gopher://t.co/x",
])
def test_redirects_that_do_not_route_are_refused(fx, gen, server, transport, location):
    # Not a routable target, so not final: the guards judge it as a hop to request, and refuse it.
    server.route("GET", "/bad", Reply.redirect(location, 302))
    with pytest.raises(TargetBlocked):
        gen.generate(t_co("bad"), OPTS, NOW)
    assert transport.forwarded == [("t.co", "/bad")]  # the refused hop was never requested


class OnlyShortLinkHosts(httpx.BaseTransport):
    """Fails the test on any request whose Host is not a short-link host; forwards the rest."""

    def __init__(self, inner: ForwardToServer) -> None:
        self.inner = inner
        self.refused: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        host = request.headers.get("host", "")
        if host not in {"t.co", "vm.tiktok.com"}:
            self.refused.append(str(request.url))
            raise AssertionError(f"request to {host} ({request.url}) must never be made")
        return self.inner.handle_request(request)


@pytest.fixture
def web_gen(server, transport):
    guarded = OnlyShortLinkHosts(transport)
    resolver = make_resolver(guarded)
    client = TwitterApiClient(server.url + "/api", "k", timeout=2.0)
    yield ShortLinkGenerator(resolver, route, GeneratorRegistry([XGenerator(client), WebGenerator()]))
    resolver.close()
    client.close()
    assert guarded.refused == []


def test_t_co_to_an_ordinary_website_is_a_url_only_web_row_without_fetching_it(fx, web_gen, server, transport):
    server.route("GET", "/site", Reply.redirect("https://someproject.xyz/", 301))
    server.route("GET", "/", Reply.html("the website itself"))
    graph = web_gen.generate(t_co("site"), OPTS, NOW)
    root = next(g for g in graph.groups if g.ref == graph.root_ref)
    assert (root.content.platform, root.content.subtype) == ("web", "site")
    assert root.content.url == root.content.platform_key == "https://someproject.xyz"
    assert transport.forwarded == [("t.co", "/site")]  # the website host received nothing
    assert [c.path for c in server.calls()] == ["/site"]


@pytest.mark.parametrize(("location", "canonical"), [
    ("http://127.0.0.1/", "https://127.0.0.1"),
    ("http://169.254.169.254/latest/meta-data/", "https://169.254.169.254/latest/meta-data"),
    ("http://[::1]/", "https://[::1]"),
    ("http://[::ffff:127.0.0.1]/", "https://[::ffff:7f00:1]"),
    ("https://evil.example/", "https://evil.example"),
    ("https://x.com.evil.example/status/1", "https://x.com.evil.example/status/1"),
    ("https://t.co:8443/x", "https://t.co:8443/x"),
])
def test_redirect_to_a_target_routed_as_website_is_recorded_unfetched(fx, web_gen, server, transport,
                                                                      location, canonical):
    # IP literals, link-local metadata addresses and odd ports route as `website`: like the same
    # URL written in the `website` field, they become a URL-only row, and are never requested.
    server.route("GET", "/ssrf", Reply.redirect(location, 302))
    graph = web_gen.generate(t_co("ssrf"), OPTS, NOW)
    (group,) = graph.groups
    assert (group.content.platform, group.content.subtype, group.content.url) == ("web", "site", canonical)
    assert transport.forwarded == [("t.co", "/ssrf")]
    assert [c.path for c in server.calls()] == ["/ssrf"]


def test_resolver_returns_a_final_ip_literal_location_without_requesting_it(server, transport):
    server.clear()
    server.route("GET", "/abc", Reply.redirect("http://169.254.169.254/latest/meta-data/", 302))
    guarded = OnlyShortLinkHosts(transport)
    resolver = make_resolver(guarded)
    try:
        resolved = resolver.resolve("https://t.co/abc", is_final=lambda url: not url.startswith("https://t.co/"))
    finally:
        resolver.close()
    assert resolved == "http://169.254.169.254/latest/meta-data/"
    assert guarded.refused == [] and transport.forwarded == [("t.co", "/abc")]


def test_a_hop_that_is_still_a_short_link_keeps_every_guard(server, transport):
    # Not final (still a short link), so it is requested: scheme, host and DNS guards all apply.
    server.clear()
    server.route("GET", "/abc", Reply.redirect("https://vm.tiktok.com/ZM1", 302))
    resolver = make_resolver(
        transport, resolve_host=lambda host, port: PUBLIC if host == "t.co" else ["169.254.169.254"]
    )
    try:
        with pytest.raises(TargetBlocked, match="non-public"):
            resolver.resolve("https://t.co/abc", is_final=lambda url: "tiktok" not in url and "t.co" not in url)
    finally:
        resolver.close()
    assert transport.forwarded == [("t.co", "/abc")]


def test_short_link_to_a_website_ends_with_both_urls_on_one_row(fx, web_gen, server, fresh_db):
    from socialrec_pipeline.recording.writer import GraphWriter
    from socialrec_pipeline.store import Store

    store = Store(fresh_db)
    store.ensure_indexes()
    server.route("GET", "/both", Reply.redirect("https://www.someproject.xyz/?utm_source=x", 301))
    graph = web_gen.generate(t_co("both"), OPTS, NOW)
    GraphWriter(store).write(graph, entry_url="https://t.co/both", token_address="T" * 44, observed_at=NOW)
    (row,) = list(store.db.contents.find({}))
    assert [u["url"] for u in row["source_urls"]] == ["https://t.co/both", "https://someproject.xyz"]
    assert (row["platform"], row["subtype"]) == ("web", "site")


@pytest.mark.parametrize(
    "addresses",
    [
        ["127.0.0.1"],
        ["10.0.0.5"],
        ["169.254.169.254"],
        ["::1"],
        ["::ffff:192.168.1.1"],
        ["104.244.42.1", "192.168.0.1"],
        ["0.0.0.0"],
        # IPv6 forms that a gateway turns into a private, loopback or link-local IPv4 address
        ["64:ff9b::7f00:1"],  # NAT64 of 127.0.0.1
        ["64:ff9b::a9fe:a9fe"],  # NAT64 of 169.254.169.254 (cloud metadata)
        ["64:ff9b:1::a00:5"],  # local-use NAT64 of 10.0.0.5
        ["2002:7f00:1::1"],  # 6to4 of 127.0.0.1
        ["2002:a9fe:a9fe::1"],  # 6to4 of 169.254.169.254
        ["2002:c0a8:101::1"],  # 6to4 of 192.168.1.1
        ["::ffff:127.0.0.1"],
        ["::ffff:169.254.169.254"],
    ],
)
def test_platform_host_resolving_to_a_private_address_is_refused_before_connecting(server, transport, addresses):
    server.clear()
    resolver = make_resolver(transport, resolve_host=lambda host, port: addresses)
    with pytest.raises(TargetBlocked, match="non-public"):
        resolver.resolve("https://t.co/abc")
    assert transport.forwarded == [] and server.calls() == []


@pytest.mark.parametrize("address", ["64:ff9b::808:808", "2002:808:808::1", "::ffff:8.8.8.8", "2606:4700::1111"])
def test_ipv6_forms_of_public_addresses_stay_public(address):
    assert is_public_address(address)


def test_dns_rebinding_on_a_later_hop_is_refused(server, transport):
    server.clear()
    server.route("GET", "/abc", Reply.redirect("https://vm.tiktok.com/ZM1", 302))
    resolver = make_resolver(transport, resolve_host=lambda host, port: PUBLIC if host == "t.co" else ["127.0.0.1"])
    with pytest.raises(TargetBlocked):
        resolver.resolve("https://t.co/abc")
    assert transport.forwarded == [("t.co", "/abc")]


def test_redirect_loop_is_refused(server, transport):
    server.clear()
    server.route("GET", "/a", Reply.redirect("https://t.co/b"))
    server.route("GET", "/b", Reply.redirect("https://t.co/a"))
    with pytest.raises(TransientProviderError, match="loop"):
        make_resolver(transport).resolve("https://t.co/a")
    assert len(transport.forwarded) == 2


def test_more_than_five_hops_is_refused(server, transport):
    server.clear()
    for i in range(7):
        server.route("GET", f"/h{i}", Reply.redirect(f"https://t.co/h{i + 1}"))
    with pytest.raises(TransientProviderError, match="more than 5"):
        make_resolver(transport).resolve("https://t.co/h0")
    assert len(transport.forwarded) == 6  # the entry request and five redirects followed


def test_entry_url_is_checked_too(transport):
    resolver = make_resolver(transport)
    for url in ("http://127.0.0.1/x", "https://example.com/x", "ftp://t.co/x", "not a url"):
        with pytest.raises(TargetBlocked):
            resolver.resolve(url)
    assert transport.forwarded == []


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (Reply.html("gone", status=404), TargetNotFound),
        (Reply.html("gone", status=410), TargetNotFound),
        (Reply.html("slow down", status=429), TransientProviderError),
        (Reply.html("oops", status=500), TransientProviderError),
        (Reply(status=302), TransientProviderError),  # no Location
        (Reply.html("<meta http-equiv=refresh>", status=200), TransientProviderError),  # still a short link
    ],
)
def test_shortener_answers(fx, gen, server, reply, error):
    server.route("GET", "/s1", reply)
    with pytest.raises(error):
        gen.generate(t_co("s1"), OPTS, NOW)


def test_timeout_is_transient(server, transport):
    server.clear()
    server.route("GET", "/slow", slow(Reply.redirect(TWEET_URL), 0.6))
    resolver = ShortLinkResolver(resolve_host=lambda h, p: PUBLIC, transport=transport, timeout=0.15)
    with pytest.raises(TransientProviderError, match="timed out"):
        resolver.resolve("https://t.co/slow")


def test_paid_target_while_paid_is_off_is_skipped_without_calling_it(fx, gen, server):
    server.route("GET", "/tt", Reply.redirect("https://www.tiktok.com/@someone/video/7300000000000000000"))
    with pytest.raises(TargetGated) as info:
        gen.generate(t_co("tt"), OPTS, NOW)
    assert info.value.status is FetchStatus.SKIPPED_PAID
    assert server.calls("/api") == []


def test_target_without_a_generator_is_unsupported(fx, gen, server):
    server.route("GET", "/gh", Reply.redirect("https://github.com/pumpdev/pump-sdk"))
    with pytest.raises(TargetGated) as info:
        gen.generate(t_co("gh"), OPTS, NOW)
    assert info.value.status is FetchStatus.UNSUPPORTED


def test_community_target_follows_the_community_switch(fx, gen, server):
    server.route("GET", "/cm", Reply.redirect("https://x.com/i/communities/1790000000000000042"))
    with pytest.raises(TargetGated) as info:
        gen.generate(t_co("cm"), OPTS, NOW)
    assert info.value.status is FetchStatus.UNSUPPORTED
    graph = gen.generate(t_co("cm"), GenerateOptions(enable_community=True), NOW)
    assert graph.groups[0].venue.platform_key == "1790000000000000042"


def test_delegate_verdict_propagates(fx, gen, server):
    server.route("GET", "/gone", Reply.redirect("https://x.com/kolguy/status/42"))
    with pytest.raises(TargetNotFound):
        gen.generate(t_co("gone"), OPTS, NOW)


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("104.244.42.1", True),
        ("2606:4700::1111", True),
        ("127.0.0.1", False),
        ("10.1.2.3", False),
        ("172.16.0.1", False),
        ("192.168.1.1", False),
        ("169.254.169.254", False),
        ("100.64.0.1", False),
        ("0.0.0.0", False),
        ("224.0.0.1", False),
        ("::1", False),
        ("fe80::1%eth0", False),
        ("fc00::1", False),
        ("::ffff:10.0.0.1", False),
        ("240.0.0.1", False),
        ("junk", False),
    ],
)
def test_public_address_table(address, public):
    assert is_public_address(address) is public


@pytest.mark.parametrize(
    ("host", "known"),
    [
        ("t.co", True),
        ("vm.tiktok.com", True),
        ("www.reddit.com", True),
        ("redd.it", True),
        ("T.CO", True),
        ("x.com.", True),
        ("evilx.com", False),
        ("x.com.evil.example", False),
        ("tco", False),
        ("example.com", False),
    ],
)
def test_platform_host_table(host, known):
    assert is_platform_host(host) is known
