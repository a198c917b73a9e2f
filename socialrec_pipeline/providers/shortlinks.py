"""Short links (`t.co`, `vm.tiktok.com`, reddit `/s/` shares): resolve, route, delegate.

(`redd.it/{id}` is not one: the router reads it as the post `{id}` itself.)

URLs come from anyone (SPEC §10), so resolution is guarded hop by hop:
- only `http`/`https`, no userinfo, default ports only, and a host on the platform allow-list
  (`KNOWN_PLATFORM_HOSTS`, subdomains included); IP literals are refused outright;
- before connecting, the host's addresses (`resolve_host`, `socket.getaddrinfo` by default —
  injectable for tests) must all be public: private, loopback, link-local, reserved, multicast and
  unspecified addresses are refused; the request is then pinned to the vetted address (Host header
  and TLS SNI keep the real name), so a second DNS answer cannot swap in another address;
- at most `max_hops` redirects (5); a loop or a longer chain is refused; at most 64 KiB of any body
  is read, and never parsed.

Statuses: a refused hop (host, scheme, port, address) → `TargetBlocked` — deterministic, retrying
cannot help; a loop or too many hops, DNS failure, timeouts, 429/5xx → error; 404/410 → not found.

Resolution stops at the first Location that routes to a non-short-link type, and that Location is
checked for finality BEFORE the request guards: the target itself is never requested here (its own
generator calls its own API, and a website is a URL-only row that is never fetched), so the guards,
which protect requests, do not refuse it. `t.co/…` → `https://someproject.xyz/` is therefore a
`website` row, not `blocked`. The same holds for a Location that routes as a website although its
host is an IP literal or a non-default port (`http://127.0.0.1/`, `http://169.254.169.254/…`,
`https://t.co:8443/…`): it is recorded as a URL-only website row, exactly as if the publisher had
written it in the `website` field, with no request to it (the web generator's urlscan enrichment
does not query IP literals either). Only URLs that are requested — the entry URL and every hop that
is still a short link — go through the guards; a Location that does not route at all (`file:`,
userinfo, a bare number) is not final and is refused by them.

The target is routed again and gated again (a `t.co` link may lead to a paid TikTok video while paid
fetching is off → status `skipped_paid`; to a community while communities are off → `unsupported`).
A target that is still a short link after the hops → error; a target without a generator →
`unsupported` (retryable: it becomes fetchable once a generator exists). The delegate's root
content gets `url` = the resolved canonical URL; the writer adds the entry short URL itself.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from datetime import datetime
from urllib.parse import urljoin

import httpx

from socialrec_pipeline.domain.enums import FetchStatus
from socialrec_pipeline.domain.errors import ProviderError, TargetBlocked, TargetNotFound, TransientProviderError
from socialrec_pipeline.domain.graph import SocialObjectGraph
from socialrec_pipeline.providers.base import GenerateOptions, GeneratorRegistry
from socialrec_pipeline.providers.http import DEFAULT_TIMEOUT, USER_AGENT, tls_context
from socialrec_pipeline.routing.gate import GateSettings, gate
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.routing.types import RoutedUrl

#: Registrable platform domains; a host matches itself or any subdomain of one of these.
KNOWN_PLATFORM_HOSTS: frozenset[str] = frozenset({
    "x.com", "twitter.com", "t.co",
    "tiktok.com",  # vm./vt./www. are subdomains
    "reddit.com", "redd.it",
    "youtube.com", "youtu.be",
    "instagram.com", "instagr.am",
    "github.com",
    "t.me", "telegram.me", "telegram.dog",
})
SHORTLINK_TYPES: frozenset[SourceType] = frozenset({
    SourceType.X_SHORTLINK, SourceType.TIKTOK_SHORTLINK, SourceType.REDDIT_SHARE,
})
MAX_HOPS = 5
MAX_BODY_BYTES = 64 * 1024
_REDIRECTS = {301, 302, 303, 307, 308}
_DEFAULT_PORTS = {"http": 80, "https": 443}

HostResolver = Callable[[str, int], list[str]]


def system_resolve(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError) as exc:
        raise TransientProviderError(f"DNS lookup of {host} failed: {exc}") from None
    return [str(info[4][0]) for info in infos]


#: IPv6 prefixes that carry an IPv4 address a gateway forwards to: NAT64 (well-known and local-use,
#: the IPv4 in the last 32 bits). 6to4 (2002::/16), Teredo and IPv4-mapped forms have properties of
#: their own in `ipaddress`.
_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address wraps (mapped, NAT64, 6to4, Teredo), if any."""
    found = [a for a in (address.ipv4_mapped, address.sixtofour) if a is not None]
    if address.teredo is not None:
        found.extend(address.teredo)
    if any(address in network for network in _NAT64):
        found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return found


def is_public_address(text: str) -> bool:
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address):
        wrapped = embedded_ipv4(address)
        if wrapped:  # judged by the IPv4 address the packets end up at
            return all(is_public_address(str(inner)) for inner in wrapped)
    return address.is_global and not (
        address.is_private or address.is_loopback or address.is_link_local or address.is_reserved
        or address.is_multicast or address.is_unspecified
    )


def is_platform_host(host: str) -> bool:
    host = host.lower().rstrip(".")
    return any(host == known or host.endswith("." + known) for known in KNOWN_PLATFORM_HOSTS)


class ShortLinkResolver:
    def __init__(
        self,
        *,
        max_hops: int = MAX_HOPS,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        resolve_host: HostResolver = system_resolve,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._max_hops = max_hops
        self._resolve_host = resolve_host
        self._http = httpx.Client(headers={"User-Agent": USER_AGENT}, timeout=timeout,
                                  follow_redirects=False, transport=transport, verify=tls_context())

    def close(self) -> None:
        self._http.close()

    def check_url(self, url: str) -> httpx.URL:
        """The parsed URL if policy allows requesting it; `TargetBlocked` otherwise (no IO)."""
        try:
            parsed = httpx.URL(url)
        except (httpx.InvalidURL, TypeError, ValueError):
            raise TargetBlocked(f"refused {url!r}: not a URL") from None
        if parsed.scheme not in _DEFAULT_PORTS:
            raise TargetBlocked(f"refused {url!r}: scheme {parsed.scheme!r}")
        if parsed.userinfo:
            raise TargetBlocked(f"refused {url!r}: credentials in the URL")
        if parsed.port is not None and parsed.port != _DEFAULT_PORTS[parsed.scheme]:
            raise TargetBlocked(f"refused {url!r}: non-default port")
        host = parsed.host
        try:
            ipaddress.ip_address(host.strip("[]"))
            raise TargetBlocked(f"refused {url!r}: IP-literal host")
        except ValueError:
            pass
        if not is_platform_host(host):
            raise TargetBlocked(f"refused {url!r}: {host} is not a known platform host")
        return parsed

    def vetted_address(self, parsed: httpx.URL) -> str:
        port = parsed.port or _DEFAULT_PORTS[parsed.scheme]
        addresses = self._resolve_host(parsed.host, port)
        if not addresses:
            raise TransientProviderError(f"DNS lookup of {parsed.host} returned nothing")
        refused = [a for a in addresses if not is_public_address(a)]
        if refused:
            raise TargetBlocked(f"refused {parsed.host}: resolves to non-public {refused[0]}")
        return addresses[0]

    def resolve(self, url: str, *, is_final: Callable[[str], bool] = lambda _url: False) -> str:
        """Follow redirects from `url` until a Location `is_final`, a 200, or a verdict."""
        current, seen = url, set()
        for hop in range(self._max_hops + 1):
            # A Location that routes to a non-short-link target is the answer: it is returned
            # without being requested, so the request guards below do not apply to it.
            if hop and is_final(current):
                return current
            parsed = self.check_url(current)
            if current in seen:
                raise TransientProviderError(f"redirect loop at {current}")
            seen.add(current)
            address = self.vetted_address(parsed)
            response = self._request(parsed, address)
            code = response.status_code
            if code in _REDIRECTS:
                location = response.headers.get("location")
                if not location:
                    raise TransientProviderError(f"{current}: HTTP {code} without Location")
                current = urljoin(current, location.strip())
                continue
            if code == 200:
                return current
            if code in (404, 410):
                raise TargetNotFound(f"{current}: HTTP {code}")
            raise TransientProviderError(f"{current}: HTTP {code}")
        raise TransientProviderError(f"more than {self._max_hops} redirects from {url}")

    def _request(self, parsed: httpx.URL, address: str) -> httpx.Response:
        # Connect to the vetted address; Host and SNI keep the name the certificate is checked against.
        pinned = parsed.copy_with(host=address)
        host_header = parsed.host if parsed.port is None else f"{parsed.host}:{parsed.port}"
        request = self._http.build_request("GET", pinned, headers={"Host": host_header},
                                           extensions={"sni_hostname": parsed.host})
        try:
            response = self._http.send(request, stream=True)
        except httpx.TimeoutException:
            raise TransientProviderError(f"{parsed.host}{parsed.path}: timed out") from None
        except httpx.HTTPError as exc:
            raise TransientProviderError(f"{parsed.host}{parsed.path}: {exc.__class__.__name__}") from None
        try:
            # Only status and Location matter; a small body is drained (keeps the connection
            # reusable), anything past MAX_BODY_BYTES is cut off unread.
            received = 0
            for chunk in response.iter_raw():
                received += len(chunk)
                if received > MAX_BODY_BYTES:
                    break
        except httpx.HTTPError:
            pass
        finally:
            response.close()
        return response


class TargetGated(ProviderError):
    """The resolved target may not be fetched now (paid off, communities off): the gate's status."""

    def __init__(self, message: str, status: FetchStatus) -> None:
        super().__init__(message, external_call_made=True)
        self.status = status


class ShortLinkGenerator:
    source_types = SHORTLINK_TYPES
    makes_external_calls = True

    def __init__(
        self,
        resolver: ShortLinkResolver,
        route_fn: Callable[[str], RoutedUrl | None],
        delegate_registry: GeneratorRegistry,
        gate_settings: GateSettings | None = None,
    ) -> None:
        self._resolver = resolver
        self._route = route_fn
        self._registry = delegate_registry
        self._settings = gate_settings or GateSettings()

    def close(self) -> None:
        """Close the resolver's HTTP client (the registry that built it closes it)."""
        self._resolver.close()

    def _is_final(self, url: str) -> bool:
        routed = self._route(url)
        return routed is not None and routed.source_type not in SHORTLINK_TYPES

    def resolve_target(self, routed: RoutedUrl) -> RoutedUrl:
        """Resolve the short link and route its target (requests only the short-link hosts).

        Callers that bound paid calls (`TokenRecorder.fetch`) use this and `generate_target`, so
        the gate, the paid pool slot and the credit guard are decided by the resolved target."""
        resolved = self._resolver.resolve(routed.canonical_url, is_final=self._is_final)
        target = self._route(resolved)
        if target is None:
            raise TargetNotFound(f"{routed.canonical_url} resolved to {resolved!r}, which is not a routable URL")
        if target.source_type in SHORTLINK_TYPES:
            raise TransientProviderError(
                f"{routed.canonical_url} still resolves to a short link ({target.canonical_url})"
            )
        return target

    def target_supported(self) -> list[SourceType]:
        """Source types a resolved target may have a generator for (short links excluded)."""
        return [t for t in self._registry.supported if t not in SHORTLINK_TYPES]

    def target_generator(self, target: RoutedUrl):
        return self._registry.for_source_type(target.source_type)

    def generate_target(self, target: RoutedUrl, options: GenerateOptions, observed_at: datetime) -> SocialObjectGraph:
        """Generate the resolved target's graph (no gate here); its root content gets the target's URL."""
        delegate = self.target_generator(target)
        if delegate is None:
            raise TargetGated(f"{target.canonical_url}: no generator", FetchStatus.UNSUPPORTED)
        graph = delegate.generate(target, options, observed_at)
        graph.external_call_made = True  # the short link itself was requested, whatever the delegate did
        root = next((g for g in graph.groups if g.ref == graph.root_ref), None)
        if root is not None and root.content is not None:
            root.content.url = target.canonical_url
        return graph

    def generate(self, routed: RoutedUrl, options: GenerateOptions, observed_at: datetime) -> SocialObjectGraph:
        """Resolve, gate the target, generate it. Without a paid pool or credit guard: the
        recording services call `resolve_target` / `generate_target` through `TokenRecorder.fetch`."""
        target = self.resolve_target(routed)
        settings = self._settings.model_copy(update={"enable_community": options.enable_community})
        decision = gate(target, settings, self.target_supported())
        if not decision.allowed or self.target_generator(target) is None:
            raise TargetGated(
                f"{target.canonical_url}: {decision.reason or 'no generator'}",
                decision.status or FetchStatus.UNSUPPORTED,
            )
        return self.generate_target(target, options, observed_at)
