"""contents: ordered inserts with client-issued ids, lookups on both identity axes, URL additions."""

from __future__ import annotations

from bson import ObjectId

from socialrec_pipeline.domain.enums import ContentSubtype, FetchStatus, ParentRelation, Platform
from socialrec_pipeline.domain.models import AuthorSnapshot, Content, SourceUrlEntry
from tests.store.conftest import T0, h, unique


def url() -> str:
    return f"https://x.com/kol/status/{unique()}"


def tweet(entry_url: str | None = None, **fields) -> Content:
    return Content.of(
        platform=Platform.X,
        subtype=fields.pop("subtype", ContentSubtype.TWEET),
        platform_key=fields.pop("platform_key", unique()),
        source_urls=[SourceUrlEntry(url=entry_url or url(), status=FetchStatus.OK, observed_at=T0)],
        observed_at=T0,
        **fields,
    )


def test_parent_and_child_inserted_in_one_call_reference_each_other(store):
    original = tweet()
    quote = tweet(parent_content_id=original.id, parent_relation=ParentRelation.QUOTE)
    assert store.contents.insert_many([original, quote]) == [original.id, quote.id]
    assert [c.id for c in store.contents.find_children(original.id)] == [quote.id]
    assert store.contents.find_by_id(quote.id).parent_relation == ParentRelation.QUOTE


def test_stored_content_round_trips(store):
    content = tweet(
        published_at=h(-2),
        author=AuthorSnapshot(account_id=ObjectId(), handle="kol", followers=10, account_created_at=h(-900)),
        metrics={"viewCount": 100, "likeCount": 3},
        links=["https://pump.fun/x"],
        tags=["sol"],
        data={"conversationId": "1"},
    )
    store.contents.insert(content)
    back = store.contents.find_by_id(content.id)
    assert back.model_dump(exclude={"created_at", "updated_at"}) == content.model_dump(
        exclude={"created_at", "updated_at"}
    )
    assert back.created_at is not None and back.published_at.tzinfo is not None


def test_find_by_source_urls_and_platform_keys(store):
    a, b = tweet(), tweet()
    search = tweet(subtype=ContentSubtype.SEARCH, platform_key="$KOL")
    store.contents.insert_many([a, b, search])
    assert {c.id for c in store.contents.find_by_source_urls([a.urls[0], b.urls[0], "nope"])} == {a.id, b.id}
    assert store.contents.find_by_source_url(a.urls[0]).id == a.id
    assert store.contents.find_by_source_url("nope") is None
    found = store.contents.find_by_platform_keys(
        [(Platform.X, ContentSubtype.TWEET, a.platform_key), ("x", "search", "$KOL"), ("x", "tweet", "missing")]
    )
    assert {c.id for c in found} == {a.id, search.id}
    assert store.contents.find_by_platform_key(Platform.X, ContentSubtype.TWEET, b.platform_key).id == b.id
    assert store.contents.find_by_platform_key(Platform.X, ContentSubtype.SEARCH, b.platform_key) is None
    assert store.contents.find_by_source_urls([]) == [] and store.contents.find_by_platform_keys([]) == []


def test_add_source_urls_adds_only_a_url_the_row_lacks(store):
    a, b = tweet(), tweet()
    store.contents.insert_many([a, b])
    extra = url()
    added = store.contents.add_source_urls(
        [
            (a.id, SourceUrlEntry(url=extra, status=FetchStatus.OK, observed_at=h(1))),
            (a.id, SourceUrlEntry(url=a.urls[0], status=FetchStatus.NOT_FOUND, observed_at=h(1))),
            (b.id, SourceUrlEntry(url=b.urls[0], status=FetchStatus.OK, observed_at=h(2))),
        ]
    )
    assert added == 1
    stored_a = store.contents.find_by_id(a.id)
    assert stored_a.urls == [a.urls[0], extra]
    assert stored_a.source_urls[0].status == FetchStatus.OK  # an existing entry is not rewritten
    assert store.contents.find_by_id(b.id).source_urls == b.source_urls
    # Adding the same URL again is a no-op, not a second entry.
    assert store.contents.add_source_urls([(a.id, SourceUrlEntry(url=extra, status="ok", observed_at=h(3)))]) == 0


def test_find_by_creator_is_newest_first_and_limited(store):
    creator = ObjectId()
    rows = [tweet(creator_id=creator, published_at=h(i)) for i in range(4)]
    store.contents.insert_many(rows)
    newest = store.contents.find_by_creator(creator, limit=3)
    assert [c.published_at for c in newest] == [h(3), h(2), h(1)]


def test_find_by_venue_and_ids(store):
    venue = ObjectId()
    rows = [tweet(venue_id=venue) for _ in range(3)]
    store.contents.insert_many(rows)
    assert {c.id for c in store.contents.find_by_venue(venue, limit=10)} == {r.id for r in rows}
    assert len(store.contents.find_by_venue(venue, limit=2)) == 2
    assert {c.id for c in store.contents.find_by_ids([rows[0].id, rows[1].id, ObjectId()])} == {rows[0].id, rows[1].id}
