"""`apex_domain(host)`: the registrable domain by the Public Suffix List (SPEC §3.6).

The earlier router read the last two labels, so `shop.foo.co.uk` became `co.uk`. We use the PSL
snapshot bundled inside tldextract and never download: `suffix_list_urls=()` disables fetching and
`cache_dir=None` disables the on-disk cache, so the snapshot shipped with the package is the source.

PSL *private* suffixes are included (`github.io`, `vercel.app`, `pages.dev` ...): two tokens hosted on
`a.vercel.app` and `b.vercel.app` do not share a domain, and the domain-sharing count must not say so.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from socialrec_pipeline.routing.normalize import clean_host, parse_url, split_authority

if TYPE_CHECKING:
    import tldextract


@cache
def _extractor() -> tldextract.TLDExtract:
    """Built on first use: tldextract brings requests along (~6 MiB), which the code server, which
    never computes a domain, does without; a run worker builds it before forking
    (run_worker_settings.warm_run_imports), so its children share the parsed list."""
    import tldextract

    return tldextract.TLDExtract(
        suffix_list_urls=(),
        cache_dir=None,
        fallback_to_snapshot=True,
        include_psl_private_domains=True,
    )


def _host_of(text: str) -> str | None:
    if "/" in text:
        # A URL: reuse the router's parsing (scheme and userinfo rules), then take the raw authority
        # so the `www.`/`m.` folding of canonical URLs does not leak into the apex.
        if parse_url(text) is None:
            return None
        text = text.split("//", 1)[1] if "//" in text else text
        text = text.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    authority = split_authority(text)
    return authority[0] if authority else None


def apex_domain(host: object) -> str | None:
    """Registrable domain of a host (or of a URL's host), lower-case ASCII; None for IP addresses,
    bare public suffixes, single labels and anything that is not a valid host name."""
    if not isinstance(host, str) or len(host) > 4096:
        return None
    raw = _host_of(host.strip())
    if raw is None or "@" in raw:
        return None
    cleaned = clean_host(raw, strip_prefixes=False)
    if cleaned is None or cleaned[1]:
        return None
    return _extractor().extract_str(cleaned[0]).top_domain_under_public_suffix or None


#: `tokens.fingerprints` prefix of the domain-sharing axis (SPEC §4): `domain:{apex}`.
DOMAIN_FINGERPRINT_PREFIX = "domain:"


def domain_fingerprint(url: object) -> str | None:
    """`domain:{apex}` for a website URL (or host); None when it has no registrable domain."""
    apex = apex_domain(url)
    return f"{DOMAIN_FINGERPRINT_PREFIX}{apex}" if apex else None
