"""A loopback stand-in for short-link hosts (`t.co`, `vm.tiktok.com`, reddit `/s/` shares).

The resolver only requests known platform hosts whose DNS answers are public. The stand-in keeps
those guards intact: `ForwardToServer` carries the socket to a `FixtureServer` while the resolver
still sees `t.co`, and `resolve_host` answers a public address for the platform hosts.
"""

from __future__ import annotations

import httpx
from pydantic import Field

from socialrec_pipeline.defs.resources import GeneratorsResource
from socialrec_pipeline.providers.shortlinks import ShortLinkResolver
from socialrec_pipeline.sandbox.fixture_server import FixtureServer, Reply


class ForwardToServer(httpx.BaseTransport):
    """Sends every request to one local server whatever its URL says, keeping the Host header.

    Lets a client that insists on real platform hostnames (the short-link resolver) talk to a
    `FixtureServer`: its host checks still see `t.co`, only the socket goes to loopback.
    """

    def __init__(self, server_url: str) -> None:
        self._target = httpx.URL(server_url)
        self._inner = httpx.HTTPTransport()
        #: Each forwarded request as (Host header, path), for assertions.
        self.forwarded: list[tuple[str, str]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.forwarded.append((request.headers.get("host", ""), request.url.path))
        request.url = request.url.copy_with(scheme="http", host=self._target.host, port=self._target.port)
        return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()


#: A public address (X's), answered for every platform host the resolver looks up.
PUBLIC_ADDRESS = "104.244.42.1"


def register_short_link(server: FixtureServer, path: str, location: str) -> None:
    """`GET {path}` on any short-link host answers 301 → `location`."""
    server.route("GET", path, Reply.redirect(location, status=301))


def loopback_resolver(server_url: str, *, timeout: float = 2.0) -> ShortLinkResolver:
    return ShortLinkResolver(
        resolve_host=lambda host, port: [PUBLIC_ADDRESS], transport=ForwardToServer(server_url), timeout=timeout
    )


class StandInShortLinksGenerators(GeneratorsResource):
    """The generators resource whose short links resolve against the stand-in at
    `short_link_stand_in` (every guard of the resolver still applied)."""

    short_link_stand_in: str = Field(description="Base URL of the loopback short-link stand-in.")

    def short_link_resolver(self) -> ShortLinkResolver:
        return loopback_resolver(self.short_link_stand_in)


def short_links_resolved_by(generators: GeneratorsResource, server_url: str) -> GeneratorsResource:
    """`generators` with its short links resolved against the stand-in at `server_url`."""
    providers = {name: getattr(generators, name) for name in GeneratorsResource.model_fields}
    return StandInShortLinksGenerators(**providers, short_link_stand_in=server_url)
