"""apex_domain: Public Suffix List from the bundled snapshot, never downloaded."""

from __future__ import annotations

import subprocess
import sys

import pytest

from socialrec_pipeline.routing import apex_domain


@pytest.mark.parametrize(
    ("host", "apex"),
    [
        ("shop.foo.co.uk", "foo.co.uk"),
        ("foo.co.uk", "foo.co.uk"),
        ("a.b.c.example.com", "example.com"),
        ("example.com", "example.com"),
        ("WWW.Example.COM", "example.com"),
        ("example.com.", "example.com"),
        ("kolguy.github.io", "kolguy.github.io"),  # private suffix: each Pages site is its own domain
        ("app.kolguy.vercel.app", "kolguy.vercel.app"),
        ("foo.com.au", "foo.com.au"),
        ("shop.foo.co.jp", "foo.co.jp"),
        ("münchen.de", "xn--mnchen-3ya.de"),
        ("xn--mnchen-3ya.de", "xn--mnchen-3ya.de"),
        ("https://shop.foo.co.uk/path?q=1", "foo.co.uk"),
        ("shop.foo.co.uk:8443", "foo.co.uk"),
        ("pump.fun", "pump.fun"),
    ],
)
def test_apex(host: str, apex: str) -> None:
    assert apex_domain(host) == apex


@pytest.mark.parametrize(
    "host",
    [None, "", " ", "co.uk", "com", "localhost", "1.2.3.4", "127.0.0.1", "[::1]", "::1", "2001:db8::1",
     "http://1.2.3.4/x", "ex ample.com", "-bad-.com", "a..b.com", "https://user@foo.com/", "javascript:alert(1)",
     "x" * 10_000, 42],
)
def test_apex_none(host: object) -> None:
    assert apex_domain(host) is None


def test_apex_never_touches_the_network() -> None:
    # A fresh interpreter with sockets disabled: importing and using apex_domain must still work.
    code = (
        "import socket\n"
        "def _no(*a, **k): raise RuntimeError('network access attempted')\n"
        "class _S(socket.socket):\n"
        "    def connect(self, *a, **k): _no()\n"
        "    def connect_ex(self, *a, **k): _no()\n"
        "socket.socket = _S; socket.create_connection = _no; socket.getaddrinfo = _no\n"
        "from socialrec_pipeline.routing.apex import apex_domain\n"
        "assert apex_domain('shop.foo.co.uk') == 'foo.co.uk'\n"
        "assert apex_domain('kolguy.github.io') == 'kolguy.github.io'\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={"PATH": "", "HOME": "/nonexistent", "TLDEXTRACT_CACHE": "/nonexistent"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_domain_fingerprint():
    from socialrec_pipeline.routing import domain_fingerprint

    assert domain_fingerprint("https://www.shop.foo.co.uk/path") == "domain:foo.co.uk"
    assert domain_fingerprint("https://a.vercel.app/") == "domain:a.vercel.app"
    assert domain_fingerprint("http://127.0.0.1/") is None
    assert domain_fingerprint("not a url") is None
