"""Integrity checks of the stored graph (SPEC §4, §5), runnable without Dagster.

Each check is a function `check_x(db, ...) -> CheckOutcome`: whether it passed, how many
violations it found, up to `SAMPLE` offending `_id`s, the counts it is based on and a sentence
stating its coverage. The Dagster asset checks (`defs/integrity.py`) are thin shells over these.

How they read (the embedded server is slow on anything but an index, and on paged `$gt` scans):
- A **bounded batch scan** is one cursor over the collection's `_id_` index (hinted), with a
  projection of the few fields the rule needs, stopped after `limit` documents. Its coverage
  (`scanned` of `total`) is reported; a check that did not see every document says so.
- **Lookups** are `$in` queries on `_id` or on a unique key for up to `LOOKUP_CHUNK` values; for
  more, the target collection is read once by a bounded scan instead (docs/decisions.md,
  "Integrity reads").
- The inbox check reads one `$in` on `idx_inbox_state`.

Rules adapted to the stored shape: `token_links` has no `lineage` (SPEC §4), so the depth rule
is "`link_depth` is an integer in 0..LINK_MAX_DEPTH, and every (token, source URL) that has links
has a depth-0 link" (the root group of a graph is at depth 0; the others hang off it).
Links and markers written within `recent` of the check are left out of the cross-collection rules:
a recording writes links before its marker, and a retry replaces a URL's links before its status.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo.collection import Collection
from pymongo.database import Database

from socialrec_pipeline.domain.enums import FetchStatus, ObjectKind
from socialrec_pipeline.domain.models.metric_series import SERIES_POINT_CAP
from socialrec_pipeline.domain.models.token_links import LINK_MAX_DEPTH
from socialrec_pipeline.store.collections import (
    ACCOUNTS,
    CONTENTS,
    METRIC_SERIES,
    TOKEN_LINKS,
    TOKENS,
    VENUES,
    collection,
)
from socialrec_pipeline.store.tokens import OLDEST_ATTEMPT, derive_oldest_attempt

#: A database handle whose documents are plain dicts.
Db = Database[dict[str, Any]]

#: Offending ids reported per check.
SAMPLE = 20
#: Documents one bounded scan reads at most (per collection, per check).
DEFAULT_SCAN_LIMIT = 1_000_000
#: Ids per `$in` lookup.
LOOKUP_CHUNK = 1_000
#: Cursor batch size of a scan.
SCAN_BATCH = 5_000
#: Links / markers younger than this are left out of the cross-collection rules (see module doc).
DEFAULT_RECENT = timedelta(minutes=30)
#: URL statuses under which a token may hold links for that URL: only a successful fetch writes a graph.
LINKABLE_STATUSES: frozenset[FetchStatus] = frozenset({FetchStatus.OK})
#: `record_inbox` is an operational collection of the stream (stream/inbox.py); named here so the
#: store does not import the stream layer.
INBOX = "record_inbox"
#: An open inbox entry whose last event is older than this is stuck without being surfaced. The
#: Dagster check passes the relaunch cap of the stream (its backoff schedule plus a margin).
DEFAULT_INBOX_MAX_AGE = timedelta(hours=24)
#: Inbox states that need no one's attention: `stuck` is the relaunch policy giving up, shown to
#: operators (tick log, cursor); `idle` is a run that ended green without a marker (token unknown
#: upstream, or cancelled), relaunched by the next event.
INBOX_SURFACED_STATES: frozenset[str] = frozenset({"stuck", "idle"})
#: Every state an entry can be in (stream/inbox.py): the open ones are these minus the surfaced.
INBOX_STATES: frozenset[str] = frozenset({"pending", "launched", "retrying", "stuck", "idle"})

_VALID_STATUSES = frozenset(str(s) for s in FetchStatus)
_KINDS = {str(k): k for k in ObjectKind}


@dataclass
class CheckOutcome:
    name: str
    passed: bool
    violations: int
    sample_ids: list[str]
    counts: dict[str, int] = field(default_factory=dict)
    coverage: str = ""
    #: Whether the check read everything its rule covers; a check that did not cannot say "passed".
    complete: bool = True

    @property
    def state(self) -> str:
        """"failed" (violations found), "incomplete" (none in what was read, but not all was read) or "passed"."""
        if not self.passed:
            return "failed"
        return "passed" if self.complete else "incomplete"

    def summary(self) -> str:
        states = {
            "passed": "passed",
            "incomplete": "no violation in the part read, NOT everything read",
            "failed": f"FAILED ({self.violations} violation(s))",
        }
        return f"{self.name}: {states[self.state]}; {self.coverage}"


class _Sample:
    """Counts violations and keeps the first `SAMPLE` ids."""

    def __init__(self) -> None:
        self.count = 0
        self.ids: list[str] = []

    def add(self, doc_id: Any) -> None:
        self.count += 1
        if len(self.ids) < SAMPLE:
            self.ids.append(str(doc_id))


class _Scan:
    """One hinted cursor over `_id_`, projected, stopped after `limit` documents."""

    def __init__(
        self,
        col: Collection[dict[str, Any]],
        projection: dict[str, Any],
        limit: int,
        query: dict[str, Any] | None = None,
    ) -> None:
        self.col = col
        self.projection = projection
        self.limit = limit
        self.query = query or {}
        self.scanned = 0
        self.total = 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        self.total = self.col.estimated_document_count()
        cursor = self.col.find(self.query, self.projection).hint("_id_").batch_size(SCAN_BATCH)
        if self.limit:
            cursor = cursor.limit(self.limit)
        try:
            for doc in cursor:
                self.scanned += 1
                yield doc
        finally:
            cursor.close()

    @property
    def complete(self) -> bool:
        return self.scanned >= self.total

    def coverage(self, what: str = "") -> str:
        extent = "every document" if self.complete else f"the first {self.scanned} by _id (limit {self.limit})"
        return (
            f"bounded batch scan of {self.col.name} on _id_: {self.scanned} of ~{self.total} documents read "
            f"({extent}){what}"
        )

    def counts(self) -> dict[str, int]:
        return {"scanned": self.scanned, "total": self.total}


def _outcome(name: str, sample: _Sample, counts: dict[str, int], coverage: str, complete: bool) -> CheckOutcome:
    return CheckOutcome(
        name=name,
        passed=sample.count == 0,
        violations=sample.count,
        sample_ids=sample.ids,
        counts={"violations": sample.count, **counts},
        coverage=coverage,
        complete=complete,
    )


def _chunks(values: list[Any], size: int = LOOKUP_CHUNK) -> Iterator[list[Any]]:
    for i in range(0, len(values), size):
        yield values[i : i + size]


def _has_unique_index(col: Collection[dict[str, Any]], name: str) -> bool:
    info = col.index_information().get(name)
    return bool(info and info.get("unique"))


def _now(now: datetime | None) -> datetime:
    return now or datetime.now(UTC)


# -- contents -----------------------------------------------------------------------------------


def check_contents_unique_source_url(db: Db, *, limit: int = DEFAULT_SCAN_LIMIT) -> CheckOutcome:
    """No two `contents` rows share a `source_urls.url` (the second row holding a URL is reported)."""
    col = collection(db, CONTENTS)
    scan = _Scan(col, {"source_urls.url": 1}, limit)
    seen: dict[str | None, Any] = {}
    sample = _Sample()
    for doc in scan:
        urls = {e.get("url") for e in doc.get("source_urls") or [] if isinstance(e, dict)}
        if any(url in seen and seen[url] != doc["_id"] for url in urls):
            sample.add(doc["_id"])
        for url in urls:
            seen.setdefault(url, doc["_id"])
    indexed = _has_unique_index(col, "uniq_contents_source_url")
    counts = {**scan.counts(), "unique_index": int(indexed)}
    return _outcome(
        "contents_unique_source_url", sample, counts, scan.coverage(_index_note(indexed, "uniq_contents_source_url")),
        scan.complete,
    )


def check_contents_unique_platform_key(db: Db, *, limit: int = DEFAULT_SCAN_LIMIT) -> CheckOutcome:
    """No two `contents` rows share a `(platform, subtype, platform_key)` (rows without a key are exempt)."""
    col = collection(db, CONTENTS)
    scan = _Scan(col, {"platform": 1, "subtype": 1, "platform_key": 1}, limit)
    seen: set[tuple[Any, ...]] = set()
    sample = _Sample()
    for doc in scan:
        if doc.get("platform_key") is None:
            continue
        key = (doc.get("platform"), doc.get("subtype"), doc["platform_key"])
        if key in seen:
            sample.add(doc["_id"])
        seen.add(key)
    indexed = _has_unique_index(col, "uniq_contents_platform_key")
    counts = {**scan.counts(), "unique_index": int(indexed)}
    return _outcome(
        "contents_unique_platform_key",
        sample,
        counts,
        scan.coverage(_index_note(indexed, "uniq_contents_platform_key")),
        scan.complete,
    )


def _index_note(indexed: bool, name: str) -> str:
    return f"; unique index {name} {'present' if indexed else 'MISSING'}"


# -- accounts / venues --------------------------------------------------------------------------


def check_identity_keys(db: Db, name: str, *, limit: int = DEFAULT_SCAN_LIMIT) -> CheckOutcome:
    """Every `accounts` / `venues` row has a non-empty `platform` and `platform_key`, and no
    `(platform, platform_key)` appears twice."""
    if name not in (ACCOUNTS, VENUES):
        raise ValueError(f"identity keys are checked on accounts and venues, not {name!r}")
    col = collection(db, name)
    scan = _Scan(col, {"platform": 1, "platform_key": 1}, limit)
    seen: set[tuple[Any, ...]] = set()
    missing, duplicate, sample = 0, 0, _Sample()
    for doc in scan:
        platform, key = doc.get("platform"), doc.get("platform_key")
        if not (isinstance(platform, str) and platform and isinstance(key, str) and key):
            missing += 1
            sample.add(doc["_id"])
            continue
        if (platform, key) in seen:
            duplicate += 1
            sample.add(doc["_id"])
        seen.add((platform, key))
    indexed = _has_unique_index(col, f"uniq_{name}_platform_key")
    counts = {**scan.counts(), "missing_key": missing, "duplicate_key": duplicate, "unique_index": int(indexed)}
    return _outcome(
        f"{name}_identity_keys", sample, counts, scan.coverage(_index_note(indexed, f"uniq_{name}_platform_key")),
        scan.complete,
    )


# -- token_links --------------------------------------------------------------------------------

_LINK_FIELDS = {"object": 1, "object_id": 1, "token_address": 1, "source_url": 1, "link_depth": 1, "linked_at": 1}


def check_links_point_at_rows(db: Db, *, limit: int = DEFAULT_SCAN_LIMIT) -> CheckOutcome:
    """Every `token_links.object_id` is the `_id` of a row of the collection its `object` names."""
    scan = _Scan(collection(db, TOKEN_LINKS), {"object": 1, "object_id": 1}, limit)
    by_kind: dict[str, dict[Any, list[Any]]] = defaultdict(lambda: defaultdict(list))
    sample = _Sample()
    bad_kind = 0
    for doc in scan:
        kind = doc.get("object")
        if kind not in _KINDS or doc.get("object_id") is None:
            bad_kind += 1
            sample.add(doc["_id"])
            continue
        by_kind[kind][doc["object_id"]].append(doc["_id"])
    dangling = 0
    lookups = 0
    for kind, ids in by_kind.items():
        found, read = _present_ids(collection(db, kind), ids, limit)
        lookups += read
        for object_id in ids:
            if object_id not in found:
                for link_id in ids[object_id]:
                    dangling += 1
                    sample.add(link_id)
    counts = {
        **scan.counts(),
        "dangling": dangling,
        "unknown_object_kind": bad_kind,
        "objects": sum(len(v) for v in by_kind.values()),
        "target_rows_read": lookups,
    }
    note = f"; then {lookups} _id(s) of contents/accounts/venues read (see _present_ids)"
    return _outcome("links_point_at_rows", sample, counts, scan.coverage(note), scan.complete)


def check_link_depth(db: Db, *, limit: int = DEFAULT_SCAN_LIMIT) -> CheckOutcome:
    """`link_depth` is an integer in 0..LINK_MAX_DEPTH, and every (token, source URL) with links has
    a depth-0 link (its graph's root). Stored links carry no `lineage` (SPEC §4), so this is the
    depth rule the stored shape can be checked against."""
    scan = _Scan(collection(db, TOKEN_LINKS), _LINK_FIELDS, limit)
    out_of_range = 0
    sample = _Sample()
    groups: dict[tuple[Any, ...], list[Any]] = {}
    rooted: set[tuple[Any, ...]] = set()
    for doc in scan:
        depth = doc.get("link_depth")
        key = (doc.get("token_address"), doc.get("source_url"))
        if not isinstance(depth, int) or isinstance(depth, bool) or not 0 <= depth <= LINK_MAX_DEPTH:
            out_of_range += 1
            sample.add(doc["_id"])
            continue
        if depth == 0:
            rooted.add(key)
            groups.pop(key, None)
        elif key not in rooted:
            groups.setdefault(key, []).append(doc["_id"])
    rootless = 0
    for key, link_ids in groups.items():
        if key not in rooted:
            for link_id in link_ids:
                rootless += 1
                sample.add(link_id)
    counts = {**scan.counts(), "depth_out_of_range": out_of_range, "without_root_link": rootless}
    return _outcome("link_depth", sample, counts, scan.coverage(f"; depth must be 0..{LINK_MAX_DEPTH}"), scan.complete)


def _settled_links(
    db: Db, limit: int, before: datetime
) -> tuple[_Scan, dict[Any, dict[Any, list[Any]]]]:
    """token → source_url → link ids, for links made before `before`."""
    scan = _Scan(collection(db, TOKEN_LINKS), {"token_address": 1, "source_url": 1, "linked_at": 1}, limit)
    tokens: dict[Any, dict[Any, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for doc in scan:
        linked_at = doc.get("linked_at")
        if isinstance(linked_at, datetime) and linked_at >= before:
            continue
        tokens[doc.get("token_address")][doc.get("source_url")].append(doc["_id"])
    return scan, tokens


def _present_ids(col: Collection[dict[str, Any]], wanted: Iterable[Any], limit: int) -> tuple[set[Any], int]:
    """Which of `wanted` are `_id`s of `col`, and how many documents were read to know.

    Few ids: `$in` lookups on `_id`. Many: one projected scan of `_id_` (the embedded server
    answers a 1,000-value `$in` far slower than it streams the same number of index entries),
    then `$in` only for ids the scan's limit kept it from seeing.
    """
    wanted = list(wanted)
    if len(wanted) <= LOOKUP_CHUNK:
        found = {d["_id"] for d in col.find({"_id": {"$in": wanted}}, {"_id": 1}).hint("_id_")}
        return found, len(found)
    scan = _Scan(col, {"_id": 1}, limit)
    seen = {d["_id"] for d in scan}
    found = seen.intersection(wanted)
    if not scan.complete:
        rest = [w for w in wanted if w not in found]
        for chunk in _chunks(rest):
            found.update(d["_id"] for d in col.find({"_id": {"$in": chunk}}, {"_id": 1}).hint("_id_"))
    return found, scan.scanned


def _markers(db: Db, addresses: Iterable[str], limit: int = DEFAULT_SCAN_LIMIT) -> dict[str, dict[str, Any]]:
    """address → marker (`address`, `social_urls.url/status`) of the wanted tokens: `$in` on
    uniq_tokens_address for a few, one projected scan of `tokens` for many (see `_present_ids`)."""
    wanted = {a for a in addresses if isinstance(a, str)}
    col = collection(db, TOKENS)
    projection = {"address": 1, "social_urls.url": 1, "social_urls.status": 1}
    found: dict[str, dict[str, Any]] = {}
    if len(wanted) > LOOKUP_CHUNK:
        scan = _Scan(col, projection, limit)
        found = {d["address"]: d for d in scan if d.get("address") in wanted}
        if scan.complete:
            return found
    for chunk in _chunks([a for a in wanted if a not in found]):
        for doc in col.find({"address": {"$in": chunk}}, projection).hint("uniq_tokens_address"):
            found[doc["address"]] = doc
    return found


_MARKERS_READ = "markers read by $in on uniq_tokens_address, or one scan of tokens when many"


def check_links_have_linkable_status(
    db: Db, *, limit: int = DEFAULT_SCAN_LIMIT, recent: timedelta = DEFAULT_RECENT, now: datetime | None = None
) -> CheckOutcome:
    """A link exists only for a URL whose status in its token's marker allows links (`ok`).

    Links of tokens without a marker are left to `check_linked_tokens_have_markers`."""
    scan, tokens = _settled_links(db, limit, _now(now) - recent)
    markers = _markers(db, tokens, limit)
    sample = _Sample()
    wrong_status, not_in_marker = 0, 0
    for address, urls in tokens.items():
        marker = markers.get(address)
        if marker is None:
            continue
        statuses = {e.get("url"): e.get("status") for e in marker.get("social_urls") or [] if isinstance(e, dict)}
        for url, link_ids in urls.items():
            status = statuses.get(url)
            if status in LINKABLE_STATUSES:
                continue
            for link_id in link_ids:
                if status is None:
                    not_in_marker += 1
                else:
                    wrong_status += 1
                sample.add(link_id)
    counts = {
        **scan.counts(),
        "tokens": len(tokens),
        "markers": len(markers),
        "status_not_linkable": wrong_status,
        "url_not_in_marker": not_in_marker,
    }
    note = f"; links newer than {recent} left out; {_MARKERS_READ}"
    return _outcome("links_have_linkable_status", sample, counts, scan.coverage(note), scan.complete)


def check_linked_tokens_have_markers(
    db: Db, *, limit: int = DEFAULT_SCAN_LIMIT, recent: timedelta = DEFAULT_RECENT, now: datetime | None = None
) -> CheckOutcome:
    """Every token with links has its `tokens` marker (the ids reported are token addresses)."""
    scan, tokens = _settled_links(db, limit, _now(now) - recent)
    markers = _markers(db, tokens, limit)
    sample = _Sample()
    for address in tokens:
        if address not in markers:
            sample.add(address)
    counts = {**scan.counts(), "linked_tokens": len(tokens), "without_marker": sample.count}
    note = f"; links newer than {recent} left out; {_MARKERS_READ}"
    return _outcome("linked_tokens_have_markers", sample, counts, scan.coverage(note), scan.complete)


# -- tokens -------------------------------------------------------------------------------------


def check_marker_statuses(db: Db, *, limit: int = DEFAULT_SCAN_LIMIT) -> CheckOutcome:
    """Every `tokens.social_urls[].status` is one of the 9 FetchStatus values."""
    scan = _Scan(collection(db, TOKENS), {"address": 1, "social_urls.status": 1}, limit)
    sample = _Sample()
    bad_urls = 0
    for doc in scan:
        bad = [
            e for e in doc.get("social_urls") or [] if not isinstance(e, dict) or e.get("status") not in _VALID_STATUSES
        ]
        if bad:
            bad_urls += len(bad)
            sample.add(doc.get("address", doc["_id"]))
    counts = {**scan.counts(), "invalid_status_urls": bad_urls}
    return _outcome("marker_statuses_valid", sample, counts, scan.coverage("; ids are token addresses"), scan.complete)


def check_retry_queue_exact(db: Db, *, limit: int = DEFAULT_SCAN_LIMIT) -> CheckOutcome:
    """Every token's retry queue (`oldest_attempt`) is exactly what its `social_urls` derive
    (SPEC §8: the derived queue is the database's truth about the URLs, not a second truth). A
    token whose queue is missing counts too (`missing`): the retry selection cannot see it until
    the next retry run brings it up to date. Ids are token addresses."""
    projection = {"address": 1, "social_urls.status": 1, "social_urls.attempted_at": 1, OLDEST_ATTEMPT: 1}
    scan = _Scan(collection(db, TOKENS), projection, limit)
    sample = _Sample()
    missing, wrong = 0, 0
    for doc in scan:
        elements = [e for e in doc.get("social_urls") or [] if isinstance(e, dict)]
        expected = derive_oldest_attempt((e.get("status"), e.get("attempted_at")) for e in elements)
        stored = doc.get(OLDEST_ATTEMPT)
        if stored == expected:
            continue
        if stored is None:
            missing += 1
        else:
            wrong += 1
        sample.add(doc.get("address", doc["_id"]))
    counts = {**scan.counts(), "missing": missing, "wrong": wrong}
    note = f"; {OLDEST_ATTEMPT} derived again from social_urls and compared; ids are token addresses"
    return _outcome("retry_queue_exact", sample, counts, scan.coverage(note), scan.complete)


# -- metric_series ------------------------------------------------------------------------------


def check_metric_series_points(db: Db, *, limit: int = DEFAULT_SCAN_LIMIT) -> CheckOutcome:
    """Each series' `points[].at` are in time order and there are at most SERIES_POINT_CAP of them."""
    scan = _Scan(collection(db, METRIC_SERIES), {"points.at": 1}, limit)
    sample = _Sample()
    unordered, over_cap = 0, 0
    for doc in scan:
        points = doc.get("points") or []
        times = [p.get("at") for p in points if isinstance(p, dict)]
        bad = False
        if len(points) > SERIES_POINT_CAP:
            over_cap += 1
            bad = True
        stamps = [t for t in times if isinstance(t, datetime)]
        if len(stamps) != len(times) or any(a > b for a, b in zip(stamps, stamps[1:], strict=False)):
            unordered += 1
            bad = True
        if bad:
            sample.add(doc["_id"])
    counts = {**scan.counts(), "unordered": unordered, "over_cap": over_cap}
    coverage = scan.coverage(f"; cap {SERIES_POINT_CAP} points")
    return _outcome("metric_series_points", sample, counts, coverage, scan.complete)


# -- record_inbox -------------------------------------------------------------------------------


def check_inbox_entries_moving(
    db: Db,
    *,
    max_age: timedelta = DEFAULT_INBOX_MAX_AGE,
    now: datetime | None = None,
    limit: int = DEFAULT_SCAN_LIMIT,
) -> CheckOutcome:
    """No open `record_inbox` entry (pending, launched, retrying: not surfaced as given up) had its
    last event (`last_event_at`, else `received_at`) longer than `max_age` ago: such a token is
    neither recorded nor visible as failed. Ids are token addresses."""
    open_states = sorted(INBOX_STATES - INBOX_SURFACED_STATES)
    cutoff = _now(now) - max_age
    col = collection(db, INBOX)
    cursor = col.find(
        {"state": {"$in": open_states}}, {"token_address": 1, "received_at": 1, "last_event_at": 1, "state": 1}
    )
    cursor = cursor.hint("idx_inbox_state").batch_size(SCAN_BATCH).limit(limit)
    sample = _Sample()
    read = 0
    oldest: datetime | None = None
    for doc in cursor:
        read += 1
        received = doc.get("last_event_at") or doc.get("received_at")
        if not isinstance(received, datetime) or received < cutoff:
            sample.add(doc.get("token_address", doc["_id"]))
            if isinstance(received, datetime) and (oldest is None or received < oldest):
                oldest = received
    counts = {
        "open_entries": read,
        "oldest_stuck_age_h": int((_now(now) - oldest).total_seconds() // 3600) if oldest else 0,
    }
    coverage = (
        f"$in on idx_inbox_state over open states {open_states}: {read} entries read; "
        f"stuck = last event more than {max_age} ago"
    )
    return _outcome("inbox_entries_moving", sample, counts, coverage, complete=not limit or read < limit)


#: Every check, by name, with the collection (asset) it belongs to. Used by the bench and the CLI-free callers.
ALL_CHECKS = {
    "contents_unique_source_url": (CONTENTS, check_contents_unique_source_url),
    "contents_unique_platform_key": (CONTENTS, check_contents_unique_platform_key),
    "accounts_identity_keys": (ACCOUNTS, lambda db, **kw: check_identity_keys(db, ACCOUNTS, **kw)),
    "venues_identity_keys": (VENUES, lambda db, **kw: check_identity_keys(db, VENUES, **kw)),
    "links_point_at_rows": (TOKEN_LINKS, check_links_point_at_rows),
    "link_depth": (TOKEN_LINKS, check_link_depth),
    "links_have_linkable_status": (TOKEN_LINKS, check_links_have_linkable_status),
    "linked_tokens_have_markers": (TOKEN_LINKS, check_linked_tokens_have_markers),
    "marker_statuses_valid": (TOKENS, check_marker_statuses),
    "retry_queue_exact": (TOKENS, check_retry_queue_exact),
    "metric_series_points": (METRIC_SERIES, check_metric_series_points),
    "inbox_entries_moving": (INBOX, check_inbox_entries_moving),
}


def run_all(db: Db) -> list[CheckOutcome]:
    return [fn(db) for _, fn in ALL_CHECKS.values()]
