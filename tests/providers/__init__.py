"""Shared helpers for provider tests: RoutedUrl construction, slow replies, payload mutilation."""

from __future__ import annotations

import copy
import random
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import Any, TypeVar

from hypothesis import strategies as st

from socialrec_pipeline.providers.base import GenerateOptions
from socialrec_pipeline.routing.source_types import SOURCE_TYPE_TABLE, SourceType
from socialrec_pipeline.routing.types import RoutedUrl
from socialrec_pipeline.sandbox.fixture_server import Reply, Request
from tests.conftest import examples

T = TypeVar("T")

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
#: The read timeout of a provider client whose stand-in answers normally. Generous: four test workers
#: and the topology tests' processes share two cores, and an answer from a loaded worker's in-process
#: stand-in once took longer than 0.5 s. Every `slow()` reply of a timeout case waits longer.
CLIENT_TIMEOUT_S = 1.0
#: How long a timeout case's stand-in waits before it answers: always past `CLIENT_TIMEOUT_S`.
SLOW_REPLY_S = 1.5
OPTS = GenerateOptions()

#: Any JSON value, small: for property tests that put arbitrary values into provider fields.
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)

DROP = object()
REPLACEMENTS: tuple[Any, ...] = (None, 7, "x", "", [], {}, True, [None], {"id": None}, DROP)


def make_routed(
    source_type: SourceType, key: str | None, url: str = "https://example.invalid/", *, raw_suffix: str = ""
) -> RoutedUrl:
    """A route as the router would return it; `raw_suffix` is what canonicalisation dropped."""
    info = SOURCE_TYPE_TABLE[source_type]
    return RoutedUrl(url + raw_suffix, url, source_type, key, info.object, info.platform, info.subtype)


def slow(reply: Reply, seconds: float) -> Callable[[Request], Reply]:
    """A handler that answers `reply` only after `seconds` (longer than the client's timeout)."""

    def handler(_request: Request) -> Reply:
        time.sleep(seconds)
        return reply

    return handler


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


def sampled(cases: Iterable[T]) -> list[T]:
    """Every case under the `ci` profile; a local run (`dev`) tries a fixed, spread-out share of them
    (`tests.conftest.examples`), as it does a property test's examples. The mutation loops walk every
    field of an answer through a stand-in over HTTP, ~2 ms a case: X's three answers are 2,200 cases."""
    cases = list(cases)
    keep = examples(len(cases))
    if keep >= len(cases):
        return cases
    # Seeded by the count, so a run repeats the last one's cases; random, not every k-th, because
    # each field's replacements come in runs of ten and a stride would pick the same ones each time.
    chosen = sorted(random.Random(len(cases)).sample(range(len(cases)), keep))
    return [cases[i] for i in chosen]
