"""Parse and normalize one URL string (SPEC §3.1). Pure; never raises on bad input, returns None.

What is rejected (None, recorded upstream as `unsupported`):
- anything that is not a `str`, empty or whitespace-only text, text longer than `MAX_URL_LENGTH`;
- whitespace, control or zero-width characters inside the URL, and backslashes (browsers read `\\` as
  `/`, so `https://evil.example\\@x.com` would be read differently by us and by a browser);
- schemes other than http/https (`javascript:`, `data:`, `file:`, `mailto:`, `tg:` ...);
- userinfo (`https://x.com@evil.example/`): a classic disguise, never routed anywhere;
- hosts that are not a dotted DNS name or an IP literal (`kolguy`, `localhost`, `foo.123`).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

#: Longer inputs are not URLs anyone linked on purpose; also keeps index keys bounded.
MAX_URL_LENGTH = 4096

_EDGE_JUNK = " \t\r\n\v\f\u00a0\u200b\u200c\u200d\u2060\ufeff\u3000"
#: Pasted URLs arrive wrapped as `<url>`, `"url"`, `'url'`: one wrapping pair is removed.
_WRAPPERS = {"<": ">", '"': '"', "'": "'"}
_BAD_CHARS = re.compile(r"[\x00-\x20\x7f-\xa0\u1680\u2000-\u200f\u2028-\u202f\u205f-\u2064\u3000\ufeff\\]")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
_HOST = re.compile(
    r"^(?:[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\.)+(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$"
)
_IPV4ISH = re.compile(r"^[0-9.]+$")
_HOST_PREFIXES = ("www.", "m.", "mobile.")
_PCT = re.compile(r"%[0-9a-fA-F]{2}")
_PATH_SAFE = "/%:@!$&'()*+,;=-._~"

#: Dropped from every URL. Platform URLs are rebuilt from their key, so this list matters for
#: websites and `{platform}_unknown`; it is the generic click-tracking vocabulary.
TRACKING_PARAMS: frozenset[str] = frozenset(
    {
        "fbclid", "gclid", "dclid", "gbraid", "wbraid", "msclkid", "yclid", "twclid", "ttclid",
        "igsh", "igshid", "si", "ref", "ref_src", "ref_url", "feature", "_r", "_t",
        "is_from_webapp", "sender_device", "sender_web_id", "share_app_id", "share_link_id",
        "mc_cid", "mc_eid", "_ga", "_gl", "_hsenc", "_hsmi", "mkt_tok", "oly_anon_id",
        "oly_enc_id", "vero_id", "spm", "s_cid", "li_fat_id", "rdt_cid", "epik",
    }
)
#: Host-specific tracking: `s` (share source) and `t` (share token) mean nothing else on x.com.
HOST_TRACKING_PARAMS: dict[str, frozenset[str]] = {"x.com": frozenset({"s", "t"})}


@dataclass(frozen=True, slots=True)
class ParsedUrl:
    #: Lower-case ASCII (punycode) host without `www.`/`m.`/`mobile.` and without a trailing dot.
    host: str
    #: None for the scheme's default port; a non-default port makes the URL a plain website.
    port: int | None
    is_ip: bool
    #: Raw path as written (percent escapes intact), "" for none.
    path: str
    #: Non-empty path segments, percent-decoded, for classification.
    segments: tuple[str, ...]
    #: Decoded query pairs in arrival order, blank values kept.
    query: tuple[tuple[str, str], ...]
    fragment: str

    def param(self, name: str) -> str | None:
        """First non-blank value of `name`, stripped; None when absent."""
        for key, value in self.query:
            if key == name:
                value = value.strip()
                if value:
                    return value
        return None


def clean_host(raw: str, strip_prefixes: bool = True) -> tuple[str, bool] | None:
    """(lower-case ASCII host, is_ip) or None when `raw` is not a valid host name or IP literal."""
    host = raw.rstrip(".").lower()
    if not host:
        return None
    if host.startswith("["):
        if not host.endswith("]"):
            return None
        try:
            return f"[{ipaddress.IPv6Address(host[1:-1]).compressed}]", True
        except ValueError:
            return None
    if _IPV4ISH.match(host):
        try:
            return str(ipaddress.IPv4Address(host)), True
        except ValueError:
            return None
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except (UnicodeError, ValueError):
            return None
    if len(host) > 253 or not _HOST.match(host):
        return None
    if not strip_prefixes:
        return host, False
    # One pass per prefix so `www.m.example.com` also folds; never strip down to a bare TLD.
    changed = True
    while changed:
        changed = False
        for prefix in _HOST_PREFIXES:
            if host.startswith(prefix) and "." in host[len(prefix):]:
                host = host[len(prefix):]
                changed = True
    return host, False


def split_authority(netloc: str) -> tuple[str, int | None] | None:
    if netloc.startswith("["):
        end = netloc.find("]")
        if end < 0:
            return None
        host, rest = netloc[: end + 1], netloc[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port_text = rest[1:]
    else:
        host, _, port_text = netloc.partition(":")
    port: int | None = None
    if port_text:
        if not (port_text.isascii() and port_text.isdigit()) or len(port_text) > 5:
            return None
        port = int(port_text)
        if not 0 < port < 65536:
            return None
        if port in (80, 443):
            port = None
    return host, port


def parse_url(text: object) -> ParsedUrl | None:
    if not isinstance(text, str) or len(text) > MAX_URL_LENGTH:
        return None
    s = text.strip(_EDGE_JUNK)
    if len(s) > 1 and _WRAPPERS.get(s[0]) == s[-1]:
        s = s[1:-1].strip(_EDGE_JUNK)
    if not s or _BAD_CHARS.search(s):
        return None
    m = _SCHEME.match(s)
    if m is not None:
        if s.startswith("://", m.end() - 1):
            if m.group(1).lower() not in ("http", "https"):
                return None
            s = s[m.end() + 2 :]
        elif "." not in m.group(1):
            # `javascript:`, `mailto:`, `data:` ... (`x.com:443/a` has a dot: host and port).
            return None
    elif s.startswith("//"):
        s = s[2:]
    try:
        parts = urlsplit("//" + s)
    except ValueError:
        return None
    netloc = parts.netloc
    if "@" in netloc or not netloc:
        return None
    authority = split_authority(netloc)
    if authority is None:
        return None
    cleaned = clean_host(authority[0])
    if cleaned is None:
        return None
    host, is_ip = cleaned
    path = parts.path
    segments = tuple(unquote(seg) for seg in path.split("/") if seg)
    query = tuple(parse_qsl(parts.query, keep_blank_values=True)) if parts.query else ()
    return ParsedUrl(host, authority[1], is_ip, path, segments, query, parts.fragment)


def _upper_escape(m: re.Match[str]) -> str:
    return m.group(0).upper()


def normalize_path(path: str) -> str:
    """Percent-encode what must be, upper-case escapes, drop trailing slashes. Idempotent."""
    if not path:
        return ""
    path = quote(path, safe=_PATH_SAFE)
    if "%" in path:
        path = _PCT.sub(_upper_escape, path)
    return path.rstrip("/")


def is_tracking(key: str, host: str) -> bool:
    k = key.lower()
    if k in TRACKING_PARAMS or k.startswith("utm_"):
        return True
    extra = HOST_TRACKING_PARAMS.get(host)
    return extra is not None and k in extra


def clean_query(pairs: tuple[tuple[str, str], ...], host: str) -> str:
    """Drop tracking parameters; sort the rest by name so parameter order never splits a URL."""
    kept = [(k, v) for k, v in pairs if k and not is_tracking(k, host)]
    if not kept:
        return ""
    kept.sort(key=lambda kv: kv[0])
    return urlencode(kept, quote_via=quote)


def generic_canonical(p: ParsedUrl, host: str | None = None) -> str:
    """`https://host[:port]/path?query` with tracking dropped: the form for websites and unknowns."""
    h = host or p.host
    netloc = h if p.port is None else f"{h}:{p.port}"
    query = clean_query(p.query, h)
    url = f"https://{netloc}{normalize_path(p.path)}"
    return f"{url}?{query}" if query else url


def q(value: str) -> str:
    """Encode one query value or path segment for a canonical URL."""
    return quote(value, safe="")
