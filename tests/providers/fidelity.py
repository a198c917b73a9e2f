"""What every `ok` graph owes the data (issue 13), checked the same way for every generator:

- it passes `validate_graph` (the writer's contract);
- every datetime anywhere in it is aware UTC;
- every metric is a finite number (never a flag or a string) the whitelist keeps, and
  `followers` / `members` are whole numbers;
- it keeps every metric its payload carries (`carried`: a finite, non-negative number, or a
  number written as a string where the provider sends strings);
- no content or account lists a link that routes back at itself;
- no value anywhere in it is the empty string (`""` from a provider means absent).

`carried_*` read a payload the way the contract documents it, independently of the generators, and
say which metrics each object of the graph must keep: `{(kind, platform_key): {metric: value}}`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from socialrec_pipeline.domain.enums import ObjectKind
from socialrec_pipeline.domain.graph import SocialObjectGraph
from socialrec_pipeline.domain.metric_spec import pick_known_metrics
from socialrec_pipeline.recording.writer import validate_graph
from socialrec_pipeline.routing import route

Carried = dict[tuple[ObjectKind, str], dict[str, float]]
_C, _A, _V = ObjectKind.CONTENTS, ObjectKind.ACCOUNTS, ObjectKind.VENUES


def objects(graph: SocialObjectGraph) -> Iterator[tuple[ObjectKind, Any]]:
    for group in graph.groups:
        for kind, obj in ((_A, group.creator), (_V, group.venue), (_C, group.content)):
            if obj is not None:
                yield kind, obj


def _times(value: Any) -> Iterator[datetime]:
    if isinstance(value, datetime):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _times(item)
    elif isinstance(value, list):
        for item in value:
            yield from _times(item)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _identity(url: str | None):
    r = route(url) if url else None
    return None if r is None else (r.platform, r.object, r.subtype, r.source_key)


def assert_faithful(graph: SocialObjectGraph, entry_url: str, carried: Carried | None = None) -> None:
    validate_graph(graph, entry_url)
    found: dict[tuple[ObjectKind, str], list[Any]] = {}
    for kind, obj in objects(graph):
        dumped = obj.model_dump()
        for moment in _times(dumped):
            assert moment.tzinfo is not None and moment.utcoffset() == timedelta(0), (obj, moment)
        # An absent optional string arrives as "": it is stored as nothing, never as "".
        assert "" not in set(_strings(dumped)), (kind, dumped)
        for name, value in obj.metrics.items():
            assert isinstance(value, (int, float)) and not isinstance(value, bool), (name, value)
            assert math.isfinite(value), (name, value)
        assert pick_known_metrics(obj.platform, kind, obj.metrics) == obj.metrics, (kind, obj.metrics)
        for whole in ("followers", "members"):
            value = getattr(obj, whole, None)
            assert value is None or (isinstance(value, int) and not isinstance(value, bool)), (whole, value)
        if obj.platform_key:
            found.setdefault((kind, obj.platform_key.strip().lower()), []).append(obj)
    entry = route(entry_url)
    for group in graph.groups:
        owners = []
        if group.content is not None:
            owners.append((group.content, group.content.url or entry_url))
        if group.creator is not None and group.ref == graph.root_ref and entry is not None and entry.object is _A:
            owners.append((group.creator, entry_url))
        for obj, own_url in owners:
            own = _identity(own_url)
            assert own is None or own not in {_identity(link) for link in obj.links}, (obj.links, own_url)
    for (kind, key), metrics in (carried or {}).items():
        # One object may appear in several groups (a tweet quoting its own author's tweet): the
        # payload's copy must survive in one of them.
        copies = found.get((kind, key.strip().lower()), [])
        assert copies, (kind, key, sorted(found))
        for name, value in metrics.items():
            kept = [o.metrics.get(name) for o in copies]
            assert any(v is not None and abs(v - value) <= 0.5 for v in kept), (kind, key, name, value, kept)


# -- what a payload carries ------------------------------------------------------------------------

def metric_value(value: Any, *, strings: bool = True) -> float | None:
    """A metric as the contract sends it: a finite non-negative number (or digits, where strings
    are allowed); None when the payload does not carry one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) and value >= 0 else None
    if strings and isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        return float(int(value.strip()))
    return None


def pick(source: Any, names: tuple[str, ...], *, strings: bool = True) -> dict[str, float]:
    source = source if isinstance(source, dict) else {}
    return {n: v for n in names if (v := metric_value(source.get(n), strings=strings)) is not None}


def key_of(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    return value.strip() if isinstance(value, str) and value.strip() else None


def add(carried: Carried, kind: ObjectKind, key: str | None, metrics: dict[str, float]) -> None:
    if key and metrics:
        carried.setdefault((kind, key), {}).update(metrics)
