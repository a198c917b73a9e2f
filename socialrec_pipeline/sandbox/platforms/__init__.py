"""Canned platform answers in the documented shapes (contracts/platform-apis.md).

Each module builds payloads and registers routes on a `FixtureServer`; tests and the offline demo
share them, so a fixture can never drift into a shape invented for one test.
"""

from __future__ import annotations

import httpx


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
