"""Tolerant readers for provider payloads: a field of the wrong type reads as absent.

Every generator reads decoded JSON it does not control (contracts: "accept both shapes, treat
surprises as `error`, never crash"), so these never raise on a surprising value. The string readers
differ on purpose — each keeps the exact behaviour its generator was written and tested with:

| reader | whitespace-only | surrounding blanks |
| --- | --- | --- |
| `first_str` | None | kept |
| `stripped_str` | None | removed |
| `nonempty_str` | kept | kept |

Absent optional strings arrive as `""` in real answers (twitterapi.io's `inReplyToId` on a tweet
that is not a reply, and others): every reader here treats `""` as absent, so nothing is stored
for it. Numbers may arrive as floats where the documentation shows integers (the TikTok actor's
`videoMeta.duration` is `26.981`): `as_number` keeps them, `as_count` rounds them to a whole count;
neither drops a finite number silently.
"""

from __future__ import annotations

import math
import re
from typing import Any

from socialrec_pipeline.providers.http import as_int
from socialrec_pipeline.routing.route import route


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def first_str(value: Any) -> str | None:
    """A string with some non-blank character, as sent; else None."""
    return value if isinstance(value, str) and value.strip() else None


def stripped_str(value: Any) -> str | None:
    """A string without its surrounding blanks; None when nothing is left."""
    return value.strip() or None if isinstance(value, str) else None


def nonempty_str(value: Any) -> str | None:
    """Any string but the empty one, as sent."""
    return value if isinstance(value, str) and value != "" else None


def key_str(value: Any) -> str | None:
    """A provider id as a string key: integers (not bools), or strings with a non-blank character."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    return first_str(value)


def stripped_key(value: Any) -> str | None:
    """Like `key_str`, but a string id loses its surrounding blanks."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    return nonempty_str(value.strip()) if isinstance(value, str) else None


def present(value: Any) -> bool:
    """A JSON scalar that says something: not None, not a blank string (`""` means absent), not a
    non-finite float. Lists and objects are not scalars."""
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, (int, bool))


def scalars(source: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """The `keys` whose values are JSON scalars (str, number, bool) as sent; None, `""`, blank
    strings, lists and objects skipped."""
    return {k: source[k] for k in keys if present(source.get(k))}


def as_number(value: Any) -> int | float | None:
    """A finite JSON number as sent (int stays int, float stays float), or a number sent as a
    string (`"15234"` → 15234, `"26.981"` → 26.981); None for anything else, flags included."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        text = value.strip()
        if as_int(text) is not None:
            return as_int(text)
        if re.fullmatch(r"-?\d+\.\d+", text):
            number = float(text)
            return number if math.isfinite(number) else None
    return None


def as_count(value: Any) -> int | None:
    """A count (followers, plays, members): `as_number`, a float rounded to the nearest whole."""
    number = as_number(value)
    if number is None:
        return None
    return number if isinstance(number, int) else int(round(number))


def int_metrics(source: dict[str, Any], keys: tuple[str, ...]) -> dict[str, int]:
    """Provider metric names kept as-is; counts as whole numbers: integers, integer strings
    (YouTube) and floats (rounded) all read."""
    return {k: v for k in keys if (v := as_count(source.get(k))) is not None}


def counted_metrics(source: dict[str, Any], keys: tuple[str, ...]) -> dict[str, int]:
    """`int_metrics` without negatives: Apify actors report a hidden count as -1 (store nothing)."""
    return {k: v for k, v in int_metrics(source, keys).items() if v >= 0}


def numbers(source: dict[str, Any], keys: tuple[str, ...]) -> dict[str, int | float]:
    """The `keys` holding JSON numbers as sent (Reddit's `upvote_ratio` is a float); bools skipped."""
    return {
        k: v for k in keys if isinstance(v := source.get(k), (int, float)) and not isinstance(v, bool)
    }


_URL_IN_TEXT = re.compile(r"https?://[^\s)\]>\"'<]+")


def urls_in_text(text: str | None) -> list[str]:
    """The http(s) URLs written in free text, in order, each once; sentence punctuation that
    follows a URL (`, . ; : ! ?`) is not part of it."""
    found: list[str] = []
    for match in _URL_IN_TEXT.findall(text or ""):
        url = match.rstrip(".,;:!?")
        if url not in found and "://" in url and url.split("://", 1)[1]:
            found.append(url)
    return found


def _identity(url: str | None) -> tuple[str, str, str | None, str | None] | None:
    """What a URL names, as the router reads it: (platform, object, subtype, key)."""
    routed = route(url) if url else None
    if routed is None:
        return None
    return (str(routed.platform), str(routed.object), routed.subtype, routed.source_key)


def outbound_links(links: list[str], *own_urls: str | None) -> list[str]:
    """`links` without the ones that point back at the object being recorded, each URL once.

    An object's own URLs (`own_urls`: its canonical URL, the entry URL, a profile URL) are not
    outbound links: a Reddit gallery post's `url` is `reddit.com/gallery/{id}`, a poll's
    `reddit.com/poll/{id}`, a repository's homepage is often the repository itself. A link is
    dropped when the router reads it as the same platform object (same platform, kind, subtype and
    key), whatever its spelling.
    """
    own = {i for i in map(_identity, own_urls) if i is not None}
    kept: list[str] = []
    for link in links:
        if link in kept or (own and _identity(link) in own):
            continue
        kept.append(link)
    return kept
