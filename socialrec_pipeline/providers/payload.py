"""Tolerant readers for provider payloads: a field of the wrong type reads as absent.

Every generator reads decoded JSON it does not control (contracts: "accept both shapes, treat
surprises as `error`, never crash"), so these never raise on a surprising value. The string readers
differ on purpose — each keeps the exact behaviour its generator was written and tested with:

| reader | whitespace-only | surrounding blanks |
| --- | --- | --- |
| `first_str` | None | kept |
| `stripped_str` | None | removed |
| `nonempty_str` | kept | kept |
"""

from __future__ import annotations

import re
from typing import Any

from socialrec_pipeline.providers.http import as_int


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


def scalars(source: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """The `keys` whose values are JSON scalars (str, number, bool); None, lists and objects skipped."""
    return {k: source[k] for k in keys if isinstance(source.get(k), (str, int, float, bool))}


def int_metrics(source: dict[str, Any], keys: tuple[str, ...]) -> dict[str, int]:
    """Provider metric names kept as-is; integers and integer strings (YouTube) converted."""
    return {k: v for k in keys if (v := as_int(source.get(k))) is not None}


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
