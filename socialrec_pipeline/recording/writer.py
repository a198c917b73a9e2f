"""The graph writer: validate a `SocialObjectGraph`, then write rows → metrics → links.

There are no transactions, so order is the only tool (SPEC §5):
- nothing is written before the whole graph is validated;
- rows before metrics before links, so a crash never leaves a link to a missing row;
- groups topologically by `parent_ref` (originals first) and, inside a group, creator → venue →
  content, so `creator_id` / `venue_id` / `parent_content_id` are set when a row is created.
  Ids are issued client-side, so this order holds inside one ordered bulk insert per row kind.

Accounts and venues are completed and refreshed by every observation (an update pipeline per
row, store/identities.py); contents rows are not updated except for new source URLs.

Round trips for one graph: accounts upsert, venues upsert, contents insert, source-url additions,
metric first points, links — at most 6 writes whatever the number of groups, plus the identity
reads (contents by URL, contents by key, ids of accounts/venues that already existed) and, when a
content's creator arrived as a thin copy, one read of those creators' rows (author snapshots).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from bson import ObjectId
from pymongo.errors import BulkWriteError, DuplicateKeyError

from socialrec_pipeline.domain.enums import ContentSubtype, FetchStatus, ObjectKind, Platform, VenueSubtype
from socialrec_pipeline.domain.errors import GraphContractError
from socialrec_pipeline.domain.graph import AccountDraft, ContentDraft, GraphGroup, SocialObjectGraph, VenueDraft
from socialrec_pipeline.domain.models import (
    LINK_MAX_DEPTH,
    Account,
    AuthorSnapshot,
    Content,
    MetricPoint,
    SourceUrlEntry,
    TokenLink,
    Venue,
)
from socialrec_pipeline.domain.models.identities import has_fresh_profile, is_full_profile
from socialrec_pipeline.store.metric_series import FirstPoint
from socialrec_pipeline.store.store import Store

_DUPLICATE_KEY = 11000
#: Re-resolve-and-insert rounds after losing an insert race to a concurrent writer.
_MAX_CONTENT_ROUNDS = 4


# --------------------------------------------------------------------------- validation


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


# --------------------------------------------------------------------------- writing


@dataclass
class GroupIds:
    creator_id: ObjectId | None = None
    venue_id: ObjectId | None = None
    content_id: ObjectId | None = None


@dataclass
class WriteResult:
    """Ids per group ref and what the write changed (for statuses and run metadata)."""

    entry_url: str
    ids: dict[str, GroupIds] = field(default_factory=dict)
    root_ref: str = ""
    contents_inserted: int = 0
    contents_existing: int = 0
    accounts: int = 0
    venues: int = 0
    source_urls_added: int = 0
    metric_points: int = 0
    links_appended: int = 0


#: (platform, subtype, platform_key) of a contents row.
ContentKey = tuple[str, str, str]


def _key_of(draft: ContentDraft) -> ContentKey | None:
    return (str(draft.platform), str(draft.subtype), draft.platform_key) if draft.platform_key else None


class GraphObject(NamedTuple):
    """One distinct object of a written graph, as its first metric point and its link need it."""

    platform: Platform
    subtype: ContentSubtype | VenueSubtype | None
    #: Refs on the way from the object's group to the root (see `GraphPlan.path`).
    ancestors: list[str]
    metrics: dict[str, Any]


@dataclass
class ContentResolution:
    """One round of contents identity: rows to insert, URLs to add to existing rows, counts."""

    new_rows: list[Content] = field(default_factory=list)
    additions: list[tuple[ObjectId, SourceUrlEntry]] = field(default_factory=list)
    existing: int = 0
    #: Rows an earlier round of this write inserted (found now, but counted as inserted).
    ours: set[ObjectId] = field(default_factory=set)


class GraphWriter:
    """Writes validated graphs through the store's repositories (see module docstring)."""

    def __init__(
        self,
        store: Store,
        clock: Callable[[], datetime] | None = None,
        *,
        profile_max_age: timedelta = timedelta(0),
    ) -> None:
        self.store = store
        self.clock = clock or (lambda: datetime.now(UTC))
        #: `SOCIALREC_PROFILE_MAX_AGE_HOURS`: a stored profile this young completes the author
        #: snapshot of a content whose creator arrived as a thin copy (0: never).
        self.profile_max_age = profile_max_age

    def write(
        self,
        graph: SocialObjectGraph | None,
        *,
        entry_url: str,
        token_address: str,
        observed_at: datetime | None = None,
    ) -> WriteResult:
        """Rows → metrics → links (SPEC §5). The links carry no copy of the token's
        `first_transfer_at`: the marker holds it, the one place it can move earlier
        (docs/decisions.md, "One first-transfer time, on the marker")."""
        plan = validate_graph(graph, entry_url)  # raises before any write
        observed = observed_at or self.clock()
        result = WriteResult(entry_url=entry_url, root_ref=plan.graph.root_ref)
        ids = {g.ref: GroupIds() for g in plan.order}

        # 1. accounts (atomic upsert on the unique key), then venues that point at them.
        self._write_identities(plan, ids, observed, result)

        # 2. contents (identity: source URL, then key, else insert), originals first.
        self._write_contents(plan, ids, entry_url, observed, result)

        # 3. first metric point per object, 4. links.
        objects = self._objects(plan, ids)
        points: list[FirstPoint] = []
        for (kind, object_id), obj in objects.items():
            point = MetricPoint.of(obj.platform, kind, obj.metrics, observed)
            if point.metrics:
                points.append(FirstPoint(kind, object_id, obj.platform, point))
        if points:
            self.store.metrics.record_first_points(points)
        result.metric_points = len(points)
        linked_at = self.clock()
        links = [
            TokenLink.of(
                token_address=token_address,
                object=kind,
                object_id=object_id,
                source_url=entry_url,
                platform=obj.platform,
                subtype=obj.subtype,
                ancestor_ids=obj.ancestors,
                linked_at=linked_at,
                observed_at=observed,
            )
            for (kind, object_id), obj in objects.items()
        ]
        self.store.links.append_many(links)
        result.links_appended = len(links)
        result.ids = ids
        return result

    def refresh_identities(
        self, graph: SocialObjectGraph | None, entry_url: str, observed_at: datetime
    ) -> WriteResult:
        """Complete and refresh the accounts and venues of a re-observed graph (SPEC §5), without
        contents, metrics or links: the metric refresh's share of "every observation"."""
        plan = validate_graph(graph, entry_url)
        result = WriteResult(entry_url=entry_url, root_ref=plan.graph.root_ref)
        ids = {g.ref: GroupIds() for g in plan.order}
        self._write_identities(plan, ids, observed_at, result)
        result.ids = ids
        return result

    def _write_identities(
        self, plan: GraphPlan, ids: dict[str, GroupIds], observed: datetime, result: WriteResult
    ) -> None:
        """One bulk write per row kind: each row is completed and refreshed by this observation
        (store/identities.py has the per-field rules)."""
        creators = [(g.ref, _account(g.creator, observed)) for g in plan.order if g.creator is not None]
        account_ids = self.store.accounts.upsert_many([account for _, account in creators])
        for ref, account in creators:
            ids[ref].creator_id = account_ids[(str(account.platform), account.platform_key)]
        result.accounts = len(account_ids)
        venues = [
            # The group's creator authored the venue only when the group has no content.
            (g.ref, _venue(g.venue, observed, ids[g.ref].creator_id if g.content is None else None))
            for g in plan.order
            if g.venue is not None
        ]
        venue_ids = self.store.venues.upsert_many([venue for _, venue in venues])
        for ref, venue in venues:
            ids[ref].venue_id = venue_ids[(str(venue.platform), venue.platform_key)]
        result.venues = len(venue_ids)

    # -- contents --------------------------------------------------------------------------------
    def _write_contents(
        self, plan: GraphPlan, ids: dict[str, GroupIds], entry_url: str, observed: datetime, result: WriteResult
    ) -> None:
        groups = [g for g in plan.order if g.content is not None]
        if not groups:
            return
        wanted_urls = {g.ref: self._urls_of(g, plan.graph.root_ref, entry_url) for g in groups}
        # Ids of rows we tried to insert in a round that lost a race. An ordered insert stops at
        # the first duplicate, so the rows before it did go in: they are ours, and when the next
        # round finds them they count as inserted, not as existing. Ids are issued here, so a row
        # carrying one of them can only come from this writer.
        attempted: set[ObjectId] = set()
        resolution = ContentResolution()
        authors = self._stored_authors(groups, ids, observed)
        for round_ in range(_MAX_CONTENT_ROUNDS):
            resolution = self._resolve_contents(groups, wanted_urls, ids, observed, attempted, authors)
            try:
                self.store.contents.insert_many(resolution.new_rows)
            except (BulkWriteError, DuplicateKeyError) as exc:
                if not _only_duplicates(exc) or round_ == _MAX_CONTENT_ROUNDS - 1:
                    raise
                attempted.update(c.id for c in resolution.new_rows)
                continue  # a concurrent writer won some rows: re-resolve and insert the rest
            result.contents_inserted = len(resolution.new_rows) + len(resolution.ours)
            result.contents_existing = resolution.existing
            break
        if resolution.additions:
            result.source_urls_added = self._add_source_urls(resolution.additions)

    def _stored_authors(
        self, groups: Sequence[GraphGroup], ids: Mapping[str, GroupIds], observed: datetime
    ) -> dict[ObjectId, Account]:
        """The stored rows of creators that arrived as thin copies (`data.source_ref`: a repo's
        owner, a post's author) and hold a full profile fresh at `observed`: the profile was
        rightly not fetched again, and the snapshot takes its facts from the row (one read, by
        `_id`, only when such a creator is in the graph). The rows are read after this
        observation's upsert, so the snapshot is the account as known at this observation."""
        if not self.profile_max_age:
            return {}
        thin = [
            creator_id
            for g in groups
            if g.creator is not None
            and not is_full_profile(g.creator.data)
            and (creator_id := ids[g.ref].creator_id) is not None
        ]
        if not thin:
            return {}
        return {
            row.id: row
            for row in self.store.accounts.find_by_ids(thin)
            if has_fresh_profile(row, observed, self.profile_max_age)
        }

    def _resolve_contents(
        self,
        groups: Sequence[GraphGroup],
        wanted_urls: Mapping[str, list[str]],
        ids: dict[str, GroupIds],
        observed: datetime,
        attempted: set[ObjectId],
        authors: Mapping[ObjectId, Account],
    ) -> ContentResolution:
        """Identity of each group's content: an existing row by source URL, then by key; else a
        new row (one per content, however often the graph holds it). Sets `ids[ref].content_id`."""
        by_url: dict[str, Content] = {}
        for found in self.store.contents.find_by_source_urls(u for us in wanted_urls.values() for u in us):
            for url in found.urls:
                by_url.setdefault(url, found)
        keys = [k for g in groups if g.content is not None and (k := _key_of(g.content)) is not None]
        by_key = {
            (str(r.platform), str(r.subtype), r.platform_key): r
            for r in (self.store.contents.find_by_platform_keys(keys) if keys else [])
        }
        out = ContentResolution()
        planned: dict[str | ContentKey, ObjectId] = {}  # same content twice in one graph → one row
        for g in groups:
            draft = g.content
            if draft is None:
                continue
            urls, key = wanted_urls[g.ref], _key_of(draft)
            row = next((by_url[u] for u in urls if u in by_url), None) or (by_key.get(key) if key else None)
            if row is not None:
                ids[g.ref].content_id = row.id
                if row.id in attempted:
                    out.ours.add(row.id)
                else:
                    out.existing += 1
                out.additions += [(row.id, _entry(u, observed)) for u in urls if u not in row.urls]
                continue
            known = next((planned[u] for u in urls if u in planned), None) or (planned.get(key) if key else None)
            if known is not None:
                ids[g.ref].content_id = known
                continue
            parent_ids = ids.get(g.parent_ref) if g.parent_ref else None
            creator_id = ids[g.ref].creator_id
            stored_author = authors.get(creator_id) if creator_id is not None else None
            content = _content(
                draft, urls, observed, ids[g.ref], g, parent_ids.content_id if parent_ids else None, stored_author
            )
            out.new_rows.append(content)
            ids[g.ref].content_id = content.id
            markers: list[str | ContentKey] = [*urls, *([key] if key else [])]
            for marker in markers:
                planned[marker] = content.id
        return out

    def _add_source_urls(self, additions: list[tuple[ObjectId, SourceUrlEntry]]) -> int:
        """New source URLs of existing rows; returns how many were added."""
        try:
            return self.store.contents.add_source_urls(additions)
        except (BulkWriteError, DuplicateKeyError) as exc:
            # The URL already identifies another row; the unique index keeps it there.
            if not _only_duplicates(exc):
                raise
            return int((exc.details or {}).get("nModified", 0)) if isinstance(exc, BulkWriteError) else 0

    @staticmethod
    def _urls_of(group: GraphGroup, root_ref: str, entry_url: str) -> list[str]:
        own = group.content.url if group.content else None
        if group.ref == root_ref:
            return [entry_url] + ([own] if own and own != entry_url else [])
        return [own] if own else []

    @staticmethod
    def _objects(plan: GraphPlan, ids: Mapping[str, GroupIds]) -> dict[tuple[ObjectKind, ObjectId], GraphObject]:
        """Distinct objects of the graph; the shallowest group wins."""
        objects: dict[tuple[ObjectKind, ObjectId], GraphObject] = {}
        for g in sorted(plan.order, key=lambda g: plan.depth[g.ref]):
            ancestors = plan.path[g.ref]
            entries: list[
                tuple[ObjectKind, ObjectId | None, AccountDraft | VenueDraft | ContentDraft | None, Any]
            ] = [
                (ObjectKind.ACCOUNTS, ids[g.ref].creator_id, g.creator, None),
                (ObjectKind.VENUES, ids[g.ref].venue_id, g.venue, g.venue.subtype if g.venue else None),
                (ObjectKind.CONTENTS, ids[g.ref].content_id, g.content, g.content.subtype if g.content else None),
            ]
            for kind, object_id, draft, subtype in entries:
                if draft is None or object_id is None or (kind, object_id) in objects:
                    continue
                objects[(kind, object_id)] = GraphObject(Platform(draft.platform), subtype, ancestors, draft.metrics)
        return objects


def _only_duplicates(exc: BulkWriteError | DuplicateKeyError) -> bool:
    if isinstance(exc, DuplicateKeyError):
        return True
    errors = (exc.details or {}).get("writeErrors", [])
    return bool(errors) and all(e.get("code") == _DUPLICATE_KEY for e in errors)


def _entry(url: str, observed: datetime) -> SourceUrlEntry:
    return SourceUrlEntry(url=url, status=FetchStatus.OK, observed_at=observed)


def _account(d: AccountDraft, observed: datetime) -> Account:
    return Account.of(
        platform=d.platform,
        platform_key=_validated_key(d),
        observed_at=observed,
        handle=d.handle,
        account_created_at=d.account_created_at,
        display_name=d.display_name,
        bio=d.bio,
        links=d.links,
        declared_handles=d.declared_handles,
        known_wallets=d.known_wallets,
        followers=d.followers,
        unavailable=d.unavailable,
        data=d.data,
    )


def _venue(d: VenueDraft, observed: datetime, creator_id: ObjectId | None) -> Venue:
    return Venue.of(
        platform=d.platform,
        subtype=d.subtype,
        platform_key=_validated_key(d),
        observed_at=observed,
        name=d.name,
        description=d.description,
        venue_created_at=d.venue_created_at,
        creator_id=creator_id,
        members=d.members,
        data=d.data,
    )


def _validated_key(d: AccountDraft | VenueDraft) -> str:
    """The key `validate_graph` has already required of every account and venue."""
    if not d.platform_key:
        raise ValueError(f"{d.platform} {type(d).__name__} without platform_key in a validated graph")
    return d.platform_key


def _content(
    d: ContentDraft,
    urls: list[str],
    observed: datetime,
    group_ids: GroupIds,
    g: GraphGroup,
    parent_id: ObjectId | None,
    stored_author: Account | None = None,
) -> Content:
    creator = g.creator
    author = _author(creator, group_ids.creator_id, stored_author) if creator is not None else None
    return Content.of(
        platform=d.platform,
        subtype=d.subtype,
        platform_key=d.platform_key,
        source_urls=[_entry(u, observed) for u in urls],
        observed_at=observed,
        creator_id=group_ids.creator_id,
        venue_id=group_ids.venue_id,
        parent_content_id=parent_id,
        parent_relation=g.parent_relation if parent_id is not None else None,
        published_at=d.published_at,
        text=d.text,
        links=d.links,
        tags=d.tags,
        mentions=d.mentions,
        author=author,
        metrics=d.metrics,
        data=d.data,
    )


def _author(creator: AccountDraft, account_id: ObjectId | None, stored: Account | None) -> AuthorSnapshot:
    """The author as seen at this observation: what the answer embedded, completed from the
    stored row when that row holds a fresh full profile (`GraphWriter._stored_authors`)."""
    followers = creator.followers
    display_name = creator.display_name
    account_created_at = creator.account_created_at
    if stored is not None:
        followers = followers if followers is not None else stored.metrics.followers
        display_name = display_name or stored.display_name
        account_created_at = account_created_at or stored.account_created_at
    return AuthorSnapshot(
        account_id=account_id,
        handle=creator.handle,
        display_name=display_name,
        followers=followers,
        account_created_at=account_created_at,
    )
