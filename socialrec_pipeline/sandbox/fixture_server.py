"""A small threaded HTTP server that answers from a route table, on loopback only.

Routes map `(METHOD, path)` to a handler `(request) -> Reply`. Every request is logged so tests
can assert how many calls reached a provider (for example: zero calls to a paid provider).
Faults (`fail_with`, `failing`, `clear_faults`) make the next calls answer a given reply instead.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
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
    def json(cls, payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
        merged = {"Content-Type": "application/json", **(headers or {})}
        return cls(status=status, body=json.dumps(payload).encode(), headers=merged)

    @classmethod
    def html(cls, text: str, status: int = 200) -> Reply:
        return cls(status=status, body=text.encode(), headers={"Content-Type": "text/html; charset=utf-8"})

    @classmethod
    def redirect(cls, location: str, status: int = 302) -> Reply:
        return cls(status=status, headers={"Location": location})


Handler = Callable[[Request], Reply]


class Faults:
    """Replies queued to answer the next calls instead of the real handler, oldest first.

    Thread-safe: the server answers from its own threads while the test queues or clears.
    """

    def __init__(self) -> None:
        self._queue: list[tuple[str, Reply]] = []
        self._lock = threading.Lock()

    def add(self, reply: Reply, times: int = 1, *, path_prefix: str = "") -> None:
        if times < 1:
            raise ValueError(f"times must be at least 1, got {times}")
        with self._lock:
            self._queue.extend([(path_prefix, reply)] * times)

    def take(self, path: str = "") -> Reply | None:
        """The oldest queued reply whose prefix matches `path`, removed; None when there is none."""
        with self._lock:
            for index, (prefix, reply) in enumerate(self._queue):
                if path.startswith(prefix):
                    del self._queue[index]
                    return reply
        return None

    def clear(self) -> int:
        """Drop every queued reply; returns how many were left unused."""
        with self._lock:
            left = len(self._queue)
            self._queue.clear()
        return left

    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    @contextlib.contextmanager
    def injected(self, reply: Reply, times: int = 1, *, path_prefix: str = "") -> Iterator[None]:
        """`with faults.injected(reply, times=3): ...`: the unused ones are dropped on exit, even on error."""
        self.add(reply, times, path_prefix=path_prefix)
        try:
            yield
        finally:
            self.clear()


class FixtureServer:
    """`with FixtureServer() as server: server.route("GET", "/x", handler); server.url`."""

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, latency_ms: float = 0, poll_interval_s: float = 0.05
    ) -> None:
        #: Every answer waits this long first (benchmarks: a provider answering in L ms).
        self.latency_s = max(0.0, float(latency_ms)) / 1000
        #: How often the serving loop looks at its stop flag: 50 ms lets a test stop it at once; a
        #: long-lived sandbox takes 0.5 s (eight servers woken 20 times a second cost ~1 % of a core).
        self.poll_interval_s = poll_interval_s
        self._routes: dict[tuple[str, str], Handler] = {}
        self._prefix_routes: list[tuple[str, str, Handler]] = []
        self.requests: list[Request] = []
        #: TCP connections accepted, and those that ended without one request this server could read
        #: (another protocol, a method it does not serve): a meter counts them too.
        self.connections = 0
        self.connections_without_request = 0
        #: Connections the client reset or closed while this server read or answered (a caller that
        #: timed out, a fault that cut the link): counted here instead of printed as a traceback.
        self.client_hangups = 0
        self._lock = threading.Lock()
        self._faults = Faults()
        self._httpd = _FixtureHTTPServer((host, port), self)
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
        self.clear_faults()
        self.reset_log()

    # -- faults --------------------------------------------------------------------------------
    def fail_with(self, reply: Reply, times: int = 1, *, path_prefix: str = "") -> None:
        """The next `times` requests whose path starts with `path_prefix` get `reply` (logged as usual)."""
        self._faults.add(reply, times, path_prefix=path_prefix)

    def failing(
        self, reply: Reply, times: int = 1, *, path_prefix: str = ""
    ) -> contextlib.AbstractContextManager[None]:
        """`fail_with` for the duration of a `with` block; unused faults are cleared on exit."""
        return self._faults.injected(reply, times, path_prefix=path_prefix)

    def clear_faults(self) -> int:
        """Drop the faults not served yet; returns how many there were."""
        return self._faults.clear()

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
        host = host.decode() if isinstance(host, bytes) else host  # AF_UNIX only; we bind TCP
        return f"http://{host}:{port}"

    def start(self) -> FixtureServer:
        # `stop()` waits for the loop to look at its flag, every `poll_interval_s`.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": self.poll_interval_s},
            name="fixture-http",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FixtureServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- internals ---------------------------------------------------------------------------
    def _dispatch(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
        if self.latency_s:
            time.sleep(self.latency_s)
        fault = self._faults.take(request.path)
        if fault is not None:
            return fault
        handler = self._routes.get((request.method, request.path))
        if handler is None:
            for method, prefix, candidate in self._prefix_routes:
                if method == request.method and request.path.startswith(prefix):
                    handler = candidate
                    break
        if handler is None:
            return Reply.json({"message": "Not Found"}, status=404)
        return handler(request)

    def _count(self, counter: str) -> None:
        """Add one to a connection counter (`connections`, `connections_without_request`, `client_hangups`)."""
        with self._lock:
            setattr(self, counter, getattr(self, counter) + 1)


class _FixtureHTTPServer(ThreadingHTTPServer):
    """The HTTP server of one `FixtureServer` (its `owner`): a thread per connection.

    socketserver prints a traceback for every error of a request, a client's hang-up included: a
    soak or a sandbox log filled with `ConnectionResetError` reads as the stand-in failing, when it
    is the caller giving up (what a real platform shrugs off). A hang-up is counted instead; other
    errors are printed as before."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], owner: FixtureServer) -> None:
        super().__init__(address, _RouteHandler)
        self.owner = owner

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):  # reset, broken pipe, aborted
            self.owner._count("client_hangups")
            return
        super().handle_error(request, client_address)


class _RouteHandler(BaseHTTPRequestHandler):
    """Reads one request at a time and answers what the owner's route table (or a fault) says."""

    server: _FixtureHTTPServer
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle on, keep-alive clients wait ~40 ms for a
    # delayed ACK on every request.
    disable_nagle_algorithm = True
    _served = False

    def setup(self) -> None:
        super().setup()
        self.server.owner._count("connections")

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            if not self._served:
                self.server.owner._count("connections_without_request")

    def _serve(self) -> None:
        self._served = True
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
            reply = self.server.owner._dispatch(request)
        except Exception as exc:  # a broken fixture answers 500, it never hangs the client
            reply = Reply.json({"error": f"fixture handler failed: {exc}"}, status=500)
        payload = _payload(reply)
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _serve

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return


def _payload(reply: Reply) -> bytes:
    """A reply's body as bytes: text encoded, anything else neither text nor bytes as JSON."""
    if isinstance(reply.body, bytes):
        return reply.body
    if isinstance(reply.body, str):
        return reply.body.encode()
    return json.dumps(reply.body).encode()


def _as_handler(handler: Handler | Reply) -> Handler:
    if isinstance(handler, Reply):
        reply = handler
        return lambda _request: reply
    return handler
