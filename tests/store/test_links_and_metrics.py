"""token_links is append-only; metric_series keeps one row per object, capped by the write."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from bson import ObjectId

from socialrec_pipeline.domain.enums import ContentSubtype, ObjectKind, Platform
from socialrec_pipeline.domain.models import SERIES_POINT_CAP, MetricPoint, TokenLink
from socialrec_pipeline.store import FirstPoint, TokenLinkRepository
from tests.store.conftest import h, unique


def link(object_id: ObjectId, address: str, at, *, ancestors=(), url="https://x.com/a/status/1",
         platform=Platform.X) -> TokenLink:
    return TokenLink.of(token_address=address, object=ObjectKind.CONTENTS, object_id=object_id,
                        source_url=url, platform=platform, subtype=ContentSubtype.TWEET,
                        linked_at=at, observed_at=at, ancestor_ids=ancestors)


def test_link_repository_offers_no_update_or_upsert():
    public = [n for n in dir(TokenLinkRepository) if not n.startswith("_")]
    assert not [n for n in public if any(w in n for w in ("update", "upsert", "replace", "save"))]


def test_counts_and_finds_as_of_with_depth(store):
    obj = ObjectId()
    quoting = ObjectId()
    store.links.append_many([
        link(obj, unique("So"), h(0)),
        link(obj, unique("So"), h(2)),
        link(obj, unique("So"), h(4), ancestors=[quoting]),
    ])
    assert store.links.count_by_object_as_of(obj, h(3)) == 2
    assert store.links.count_by_object_as_of(obj, h(4)) == 3
    assert store.links.count_by_object_as_of(obj, h(4), link_depth=1) == 1
    assert store.links.count_by_object_as_of(obj, h(4), link_depth=0) == 2
    assert [link.linked_at for link in store.links.find_by_object_as_of(obj, h(2))] == [h(0), h(2)]


def test_the_same_observation_twice_is_two_links(store):
    obj, address = ObjectId(), unique("So")
    store.links.append_many([link(obj, address, h(0)), link(obj, address, h(1))])
    assert store.links.count_by_object_as_of(obj, h(9)) == 2  # append-only: nothing is merged


def test_find_by_token_and_delete_one_source_url(store):
    address = unique("So")
    a, b = "https://x.com/a/status/1", "https://github.com/a/b"
    store.links.append_many([
        link(ObjectId(), address, h(0), url=a),
        link(ObjectId(), address, h(1), url=a, ancestors=["root"]),
        link(ObjectId(), address, h(2), url=b, platform=Platform.GITHUB),
        link(ObjectId(), unique("So"), h(0), url=a),
    ])
    assert [link.linked_at for link in store.links.find_by_token(address)] == [h(0), h(1), h(2)]
    assert len(store.links.find_by_token(address, as_of=h(1))) == 2
    assert store.links.delete_by_token_and_source_url(address, a) == 2
    assert [link.source_url for link in store.links.find_by_token(address)] == [b]


def test_find_linked_since_filters_platform_and_time(empty_store):
    links = empty_store.links
    links.append_many([
        link(ObjectId(), "So1", h(0)),
        link(ObjectId(), "So2", h(5)),
        link(ObjectId(), "So3", h(6), platform=Platform.GITHUB),
    ])
    assert [link.token_address for link in links.find_linked_since(h(1), [Platform.X])] == ["So2"]
    assert [link.token_address for link in links.find_linked_since(h(1))] == ["So3", "So2"]
    assert len(links.find_linked_since(h(-1), limit=2)) == 2
    assert links.find_linked_since(h(-1), []) == []


def point(at, **metrics) -> MetricPoint:
    return MetricPoint.of(Platform.X, ObjectKind.CONTENTS, metrics, at)


def test_record_first_point_twice_keeps_the_first(store):
    obj = ObjectId()
    assert store.metrics.record_first_point(ObjectKind.CONTENTS, obj, Platform.X, point(h(0), viewCount=1)) is True
    assert store.metrics.record_first_point(ObjectKind.CONTENTS, obj, Platform.X, point(h(1), viewCount=9)) is False
    series = store.metrics.find_by_object(ObjectKind.CONTENTS, obj)
    assert [(p.at, p.metrics) for p in series.points] == [(h(0), {"viewCount": 1})]
    assert series.platform == Platform.X


def test_record_first_points_is_one_bulk_and_keyed_by_kind_and_id(store):
    shared_id = ObjectId()  # the same id under two kinds is two series
    created = store.metrics.record_first_points([
        FirstPoint(ObjectKind.CONTENTS, shared_id, Platform.X, point(h(0), viewCount=1)),
        (ObjectKind.ACCOUNTS, shared_id, Platform.X,
         MetricPoint.of(Platform.X, ObjectKind.ACCOUNTS, {"followers": 7}, h(0))),
    ])
    assert created == 2
    assert store.metrics.find_latest_point(ObjectKind.ACCOUNTS, shared_id).metrics == {"followers": 7}
    assert store.metrics.find_latest_point(ObjectKind.CONTENTS, shared_id).metrics == {"viewCount": 1}
    assert store.metrics.find_latest_point(ObjectKind.VENUES, shared_id) is None


def test_the_201st_point_pushes_out_the_first(store):
    obj = ObjectId()
    for i in range(SERIES_POINT_CAP + 1):
        store.metrics.append_point(ObjectKind.CONTENTS, obj, Platform.X, point(h(i), viewCount=i))
    points = store.metrics.find_by_object(ObjectKind.CONTENTS, obj).points
    assert len(points) == SERIES_POINT_CAP == 200
    assert points[0].metrics == {"viewCount": 1} and points[-1].metrics == {"viewCount": 200}
    assert store.metrics.find_latest_point(ObjectKind.CONTENTS, obj).at == h(200)
    assert store.db.metric_series.count_documents({"object_id": obj}) == 1


def test_append_point_after_first_point_extends_the_same_row(store):
    obj = ObjectId()
    store.metrics.record_first_point(ObjectKind.CONTENTS, obj, Platform.X, point(h(0), viewCount=1))
    store.metrics.append_point(ObjectKind.CONTENTS, obj, Platform.X, point(h(1), viewCount=2))
    series = store.metrics.find_by_object(ObjectKind.CONTENTS, obj)
    assert [p.metrics["viewCount"] for p in series.points] == [1, 2]
    assert series.created_at is not None and series.updated_at >= series.created_at


def test_writes_keep_only_the_metrics_the_spec_allows_for_the_series_kind(store):
    """The whitelist holds at write time whatever point the caller built (platform × object kind)."""
    account_id, content_id = ObjectId(), ObjectId()
    unchecked = MetricPoint(at=h(0), metrics={"followers": 5, "viewCount": 9, "bogus": 1})
    assert store.metrics.record_first_points([(ObjectKind.ACCOUNTS, account_id, Platform.X, unchecked)]) == 1
    store.metrics.append_point(ObjectKind.ACCOUNTS, account_id, Platform.X, unchecked.model_copy(update={"at": h(1)}))
    store.metrics.append_point(ObjectKind.CONTENTS, content_id, Platform.X, unchecked)
    accounts = store.metrics.find_by_object(ObjectKind.ACCOUNTS, account_id).points
    assert [p.metrics for p in accounts] == [{"followers": 5}, {"followers": 5}]
    assert store.metrics.find_latest_point(ObjectKind.CONTENTS, content_id).metrics == {"viewCount": 9}


NAIVE = datetime(2026, 11, 1, 12, 0)


@pytest.mark.parametrize(("call", "argument"), [
    (lambda links: links.count_by_object_as_of(ObjectId(), NAIVE), "as_of"),
    (lambda links: links.count_by_object_as_of(ObjectId(), NAIVE, link_depth=0), "as_of"),
    (lambda links: links.find_by_object_as_of(ObjectId(), NAIVE), "as_of"),
    (lambda links: links.find_by_token("So1", as_of=NAIVE), "as_of"),
    (lambda links: links.find_linked_since(NAIVE), "since"),
    (lambda links: links.find_linked_since(NAIVE, [Platform.X]), "since"),
    (lambda links: links.find_linked_since(NAIVE, []), "since"),
])
def test_naive_datetimes_are_refused_naming_the_argument(store, call, argument):
    # Stored times are UTC; a naive bound would be read as UTC silently and shift the answer.
    with pytest.raises(ValueError, match=rf"\b{argument}\b.*timezone-aware"):
        call(store.links)


def test_aware_bounds_in_any_zone_are_accepted(store):
    obj = ObjectId()
    store.links.append_many([link(obj, unique("So"), h(0))])
    plus_two = timezone(timedelta(hours=2))
    assert store.links.count_by_object_as_of(obj, h(0).astimezone(plus_two)) == 1
    assert store.links.find_by_token("nobody", as_of=h(0).astimezone(plus_two)) == []
