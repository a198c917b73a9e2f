"""Shared helpers for provider tests: RoutedUrl construction and payload mutilation."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from socialrec_pipeline.routing.source_types import SOURCE_TYPE_TABLE, SourceType
from socialrec_pipeline.routing.types import RoutedUrl

DROP = object()
REPLACEMENTS: tuple[Any, ...] = (None, 7, "x", "", [], {}, True, [None], {"id": None}, DROP)


def make_routed(source_type: SourceType, key: str | None, url: str = "https://example.invalid/") -> RoutedUrl:
    info = SOURCE_TYPE_TABLE[source_type]
    return RoutedUrl(url, url, source_type, key, info.object, info.platform, info.subtype)


def mutilations(payload: Any, list_items: int = 2) -> Iterator[Any]:
    """Copies of `payload` with one value replaced by a wrong type, None, or removed."""

    def paths(node: Any, path: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], Any]]:
        if isinstance(node, dict):
            for key, value in node.items():
                for replacement in REPLACEMENTS:
                    yield path + (key,), replacement
                yield from paths(value, path + (key,))
        elif isinstance(node, list):
            for index, value in enumerate(node[:list_items]):
                yield path + (index,), None
                yield from paths(value, path + (index,))

    for where, replacement in paths(payload, ()):
        mutated = copy.deepcopy(payload)
        node = mutated
        for step in where[:-1]:
            node = node[step]
        if replacement is DROP:
            del node[where[-1]]
        else:
            node[where[-1]] = replacement
        yield mutated
