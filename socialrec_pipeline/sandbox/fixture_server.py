"""A small threaded HTTP server that answers from a route table, on loopback only.

Routes map `(METHOD, path)` to a handler `(request) -> Reply`. Every request is logged so tests
can assert how many calls reached a provider (for example: zero calls to a paid provider).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def param(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[0] if values else None

    def json(self) -> Any:
        return json.loads(self.body or b"null")


@dataclass
class Reply:
    status: int = 200
    body: bytes | str | Any = b""
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> "Reply":
        merged = {"Content-Type": "application/json", **(headers or {})}
        return cls(status=status, body=json.dumps(payload).encode(), headers=merged)

    @classmethod
    def html(cls, text: str, status: int = 200) -> "Reply":
        return cls(status=status, body=text.encode(), headers={"Content-Type": "text/html; charset=utf-8"})

    @classmethod
    def redirect(cls, location: str, status: int = 302) -> "Reply":
        return cls(status=status, headers={"Location": location})


Handler = Callable[[Request], Reply]


class FixtureServer:
    """`with FixtureServer() as server: server.route("GET", "/x", handler); server.url`."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, latency_ms: float = 0) -> None:
        #: Every answer waits this long first (benchmarks: a provider answering in L ms).
        self.latency_s = max(0.0, float(latency_ms)) / 1000
        self._routes: dict[tuple[str, str], Handler] = {}
        self._prefix_routes: list[tuple[str, str, Handler]] = []
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((host, port), self._make_handler())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- routing -----------------------------------------------------------------------------
    def route(self, method: str, path: str, handler: Handler | Reply) -> None:
        """Exact path match. A `Reply` is served as-is on every call."""
        self._routes[(method.upper(), path)] = _as_handler(handler)

    def route_prefix(self, method: str, prefix: str, handler: Handler | Reply) -> None:
        """Longest matching prefix wins when no exact route matches."""
        self._prefix_routes.append((method.upper(), prefix, _as_handler(handler)))
        self._prefix_routes.sort(key=lambda item: len(item[1]), reverse=True)

    def clear(self) -> None:
        self._routes.clear()
        self._prefix_routes.clear()
        self.reset_log()

    def reset_log(self) -> None:
        with self._lock:
            self.requests.clear()

    def calls(self, path_prefix: str = "") -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.path.startswith(path_prefix)]

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "FixtureServer":
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fixture-http", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "FixtureServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- internals ---------------------------------------------------------------------------
    def _dispatch(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
        if self.latency_s:
            time.sleep(self.latency_s)
        handler = self._routes.get((request.method, request.path))
        if handler is None:
            for method, prefix, candidate in self._prefix_routes:
                if method == request.method and request.path.startswith(prefix):
                    handler = candidate
                    break
        if handler is None:
            return Reply.json({"message": "Not Found"}, status=404)
        return handler(request)

    def _make_handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes; with Nagle on, keep-alive clients wait ~40 ms
            # for a delayed ACK on every request.
            disable_nagle_algorithm = True

            def _serve(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                request = Request(
                    method=self.command,
                    path=parts.path,
                    query=parse_qs(parts.query, keep_blank_values=True),
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
                try:
                    reply = server._dispatch(request)
                except Exception as exc:  # a broken fixture answers 500, it never hangs the client
                    reply = Reply.json({"error": f"fixture handler failed: {exc}"}, status=500)
                payload = reply.body
                if isinstance(payload, str):
                    payload = payload.encode()
                elif not isinstance(payload, bytes):
                    payload = json.dumps(payload).encode()
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = _serve

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

        return _Handler


def _as_handler(handler: Handler | Reply) -> Handler:
    if isinstance(handler, Reply):
        reply = handler
        return lambda _request: reply
    return handler
