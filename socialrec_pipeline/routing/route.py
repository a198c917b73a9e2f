"""`route(url)`: normalize + classify + the source-type table, in one pure call (SPEC §3)."""

from __future__ import annotations

from collections.abc import Iterable

from socialrec_pipeline.routing.classify import classify
from socialrec_pipeline.routing.normalize import parse_url
from socialrec_pipeline.routing.source_types import SOURCE_TYPE_TABLE
from socialrec_pipeline.routing.types import RoutedUrl


def route_strict(url: object) -> RoutedUrl | None:
    """`route` without the safety net: raises on a routing bug (tests use this to find them)."""
    parsed = parse_url(url)
    if parsed is None:
        return None
    source_type, key, canonical = classify(parsed)
    info = SOURCE_TYPE_TABLE[source_type]
    return RoutedUrl(
        input=url,  # type: ignore[arg-type]  # parse_url only accepts str
        canonical_url=canonical,
        source_type=source_type,
        source_key=key,
        object=info.object,
        platform=info.platform,
        subtype=info.subtype,
    )


def route(url: object) -> RoutedUrl | None:
    """Route one URL; None for anything that is not a routable http(s) URL. Never raises.

    A routing bug on a strange input must not fail the token being recorded: the URL comes back as
    None, is recorded `unsupported` (retryable), and the retry path re-routes it after a fix.
    """
    try:
        return route_strict(url)
    except Exception:  # noqa: BLE001 - see docstring; route_strict is what the tests exercise
        return None


def dedupe_routed(routed: Iterable[RoutedUrl | None]) -> list[RoutedUrl]:
    """Drop Nones and repeats of a canonical URL, keeping the first occurrence and input order."""
    seen: set[str] = set()
    out: list[RoutedUrl] = []
    for item in routed:
        if item is not None and item.canonical_url not in seen:
            seen.add(item.canonical_url)
            out.append(item)
    return out


def route_unique(urls: Iterable[object]) -> tuple[list[RoutedUrl], list[object]]:
    """Route many inputs: (unique routed URLs in input order, inputs that did not route)."""
    routed: list[RoutedUrl | None] = []
    rejected: list[object] = []
    for url in urls:
        r = route(url)
        if r is None:
            rejected.append(url)
        routed.append(r)
    return dedupe_routed(routed), rejected
