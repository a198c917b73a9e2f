"""Validating a `SocialObjectGraph` before anything is written (SPEC §5): the contract checks, the
order the groups are written in (originals first) and each group's path from the root.
`GraphWriter` (`writer.py`) writes only a graph that passed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from socialrec_pipeline.domain.errors import GraphContractError
from socialrec_pipeline.domain.graph import GraphGroup, SocialObjectGraph
from socialrec_pipeline.domain.models import (
    LINK_MAX_DEPTH,
)


@dataclass(frozen=True)
class GraphPlan:
    """A validated graph: groups in write order (originals first) and each group's link depth."""

    graph: SocialObjectGraph
    order: list[GraphGroup]
    depth: dict[str, int]
    #: Refs on the way from each group to the root (len = uncapped distance); feeds TokenLink.of.
    path: dict[str, list[str]]


def validate_graph(graph: SocialObjectGraph | None, entry_url: str) -> GraphPlan:
    """Check the graph contract; raise `GraphContractError(entry_url, reason)` on the first breach
    (no graph at all is one)."""

    def fail(reason: str) -> GraphContractError:
        return GraphContractError(entry_url, reason)

    if not isinstance(graph, SocialObjectGraph):
        raise fail(f"expected a SocialObjectGraph, got {type(graph).__name__}")
    if not graph.groups:
        raise fail("graph has no groups")
    by_ref: dict[str, GraphGroup] = {}
    for group in graph.groups:
        if group.ref in by_ref:
            raise fail(f"duplicate ref {group.ref!r}")
        by_ref[group.ref] = group
    for group in graph.groups:
        if group.is_empty():
            raise fail(f"group {group.ref!r} is empty")
    if graph.root_ref not in by_ref:
        raise fail(f"root_ref {graph.root_ref!r} does not name a group")
    for group in graph.groups:
        if group.parent_ref is not None and group.parent_ref not in by_ref:
            raise fail(f"group {group.ref!r} has unresolved parent_ref {group.parent_ref!r}")
    order = _originals_first(graph.groups, by_ref, fail)
    for group in graph.groups:
        if group.creator is not None and not (group.creator.platform_key or "").strip():
            raise fail(f"account in group {group.ref!r} has no platform_key")
        if group.venue is not None and not (group.venue.platform_key or "").strip():
            raise fail(f"venue in group {group.ref!r} has no platform_key")
        # A derived content has no entry URL; without its own URL it could not be identified.
        if group.content is not None and group.ref != graph.root_ref and not group.content.url:
            raise fail(f"derived content in group {group.ref!r} has no url of its own")
    path = _paths_from_root(graph, by_ref)
    depth = {ref: min(len(p), LINK_MAX_DEPTH) for ref, p in path.items()}
    return GraphPlan(graph=graph, order=order, depth=depth, path=path)


def _originals_first(
    groups: Sequence[GraphGroup], by_ref: Mapping[str, GraphGroup], fail: Callable[[str], GraphContractError]
) -> list[GraphGroup]:
    """Topological order by parent_ref (parent before child); a cycle is a contract breach."""
    children: dict[str, list[str]] = {ref: [] for ref in by_ref}
    for g in groups:
        if g.parent_ref is not None:
            if g.parent_ref == g.ref:
                raise fail(f"cycle: group {g.ref!r} is its own parent")
            children[g.parent_ref].append(g.ref)
    queue = deque(g.ref for g in groups if g.parent_ref is None)
    order: list[GraphGroup] = []
    while queue:
        ref = queue.popleft()
        order.append(by_ref[ref])
        queue.extend(children[ref])
    if len(order) != len(groups):
        stuck = sorted(set(by_ref) - {g.ref for g in order})
        raise fail(f"cycle through parent_ref among groups {stuck}")
    return order


def _paths_from_root(graph: SocialObjectGraph, by_ref: Mapping[str, GraphGroup]) -> dict[str, list[str]]:
    """Distance over parent edges (either direction) from the root group.

    A group not connected to the root at all gets the maximum depth: it was observed through this
    URL but is related to the root only loosely.
    """
    neighbours: dict[str, set[str]] = {ref: set() for ref in by_ref}
    for g in graph.groups:
        if g.parent_ref is not None:
            neighbours[g.ref].add(g.parent_ref)
            neighbours[g.parent_ref].add(g.ref)
    path: dict[str, list[str]] = {graph.root_ref: []}
    queue = deque([graph.root_ref])
    while queue:
        ref = queue.popleft()
        for nxt in sorted(neighbours[ref]):
            if nxt not in path:
                path[nxt] = [*path[ref], ref]
                queue.append(nxt)
    for ref in by_ref:
        path.setdefault(ref, [f"~{i}" for i in range(LINK_MAX_DEPTH)])
    return path
