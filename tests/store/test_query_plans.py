"""Every query the repositories send is answered from an index (no collection scan).

The commands are captured from the driver while the repository methods run, then each filter is
explained on the same server, so the test checks what the code really sends.
"""

from __future__ import annotations

import json

import pytest
from pymongo import MongoClient, monitoring

from socialrec_pipeline.domain.enums import (
    RETRYABLE,
    ContentSubtype,
    FetchStatus,
    ObjectKind,
    Platform,
    VenueSubtype,
)
from socialrec_pipeline.domain.models import (
    Account,
    Content,
    MetricPoint,
    SocialUrlRecord,
    SourceUrlEntry,
    Token,
    TokenLink,
    Venue,
)
from socialrec_pipeline.store import Store
from socialrec_pipeline.store.client import open_database
from tests.store.conftest import T0, h, unique

_QUERY_COMMANDS = {"find", "aggregate", "count", "update", "delete", "findAndModify"}


class _Recorder(monitoring.CommandListener):
    def __init__(self) -> None:
        self.commands: list[dict] = []

    def started(self, event):
        if event.command_name in _QUERY_COMMANDS:
            self.commands.append(dict(event.command))

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


def _filters(command: dict) -> list[tuple[str, dict, dict | None, str | None]]:
    """(collection, filter, sort, hint) of every read a command performs."""
    if "find" in command:
        return [(command["find"], command.get("filter", {}), command.get("sort"), command.get("hint"))]
    if "aggregate" in command:
        match = command["pipeline"][0].get("$match", {})
        return [(command["aggregate"], match, None, command.get("hint"))]
    if "update" in command:
        return [(command["update"], u["q"], None, u.get("hint")) for u in command["updates"]]
    if "delete" in command:
        return [(command["delete"], d["q"], None, d.get("hint")) for d in command["deletes"]]
    raise AssertionError(f"unexpected command {command}")


def _stages(plan: dict):
    yield plan.get("stage")
    for key in ("inputStage", "queryPlan"):
        if key in plan:
            yield from _stages(plan[key])
    for child in plan.get("inputStages", []):
        yield from _stages(child)


def _index_names(plan: dict):
    if plan.get("indexName"):
        yield plan["indexName"]
    for key in ("inputStage", "queryPlan"):
        if key in plan:
            yield from _index_names(plan[key])
    for child in plan.get("inputStages", []):
        yield from _index_names(child)


def winning_plan(db, collection: str, query: dict, sort: dict | None, hint=None) -> dict:
    """The plan of `query` as a find. Updates and deletes are explained as the find of their
    filter: the embedded server's explain of write commands does not report their plan."""
    find = {"find": collection, "filter": query}
    if sort:
        find["sort"] = sort
    if hint:
        find["hint"] = hint
    explained = db.command("explain", find, verbosity="queryPlanner")
    return explained["queryPlanner"]["winningPlan"]


@pytest.fixture(scope="module")
def traced(mongo_uri, mongo_db):
    """A Store whose driver records every command, on the module's database."""
    recorder = _Recorder()
    traced_client = MongoClient(mongo_uri, event_listeners=[recorder], tz_aware=True)
    store = Store(open_database(traced_client, mongo_db.name))
    store.ensure_indexes()
    yield store, recorder
    traced_client.close()


def _exercise(store: Store) -> None:
    account = Account.of(platform=Platform.X, platform_key=unique(), observed_at=T0, handle="kol")
    venue = Venue.of(platform=Platform.X, subtype=VenueSubtype.COMMUNITY, platform_key=unique(), observed_at=T0)
    store.accounts.upsert_many([account])
    store.accounts.upsert(account)  # existing: read back by key
    store.venues.upsert_many([venue])
    store.venues.upsert(venue)
    store.accounts.find_by_platform_keys([("x", account.platform_key)])
    store.venues.find_by_platform_keys([("x", venue.platform_key)])
    store.accounts.find_current_holders(Platform.X, "kol")
    store.accounts.mark_unavailable(Platform.X, account.platform_key, T0)
    store.tokens.find_by_fingerprint("domain:example.com")
    store.accounts.bios_after(None, 10)
    store.accounts.bios_after(account.id, 10)
    store.accounts.add_wallets([(account.id, ["7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU"])])
    url = f"https://x.com/kol/status/{unique()}"
    content = Content.of(
        platform=Platform.X, subtype=ContentSubtype.TWEET, platform_key=unique(), observed_at=T0,
        source_urls=[SourceUrlEntry(url=url, status=FetchStatus.OK, observed_at=T0)],
        creator_id=account.id, venue_id=venue.id, published_at=T0,
    )
    child = Content.of(
        platform=Platform.X, subtype=ContentSubtype.TWEET, platform_key=unique(), observed_at=T0,
        source_urls=[SourceUrlEntry(url=url + "9", status=FetchStatus.OK, observed_at=T0)],
        parent_content_id=content.id,
    )
    store.contents.insert_many([content, child])
    store.contents.insert(Content.of(
        platform=Platform.X, subtype=ContentSubtype.SEARCH, observed_at=T0,
        source_urls=[SourceUrlEntry(url=f"https://x.com/search?q={unique()}", status="ok", observed_at=T0)],
    ))
    store.contents.find_by_source_urls([url])
    store.contents.find_by_source_url(url)
    store.contents.find_by_platform_keys([("x", "tweet", content.platform_key), ("x", "tweet", "none")])
    store.contents.find_by_platform_key(Platform.X, ContentSubtype.TWEET, content.platform_key)
    store.contents.add_source_urls([(content.id, SourceUrlEntry(url=url + "?v=2", status="ok", observed_at=T0))])
    store.contents.find_by_id(content.id)
    store.contents.update_metrics_latest(content.id, {"viewCount": 5}, h(1))
    store.contents.find_by_ids([content.id, child.id])
    store.contents.find_by_creator(account.id, limit=5)
    store.contents.find_children(content.id)
    store.contents.find_by_venue(venue.id, limit=5)
    store.accounts.find_by_id(account.id)
    store.accounts.find_by_ids([account.id])
    store.accounts.find_by_platform_key(Platform.X, account.platform_key)
    store.accounts.find_by_handle("kol")
    store.db.accounts.insert_one({"platform": "x", "platform_key": unique(), "observed_at": T0,
                                  "handles": [{"value": "Legacy", "first_seen": T0, "last_seen": T0}]})
    store.accounts.backfill_handle_keys()
    store.accounts.find_by_wallet("So1wallet")
    store.venues.find_by_id(venue.id)
    store.venues.find_by_ids([venue.id])
    store.venues.find_by_platform_key(Platform.X, venue.platform_key)
    store.venues.find_by_creator(account.id)

    address = unique("So")
    link = TokenLink.of(token_address=address, object=ObjectKind.CONTENTS, object_id=content.id,
                        source_url=url, platform=Platform.X, subtype=ContentSubtype.TWEET,
                        linked_at=T0, observed_at=T0)
    store.links.append_many([link])
    store.links.count_by_object_as_of(content.id, h(1))
    store.links.count_by_object_as_of(content.id, h(1), link_depth=0)
    store.links.find_by_object_as_of(content.id, h(1))
    store.links.find_by_token(address)
    store.links.find_by_token(address, as_of=h(1))
    store.links.find_linked_since(h(-1), [Platform.X, Platform.GITHUB], limit=10)
    store.links.find_linked_since(h(-1), None, limit=10)
    store.links.delete_by_token_and_source_url(address, url)

    point = MetricPoint.of(Platform.X, ObjectKind.ACCOUNTS, {"followers": 1}, T0)
    store.metrics.record_first_points([(ObjectKind.ACCOUNTS, account.id, Platform.X, point)])
    store.metrics.record_first_point(ObjectKind.VENUES, venue.id, Platform.X, point)
    store.metrics.append_point(ObjectKind.ACCOUNTS, account.id, Platform.X, point)
    store.metrics.find_by_object(ObjectKind.ACCOUNTS, account.id)
    store.metrics.find_latest_point(ObjectKind.ACCOUNTS, account.id)
    store.metrics.refresh_due_filter(Platform.X, h(5))  # the query iter_refresh_due sends per platform
    list(store.metrics.iter_refresh_due([Platform.X, Platform.GITHUB], h(5)))
    store.metrics.find_last_point_times([(ObjectKind.ACCOUNTS, account.id), (ObjectKind.VENUES, venue.id)])
    store.metrics.touch_refresh(ObjectKind.ACCOUNTS, account.id, h(2))
    store.metrics.leave_refresh_queue(ObjectKind.ACCOUNTS, account.id)
    store.db.metric_series.update_one({"object": "venues", "object_id": venue.id}, {"$unset": {"last_point_at": ""}})
    store.metrics.backfill_refresh_queue()

    record = SocialUrlRecord(url=url, raw_url=url, status=FetchStatus.ERROR, attempted_at=T0, attempts=1)
    store.tokens.write_marker(Token.of(address=address, discovered_at=T0, social_urls=[record]))
    store.tokens.exists(address)
    store.tokens.find_by_address(address)
    store.tokens.find_existing_addresses([address, "missing"])
    store.tokens.lower_first_transfer_at({address: T0, "missing": T0})
    store.tokens.find_by_url_statuses(RETRYABLE, h(1), limit=10)
    store.tokens.oldest_attempt_filter(FetchStatus.ERROR, h(1))  # the query find_due_urls sends per status
    store.tokens.find_due_urls(RETRYABLE, h(1), limit=10)
    store.tokens.find_due_urls([FetchStatus.ERROR], None, limit=1)
    store.db.tokens.update_one({"address": address}, {"$unset": {"oldest_attempt": ""}})  # a marker from before
    store.tokens.backfill_oldest_attempt()
    store.tokens.record_social_url_result(address, url, record.model_copy(update={"attempts": 2}))
    moved = record.model_copy(update={"url": url + "?moved", "attempts": 3})
    store.tokens.record_social_url_result(address, url, moved)  # the element takes a new url
    store.tokens.write_marker(Token.of(address=address, discovered_at=T0, social_urls=[record, moved]))
    store.tokens.merge_social_url(address, moved.url, into=url)  # two spellings of one target
    store.tokens.find_recently_discovered(limit=5)


class _Tracked:
    """A repository that notes which of its public methods were called."""

    def __init__(self, repository, called: set[tuple[str, str]]) -> None:
        self._repository, self._called = repository, called

    def __getattr__(self, name):
        if not name.startswith("_"):
            self._called.add((type(self._repository).__name__, name))
        return getattr(self._repository, name)


_REPOSITORIES = ("contents", "accounts", "venues", "tokens", "links", "metrics")


def _public_methods(repository) -> set[tuple[str, str]]:
    cls = type(repository)
    return {(cls.__name__, n) for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))}


def test_every_repository_query_uses_an_index(traced):
    store, recorder = traced
    called: set[tuple[str, str]] = set()
    tracked = Store(store.db)
    for name in _REPOSITORIES:
        setattr(tracked, name, _Tracked(getattr(store, name), called))
    _exercise(tracked)
    # A new repository method fails here until the exercise above sends its queries too.
    expected = set().union(*(_public_methods(getattr(store, name)) for name in _REPOSITORIES))
    assert expected - called == set()
    reads = [f for command in recorder.commands for f in _filters(command)]
    assert len(reads) > 40  # the exercise really ran through the repositories
    scans = []
    for collection, query, sort, hint in reads:
        plan = winning_plan(store.db, collection, query, sort, hint)
        stages = set(_stages(plan))
        if "COLLSCAN" in stages or not set(_index_names(plan)):
            scans.append((collection, json.dumps(query, default=str), sort, plan))
    assert scans == [], "\n".join(f"{c} {q} {s} {p}" for c, q, s, p in scans)


def test_retry_selection_is_one_oldest_first_range_scan_per_status_index(traced):
    """The commands `find_due_urls` (the retry job's selection) really sends: one find per status,
    a range on `oldest_attempt.<status>` sorted by it and hinted to its index, whose plan is an
    index scan that needs no sort stage."""
    store, recorder = traced
    url = f"https://x.com/kol/status/{unique()}"
    records = [
        SocialUrlRecord(url=url + str(i), raw_url=url, status=status, attempted_at=h(-1 - i), attempts=1)
        for i, status in enumerate(RETRYABLE)
    ]
    store.tokens.write_marker(Token.of(address=unique("So"), discovered_at=T0, social_urls=records))
    recorder.commands.clear()
    picked = store.tokens.find_due_urls(RETRYABLE, h(1), limit=10)
    assert sum(len(urls) for _, urls in picked) >= len(RETRYABLE)  # it selected the due URLs
    finds = [c for c in recorder.commands if c.get("find") == "tokens"]
    assert len(finds) == len(RETRYABLE)
    from socialrec_pipeline.store.tokens import oldest_attempt_index

    seen = set()
    for command in finds:
        (field,) = command["filter"]
        assert field.startswith("oldest_attempt.") and set(command["filter"][field]) == {"$lt"}
        status = FetchStatus(field.removeprefix("oldest_attempt."))
        seen.add(status)
        assert dict(command["sort"]) == {field: 1}
        assert command["hint"] == oldest_attempt_index(status)
        plan = winning_plan(store.db, "tokens", command["filter"], command["sort"], command["hint"])
        assert "COLLSCAN" not in set(_stages(plan)) and "SORT" not in set(_stages(plan))  # the index gives the order
        assert set(_index_names(plan)) == {f"idx_tokens_oldest_{status.value}"}
    assert seen == set(RETRYABLE)


def test_existing_addresses_is_one_in_query_on_the_unique_index(traced):
    store, recorder = traced
    recorder.commands.clear()
    store.tokens.find_existing_addresses([f"So{i}" for i in range(300)])
    assert [c.get("find") for c in recorder.commands] == ["tokens"]
    command = recorder.commands[0]
    assert set(command["filter"]) == {"address"} and "$in" in command["filter"]["address"]
    assert command["projection"] == {"_id": 0, "address": 1}
    plan = winning_plan(store.db, "tokens", command["filter"], None)
    assert set(_index_names(plan)) == {"uniq_tokens_address"}

