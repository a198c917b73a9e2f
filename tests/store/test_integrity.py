"""Each integrity check passes on a clean graph and fails on its seeded violation, naming the offender."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from bson import ObjectId

from socialrec_pipeline.domain.enums import ContentSubtype, FetchStatus, ObjectKind, Platform
from socialrec_pipeline.domain.models import (
    Account,
    Content,
    MetricPoint,
    SocialUrlRecord,
    SourceUrlEntry,
    Token,
    TokenLink,
)
from socialrec_pipeline.store import Store, integrity
from socialrec_pipeline.store.tokens import OLDEST_ATTEMPT, derive_oldest_attempt
from socialrec_pipeline.stream.inbox import RecordInbox

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
OLD = NOW - timedelta(hours=3)
URL = "https://x.com/kol/status/1"


@pytest.fixture
def db(fresh_db):
    Store(fresh_db).ensure_indexes()
    RecordInbox(fresh_db).ensure_indexes()
    return fresh_db


def _content(key: str, url: str) -> dict:
    return Content.of(
        platform=Platform.X,
        subtype=ContentSubtype.TWEET,
        platform_key=key,
        source_urls=[SourceUrlEntry(url=url, status=FetchStatus.OK, observed_at=OLD)],
        observed_at=OLD,
    ).to_document()


def _marker(address: str, status: FetchStatus = FetchStatus.OK, url: str = URL) -> dict:
    return Token.of(
        address=address,
        discovered_at=OLD,
        social_urls=[SocialUrlRecord(url=url, raw_url=url, platform=Platform.X, status=status, attempted_at=OLD)],
    ).to_document()


def _link(address: str, object_id: ObjectId, *, depth: int = 0, url: str = URL, at: datetime = OLD) -> dict:
    doc = TokenLink(
        token_address=address,
        object=ObjectKind.CONTENTS,
        object_id=object_id,
        source_url=url,
        platform=Platform.X,
        link_depth=0,
        linked_at=at,
        observed_at=at,
    ).to_document()
    doc["link_depth"] = depth
    return doc


def _clean_graph(db) -> tuple[ObjectId, str]:
    content = _content("1", URL)
    db.contents.insert_one(content)
    Store(db).tokens.write_marker(Token.from_document(_marker("TokA")))  # with its derived retry queue
    db.token_links.insert_one(_link("TokA", content["_id"]))
    return content["_id"], "TokA"


def _run(db, name: str, **kw) -> integrity.CheckOutcome:
    return integrity.ALL_CHECKS[name][1](db, **kw)


def _time_kw(name: str) -> dict:
    return (
        {"now": NOW}
        if name in ("links_have_linkable_status", "linked_tokens_have_markers", "inbox_entries_moving")
        else {}
    )


def test_every_check_passes_on_a_clean_graph(db):
    _clean_graph(db)
    Store(db).metrics.append_point(ObjectKind.CONTENTS, ObjectId(), Platform.X, MetricPoint(at=OLD, metrics={}))
    for name in integrity.ALL_CHECKS:
        outcome = _run(db, name, **_time_kw(name))
        assert outcome.passed, outcome.summary()
        assert outcome.coverage


def test_duplicate_source_url_in_contents(db):
    db.contents.drop_index("uniq_contents_source_url")
    db.contents.insert_many([_content("1", URL), _content("2", URL)])
    outcome = _run(db, "contents_unique_source_url")
    assert not outcome.passed and outcome.violations == 1
    assert "MISSING" in outcome.coverage and outcome.counts["unique_index"] == 0


def test_duplicate_platform_key_in_contents(db):
    db.contents.drop_index("uniq_contents_platform_key")
    first = _content("1", URL)
    second = _content("1", URL + "?again")
    db.contents.insert_many([first, second])
    outcome = _run(db, "contents_unique_platform_key")
    assert not outcome.passed and outcome.sample_ids == [str(second["_id"])]


@pytest.mark.parametrize("name", ["accounts", "venues"])
def test_identity_without_key_or_duplicated(db, name):
    db[name].drop_index(f"uniq_{name}_platform_key")
    row = Account.of(platform=Platform.X, platform_key="k1", observed_at=OLD).to_document()
    twin = {**row, "_id": ObjectId()}
    keyless = {**row, "_id": ObjectId()}
    del keyless["platform_key"]
    db[name].insert_many([row, twin, keyless])
    outcome = _run(db, f"{name}_identity_keys")
    assert not outcome.passed
    assert (outcome.counts["duplicate_key"], outcome.counts["missing_key"]) == (1, 1)
    assert set(outcome.sample_ids) == {str(twin["_id"]), str(keyless["_id"])}


def test_link_to_a_missing_row(db):
    _clean_graph(db)
    orphan = _link("TokA", ObjectId(), url=URL)
    db.token_links.insert_one(orphan)
    outcome = _run(db, "links_point_at_rows")
    assert not outcome.passed and outcome.sample_ids == [str(orphan["_id"])]


@pytest.mark.parametrize("depth", [3, -1])
def test_link_depth_out_of_range(db, depth):
    content_id, _ = _clean_graph(db)
    bad = _link("TokA", content_id, depth=depth)
    db.token_links.insert_one(bad)
    outcome = _run(db, "link_depth")
    assert not outcome.passed and outcome.counts["depth_out_of_range"] == 1
    assert outcome.sample_ids == [str(bad["_id"])]


def test_links_without_a_root_link(db):
    content = _content("9", URL)
    db.contents.insert_one(content)
    deep = _link("TokB", content["_id"], depth=1)
    db.token_links.insert_one(deep)
    outcome = _run(db, "link_depth")
    assert not outcome.passed and outcome.counts["without_root_link"] == 1


@pytest.mark.parametrize("status", [FetchStatus.NOT_FOUND, FetchStatus.ERROR])
def test_links_for_a_url_whose_status_allows_none(db, status):
    content = _content("1", URL)
    db.contents.insert_one(content)
    db.tokens.insert_one(_marker("TokA", status))
    link = _link("TokA", content["_id"])
    db.token_links.insert_one(link)
    outcome = _run(db, "links_have_linkable_status", now=NOW)
    assert not outcome.passed and outcome.sample_ids == [str(link["_id"])]


def test_fresh_links_are_left_to_the_recording_in_progress(db):
    content = _content("1", URL)
    db.contents.insert_one(content)
    db.token_links.insert_one(_link("TokNew", content["_id"], at=NOW - timedelta(minutes=1)))  # no marker yet
    assert _run(db, "linked_tokens_have_markers", now=NOW).passed


def test_linked_token_without_marker(db):
    content = _content("1", URL)
    db.contents.insert_one(content)
    db.token_links.insert_one(_link("TokLost", content["_id"]))
    outcome = _run(db, "linked_tokens_have_markers", now=NOW)
    assert not outcome.passed and outcome.sample_ids == ["TokLost"]


def test_marker_with_a_status_that_is_not_a_fetch_status(db):
    marker = _marker("TokA")
    marker["social_urls"][0]["status"] = "failed"
    db.tokens.insert_one(marker)
    outcome = _run(db, "marker_statuses_valid")
    assert not outcome.passed and outcome.sample_ids == ["TokA"]


def test_metric_points_out_of_order_or_over_the_cap(db):
    unordered = {
        "_id": ObjectId(),
        "object": "contents",
        "object_id": ObjectId(),
        "platform": "x",
        "points": [{"at": NOW, "metrics": {}}, {"at": OLD, "metrics": {}}],
    }
    too_many = {
        "_id": ObjectId(),
        "object": "contents",
        "object_id": ObjectId(),
        "platform": "x",
        "points": [{"at": OLD + timedelta(seconds=i), "metrics": {}} for i in range(201)],
    }
    db.metric_series.insert_many([unordered, too_many])
    outcome = _run(db, "metric_series_points")
    assert not outcome.passed
    assert (outcome.counts["unordered"], outcome.counts["over_cap"]) == (1, 1)


def test_inbox_entry_older_than_the_cap_and_not_surfaced(db):
    two_days = NOW - timedelta(days=2)
    db.record_inbox.insert_many(
        [
            {
                "token_address": "Forgotten",
                "state": "retrying",
                "generation": 3,
                "received_at": two_days,
                "last_event_at": two_days,
            },
            {"token_address": "Young", "state": "pending", "generation": 0, "received_at": NOW - timedelta(hours=1)},
            {
                "token_address": "Revived",
                "state": "launched",
                "generation": 0,
                "received_at": two_days,
                "last_event_at": NOW - timedelta(hours=1),
            },  # an old token with a fresh event is being worked on
            {"token_address": "GaveUp", "state": "stuck", "generation": 6, "received_at": two_days},  # surfaced
            {"token_address": "Unknown", "state": "idle", "generation": 1, "received_at": two_days},
        ]
    )
    outcome = _run(db, "inbox_entries_moving", now=NOW)
    assert not outcome.passed and outcome.sample_ids == ["Forgotten"]
    assert outcome.counts["open_entries"] == 3


def test_a_bounded_scan_states_it_did_not_see_everything(db):
    db.contents.insert_many([_content(str(i), f"{URL}{i}") for i in range(5)])
    outcome = integrity.check_contents_unique_source_url(db, limit=2)
    assert outcome.counts["scanned"] == 2 and outcome.counts["total"] == 5
    assert "the first 2 by _id" in outcome.coverage
    # nothing wrong in what it read, but it did not read everything: not "passed"
    assert outcome.passed and not outcome.complete and outcome.state == "incomplete"
    assert "passed" not in outcome.summary() and "NOT everything read" in outcome.summary()
    whole = integrity.check_contents_unique_source_url(db)
    assert whole.complete and whole.state == "passed"


@pytest.mark.parametrize("name", sorted(integrity.ALL_CHECKS))
def test_every_check_says_when_its_limit_kept_it_from_reading_everything(db, name):
    """Two documents in every collection a check reads; a limit of 1 cannot be the whole of it."""
    now = datetime.now(UTC)
    old = now - timedelta(days=1)
    account = ObjectId()
    db.contents.insert_many([_content(str(i), f"{URL}{i}") for i in range(2)])
    db.accounts.insert_many(
        [{"_id": account, "platform": "x", "platform_key": "a"}, {"platform": "x", "platform_key": "b"}]
    )
    db.venues.insert_many([{"platform": "x", "platform_key": "v1"}, {"platform": "x", "platform_key": "v2"}])
    queue = {OLDEST_ATTEMPT: derive_oldest_attempt([("ok", None)])}  # exact, as every marker write keeps it
    db.tokens.insert_many(
        [{**_marker(f"Tok{i}"), "social_urls": [{"url": URL, "status": "ok"}], **queue} for i in range(2)]
    )
    db.token_links.insert_many(
        [
            {"token_address": f"Tok{i}", "object": "accounts", "object_id": account, "source_url": URL,
             "link_depth": 0, "linked_at": old}
            for i in range(2)
        ]
    )  # fmt: skip
    db.metric_series.insert_many(
        [{"object": "accounts", "object_id": ObjectId(), "platform": "x", "points": [{"at": old}]} for _ in range(2)]
    )
    db.record_inbox.insert_many(
        [{"token_address": f"Wait{i}", "state": "pending", "received_at": now} for i in range(2)]
    )
    _, check = integrity.ALL_CHECKS[name]
    assert check(db).state == "passed"
    partial = check(db, limit=1)
    assert partial.state == "incomplete" and not partial.complete


def test_at_most_twenty_ids_are_reported(db):
    db.tokens.insert_many([{**_marker(f"Tok{i}"), "social_urls": [{"url": URL, "status": "bogus"}]} for i in range(30)])
    outcome = _run(db, "marker_statuses_valid")
    assert outcome.violations == 30 and len(outcome.sample_ids) == integrity.SAMPLE == 20


def test_many_ids_are_checked_by_scanning_the_targets(db, monkeypatch):
    monkeypatch.setattr(integrity, "LOOKUP_CHUNK", 1)  # every lookup takes the scan path
    content_id, _ = _clean_graph(db)
    db.tokens.insert_one(_marker("TokB"))
    orphan = _link("TokB", ObjectId())
    db.token_links.insert_many([_link("TokB", content_id), orphan, _link("TokLost", content_id)])
    outcome = _run(db, "links_point_at_rows")
    assert outcome.sample_ids == [str(orphan["_id"])]
    assert _run(db, "linked_tokens_have_markers", now=NOW).sample_ids == ["TokLost"]


def test_every_integrity_and_health_query_uses_an_index(mongo_uri, db, monkeypatch):
    """The checks and the health figures read through indexes only (the embedded server scans slowly)."""
    from pymongo import MongoClient

    from socialrec_pipeline.store.client import open_database
    from socialrec_pipeline.store.health import recording_health
    from tests.store.test_query_plans import _index_names, _Recorder, _stages, winning_plan

    _clean_graph(db)
    db.record_inbox.insert_one({"token_address": "Open", "state": "pending", "received_at": OLD})
    recorder = _Recorder()
    client = MongoClient(mongo_uri, event_listeners=[recorder], tz_aware=True)
    try:
        traced = open_database(client, db.name)
        for name in integrity.ALL_CHECKS:
            integrity.ALL_CHECKS[name][1](traced, **_time_kw(name))
        monkeypatch.setattr(integrity, "LOOKUP_CHUNK", 0)  # and the scan path of the lookups
        integrity.check_links_point_at_rows(traced)
        integrity.check_linked_tokens_have_markers(traced, now=NOW)
        recording_health(traced, NOW, ["tt", "ig"])
    finally:
        client.close()
    reads = []
    for command in recorder.commands:
        if "find" in command:
            reads.append((command["find"], command.get("filter", {}), command.get("sort"), command.get("hint")))
        elif "aggregate" in command:  # count_documents
            reads.append((command["aggregate"], command["pipeline"][0].get("$match", {}), None, command.get("hint")))
    assert len(reads) > 12
    scans = []
    for collection, query, sort, hint in reads:
        plan = winning_plan(db, collection, query, sort, hint)
        if "COLLSCAN" in set(_stages(plan)) or not set(_index_names(plan)):
            scans.append((collection, query, plan))
    assert scans == []


def test_health_figures_mongo_could_not_read_are_unknown_not_zero():
    from pymongo import MongoClient

    from socialrec_pipeline.store.health import UNKNOWN, URL_FIGURES, read_recording_health

    client = MongoClient("mongodb://127.0.0.1:1/", serverSelectionTimeoutMS=200)  # nothing listens there
    try:
        reading = read_recording_health(client["nowhere"], NOW, ["tt"])
    finally:
        client.close()
    assert reading.figures["tokens_recorded_last_hour"] == UNKNOWN
    assert reading.figures["inbox_open"] == UNKNOWN and reading.figures["urls_ok"] == UNKNOWN
    assert {"tokens_recorded_last_hour", "last_recorded_age_min", URL_FIGURES, "inbox_open"} <= set(reading.unknown)


def test_health_url_figures_from_a_partial_scan_are_named_unknown(db):
    from socialrec_pipeline.store.health import URL_FIGURES, read_recording_health

    db.tokens.insert_many([_marker(f"Tok{i}") for i in range(3)])
    assert URL_FIGURES not in read_recording_health(db, NOW, ["tt"]).unknown
    partial = read_recording_health(db, NOW, ["tt"], scan_limit=2)
    assert partial.figures["tokens_scanned"] == 2 and "partial" in partial.unknown[URL_FIGURES]
