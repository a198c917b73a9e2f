"""Models: validation names the field, factories derive what must not be passed, state changes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import bson
import pytest
from bson import ObjectId
from bson.codec_options import CodecOptions
from pydantic import ValidationError

from socialrec_pipeline.domain.enums import (
    ContentSubtype,
    FetchStatus,
    ObjectKind,
    Platform,
    VenueSubtype,
)
from socialrec_pipeline.domain.models import (
    LINK_MAX_DEPTH,
    Account,
    Content,
    MetricPoint,
    MetricSeries,
    SocialUrlRecord,
    SourceUrlEntry,
    Token,
    TokenLink,
    Venue,
)

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
CODEC = CodecOptions(tz_aware=True, tzinfo=UTC)


def h(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def entry(url: str = "https://x.com/kol/status/1", at: datetime = T0) -> SourceUrlEntry:
    return SourceUrlEntry(url=url, status=FetchStatus.OK, observed_at=at)


def tweet(**overrides) -> Content:
    fields = dict(
        platform=Platform.X,
        subtype=ContentSubtype.TWEET,
        platform_key="1",
        source_urls=[entry()],
        observed_at=T0,
    )
    fields.update(overrides)
    return Content.of(**fields)


def failing_fields(exc: pytest.ExceptionInfo[ValidationError]) -> set[str]:
    return {str(err["loc"][0]) for err in exc.value.errors()}


# ------------------------------------------------------------------ validation names the field


def test_missing_required_field_is_named():
    with pytest.raises(ValidationError) as exc:
        Content(platform=Platform.X, subtype=ContentSubtype.TWEET, source_urls=[entry()])
    assert failing_fields(exc) == {"observed_at"}


def test_empty_source_urls_is_rejected_by_name():
    with pytest.raises(ValidationError) as exc:
        tweet(source_urls=[])
    assert failing_fields(exc) == {"source_urls"}


def test_duplicate_source_url_entries_are_rejected_by_name():
    with pytest.raises(ValidationError) as exc:
        Content(
            platform=Platform.X,
            subtype=ContentSubtype.TWEET,
            source_urls=[entry(), entry(at=h(1))],
            observed_at=T0,
        )
    assert failing_fields(exc) == {"source_urls"}


def test_factory_folds_repeated_urls_into_one_entry():
    content = tweet(source_urls=[entry(), entry(at=h(1))])
    assert [e.observed_at for e in content.source_urls] == [h(1)]


def test_naive_datetime_is_rejected_by_name():
    with pytest.raises(ValidationError) as exc:
        tweet(published_at=datetime(2026, 1, 1, 0, 0))
    assert failing_fields(exc) == {"published_at"}
    assert "timezone-aware" in str(exc.value)


def test_naive_datetime_inside_an_array_names_the_path():
    with pytest.raises(ValidationError) as exc:
        Content.from_document(
            {
                "platform": "x",
                "subtype": "tweet",
                "source_urls": [{"url": "u", "status": "ok", "observed_at": datetime(2026, 1, 1)}],
                "observed_at": T0,
            }
        )
    assert exc.value.errors()[0]["loc"][:3] == ("source_urls", 0, "observed_at")


def test_unknown_enum_value_is_rejected_by_name():
    with pytest.raises(ValidationError) as exc:
        tweet(platform="myspace")
    assert failing_fields(exc) == {"platform"}
    with pytest.raises(ValidationError) as exc:
        SourceUrlEntry(url="u", status="gone", observed_at=T0)
    assert failing_fields(exc) == {"status"}


def test_non_utc_aware_datetime_is_converted_to_utc():
    tokyo = timezone(timedelta(hours=9))
    content = tweet(published_at=datetime(2026, 1, 1, 9, 0, tzinfo=tokyo))
    assert content.published_at == datetime(2026, 1, 1, 0, 0, tzinfo=UTC)
    assert content.published_at.tzinfo is UTC


@pytest.mark.parametrize("key", [None, ""])
def test_accounts_and_venues_require_a_platform_key(key):
    with pytest.raises(ValidationError) as exc:
        Account.of(platform=Platform.X, platform_key=key, observed_at=T0)
    assert failing_fields(exc) == {"platform_key"}
    with pytest.raises(ValidationError) as exc:
        Venue.of(platform=Platform.TELEGRAM, subtype=VenueSubtype.CHANNEL, platform_key=key, observed_at=T0)
    assert failing_fields(exc) == {"platform_key"}


def test_accounts_and_venues_have_no_source_urls():
    assert "source_urls" not in Account.model_fields
    assert "source_urls" not in Venue.model_fields
    with pytest.raises(ValidationError) as exc:
        Account(platform=Platform.X, platform_key="1", observed_at=T0, source_urls=[entry()])
    assert failing_fields(exc) == {"source_urls"}


def test_ids_must_be_object_ids():
    with pytest.raises(ValidationError) as exc:
        tweet(creator_id=str(ObjectId()))
    assert failing_fields(exc) == {"creator_id"}


def test_ids_are_issued_at_construction_and_distinct():
    a, b = tweet(), tweet()
    assert isinstance(a.id, ObjectId) and a.id != b.id
    assert a.to_document()["_id"] == a.id


# ------------------------------------------------------------------ BSON round trip


def _through_bson(doc: dict) -> dict:
    return bson.decode(bson.encode(doc), codec_options=CODEC)


def test_every_model_round_trips_through_bson_with_aware_datetimes():
    tokyo = timezone(timedelta(hours=9))
    account = Account.of(
        platform=Platform.X,
        platform_key="42",
        observed_at=datetime(2026, 1, 1, 9, 0, 0, 123456, tzinfo=tokyo),
        handle="kol",
        followers=1200,
    )
    rows = [
        tweet(published_at=h(-3), creator_id=account.id, metrics={"viewCount": 10}),
        account,
        Venue.of(platform=Platform.TELEGRAM, subtype=VenueSubtype.GROUP, platform_key="-100", observed_at=T0),
        Token.of(
            address="So1",
            discovered_at=T0,
            social_urls=[
                SocialUrlRecord(
                    url="https://t.me/x", raw_url="t.me/x", platform=Platform.TELEGRAM,
                    subtype=VenueSubtype.CHANNEL, status=FetchStatus.ERROR, attempted_at=T0, attempts=1,
                )
            ],
        ),
        TokenLink.of(
            token_address="So1", object=ObjectKind.CONTENTS, object_id=ObjectId(), source_url="u",
            platform=Platform.X, subtype=ContentSubtype.TWEET, linked_at=T0, observed_at=T0,
        ),
        MetricSeries.of(
            ObjectKind.ACCOUNTS, account.id, Platform.X,
            [MetricPoint.of(Platform.X, ObjectKind.ACCOUNTS, {"followers": 1200}, h(1))],
        ),
    ]
    for row in rows:
        stored = _through_bson(row.to_document())
        back = type(row).from_document(stored)
        assert back == row
        assert all(
            v.tzinfo is not None for v in _datetimes(stored)
        ), f"{type(row).__name__} lost its timezone"
    # Sub-millisecond precision is dropped at construction, so nothing changes when stored.
    assert account.observed_at == datetime(2026, 1, 1, 0, 0, 0, 123000, tzinfo=UTC)


def _datetimes(value):
    if isinstance(value, datetime):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _datetimes(v)
    elif isinstance(value, list):
        for v in value:
            yield from _datetimes(v)


def test_documents_hold_plain_strings_and_no_null_top_level_fields():
    doc = tweet(platform_key=None).to_document()
    assert "platform_key" not in doc  # a stored null would collide on the partial unique index
    assert type(doc["platform"]) is str and type(doc["source_urls"][0]["status"]) is str


# ------------------------------------------------------------------ contents state changes


def test_add_source_url_keeps_one_entry_per_url():
    content = tweet()
    content.add_source_url("https://x.com/kol/status/1", FetchStatus.NOT_FOUND, h(2))
    content.add_source_url("https://x.com/i/status/1", FetchStatus.OK, h(3))
    assert content.urls == ["https://x.com/kol/status/1", "https://x.com/i/status/1"]
    assert content.source_urls[0].status == FetchStatus.NOT_FOUND
    assert content.source_urls[0].observed_at == h(2)


def test_add_source_url_ignores_an_older_observation():
    content = tweet()
    content.add_source_url("https://x.com/kol/status/1", FetchStatus.NOT_FOUND, h(-1))
    assert content.source_urls[0].status == FetchStatus.OK


def test_update_metrics_latest_ignores_regressions_and_advances_observed_at():
    content = tweet(metrics={"viewCount": 10, "unknownKey": 3})
    assert content.metrics_latest == {"viewCount": 10}
    assert content.update_metrics_latest({"viewCount": 20}, h(1)) is True
    assert content.observed_at == h(1)
    assert content.update_metrics_latest({"viewCount": 5}, h(0.5)) is False
    assert content.metrics_latest == {"viewCount": 20} and content.observed_at == h(1)


# ------------------------------------------------------------------ handle intervals


def account() -> Account:
    return Account.of(platform=Platform.TIKTOK, platform_key="7001", observed_at=T0)


def test_same_handle_extends_the_last_interval():
    acc = account()
    acc.add_handle_observation("alpha", h(0))
    acc.add_handle_observation("alpha", h(5))
    acc.add_handle_observation("alpha", h(2))  # older sighting: nothing shrinks
    assert [(i.value, i.first_seen, i.last_seen) for i in acc.handles] == [("alpha", h(0), h(5))]


def test_rotation_a_b_a_makes_three_intervals():
    acc = account()
    for value, at in [("a", 0), ("a", 1), ("b", 4), ("a", 8)]:
        acc.add_handle_observation(value, h(at))
    assert [(i.value, i.first_seen, i.last_seen) for i in acc.handles] == [
        ("a", h(0), h(1)),
        ("b", h(4), h(4)),
        ("a", h(8), h(8)),
    ]
    assert acc.current_handle() == "a"


def test_the_gap_between_handles_belongs_to_nobody():
    acc = account()
    acc.add_handle_observation("a", h(0))
    acc.add_handle_observation("a", h(1))
    acc.add_handle_observation("b", h(4))
    assert acc.had_handle_at("a", h(1))
    assert not acc.had_handle_at("a", h(2))  # previous interval is not stretched to the change
    assert not acc.had_handle_at("b", h(2))
    assert acc.had_handle_at("b", h(4))
    assert not acc.had_handle_at("a", h(4))


def test_out_of_order_arrival_truncates_the_previous_interval():
    acc = account()
    acc.add_handle_observation("a", h(0))
    acc.add_handle_observation("a", h(10))
    acc.add_handle_observation("b", h(6))
    first, second = acc.handles
    assert (first.value, first.first_seen, first.last_seen) == ("a", h(0), h(6))
    assert (second.value, second.first_seen) == ("b", h(6))


def test_current_handle_without_observations_is_none():
    assert account().current_handle() is None


def test_factory_handle_is_the_first_observation():
    acc = Account.of(platform=Platform.X, platform_key="1", observed_at=h(3), handle="kol")
    assert acc.had_handle_at("kol", h(3)) and not acc.had_handle_at("kol", h(2))


# ------------------------------------------------------------------ links, points


def link(ancestors) -> TokenLink:
    return TokenLink.of(
        token_address="So1", object=ObjectKind.CONTENTS, object_id=ObjectId(), source_url="u",
        platform=Platform.X, linked_at=T0, observed_at=T0, ancestor_ids=ancestors,
    )


def test_link_depth_is_derived_from_distinct_ancestors_and_capped():
    a, b, c = ObjectId(), ObjectId(), ObjectId()
    assert link([]).link_depth == 0 and link([]).is_direct()
    assert link([a, a]).link_depth == 1
    assert link([a, b]).link_depth == 2
    assert link([a, b, c]).link_depth == LINK_MAX_DEPTH == 2


def test_link_depth_is_not_a_factory_parameter():
    with pytest.raises(TypeError):
        TokenLink.of(
            token_address="So1", object=ObjectKind.CONTENTS, object_id=ObjectId(), source_url="u",
            platform=Platform.X, linked_at=T0, observed_at=T0, link_depth=1,
        )


def test_token_links_have_no_status_name_match_or_lineage():
    assert not {"status", "name_match", "lineage"} & set(TokenLink.model_fields)


def test_metric_point_keeps_account_followers_and_drops_unknown_keys():
    point = MetricPoint.of(Platform.X, ObjectKind.ACCOUNTS, {"followers": 900, "isBlueVerified": True, "x": 1}, T0)
    assert point.metrics == {"followers": 900}


def test_token_rejects_two_results_for_one_url():
    record = SocialUrlRecord(url="u", raw_url="u", status=FetchStatus.OK, attempted_at=T0)
    with pytest.raises(ValidationError) as exc:
        Token.of(address="So1", discovered_at=T0, social_urls=[record, record])
    assert failing_fields(exc) == {"social_urls"}


def test_metric_values_must_be_numbers_not_flags_or_strings():
    for bad in (True, "5", float("nan")):
        with pytest.raises(ValidationError) as exc:
            MetricPoint(at=T0, metrics={"viewCount": bad})
        assert failing_fields(exc) == {"metrics"}
        with pytest.raises(ValidationError) as exc:
            Content(platform=Platform.X, subtype=ContentSubtype.TWEET, source_urls=[entry()],
                    observed_at=T0, metrics_latest={"viewCount": bad})
        assert failing_fields(exc) == {"metrics_latest"}
    assert MetricPoint(at=T0, metrics={"a": 1, "b": 0.5}).metrics == {"a": 1, "b": 0.5}


def test_metric_series_factory_whitelists_points_by_platform_and_object_kind():
    point = MetricPoint(at=T0, metrics={"followers": 3, "viewCount": 4})
    series = MetricSeries.of(ObjectKind.ACCOUNTS, ObjectId(), Platform.X, [point])
    assert series.points[0].metrics == {"followers": 3}
    assert point.metrics == {"followers": 3, "viewCount": 4}  # the caller's point is not mutated


@pytest.mark.parametrize(
    ("kind", "subtype"),
    [
        (ObjectKind.ACCOUNTS, VenueSubtype.COMMUNITY),
        (ObjectKind.ACCOUNTS, ContentSubtype.TWEET),
        (ObjectKind.CONTENTS, VenueSubtype.CHANNEL),
        (ObjectKind.VENUES, ContentSubtype.TWEET),
    ],
)
def test_link_subtype_must_belong_to_the_linked_object_kind(kind, subtype):
    with pytest.raises(ValidationError) as exc:
        TokenLink.of(
            token_address="So1", object=kind, object_id=ObjectId(), source_url="u",
            platform=Platform.X, subtype=subtype, linked_at=T0, observed_at=T0,
        )
    assert failing_fields(exc) == {"subtype"}


def test_link_subtype_copied_from_its_target_is_accepted():
    cases = [(ObjectKind.ACCOUNTS, None), (ObjectKind.VENUES, "community"), (ObjectKind.CONTENTS, "tweet")]
    for kind, subtype in cases:
        made = TokenLink.of(
            token_address="So1",
            object=kind,
            object_id=ObjectId(),
            source_url="u",
            platform=Platform.X,
            subtype=subtype,
            linked_at=T0,
            observed_at=T0,
        )
        assert made.subtype == subtype


def test_datetimes_inside_free_form_fields_are_utc_aware_too():
    tokyo = timezone(timedelta(hours=9))
    with pytest.raises(ValidationError) as exc:
        tweet(data={"pushedAt": datetime(2026, 1, 1, 0, 0)})
    assert failing_fields(exc) == {"data"}
    with pytest.raises(ValidationError) as exc:
        Token.of(address="So1", discovered_at=T0, web={"whois": {"created": [datetime(2020, 1, 1)]}})
    assert failing_fields(exc) == {"web"}
    content = tweet(data={"nested": [{"at": datetime(2026, 1, 1, 9, 0, 0, 123456, tzinfo=tokyo)}]})
    assert content.data["nested"][0]["at"] == datetime(2026, 1, 1, 0, 0, 0, 123000, tzinfo=UTC)
    stored = _through_bson(content.to_document())
    assert Content.from_document(stored) == content


def _nulls(value, path=""):
    """Paths of every stored null in a document (free-form `data` / `web` excluded)."""
    if value is None:
        yield path
    elif isinstance(value, dict):
        for k, v in value.items():
            if path == "" and k in ("data", "web"):
                continue
            yield from _nulls(v, f"{path}.{k}" if path else k)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _nulls(v, f"{path}[{i}]")


def test_no_nulls_are_stored_in_embedded_values_either():
    """Absent means unknown at every level: `text.body`, `author.followers`, `metrics.followers`,
    `moderation.unavailable`, `metrics.members` and a junk URL's routing fields are left out."""
    from socialrec_pipeline.domain.graph import ContentText
    from socialrec_pipeline.domain.models import AuthorSnapshot

    author = AuthorSnapshot(account_id=ObjectId(), handle="kol")
    content = tweet(text=ContentText(primary="gm"), author=author, data={"lang": None})
    account = Account.of(platform=Platform.GITHUB, platform_key="dev", observed_at=T0, handle="dev")
    venue = Venue.of(platform=Platform.REDDIT, subtype=VenueSubtype.SUBREDDIT, platform_key="solana", observed_at=T0)
    junk = SocialUrlRecord(
        url="N/A", raw_url="N/A", source_field="discord", status=FetchStatus.UNSUPPORTED, attempted_at=T0
    )
    token = Token.of(address="Mint111", discovered_at=T0, social_urls=[junk])
    for model in (content, account, venue, token, junk):
        assert list(_nulls(model.to_document())) == [], type(model).__name__
    doc = content.to_document()
    assert doc["text"] == {"primary": "gm"} and doc["author"] == {"account_id": author.account_id, "handle": "kol"}
    assert doc["data"] == {"lang": None}  # provider values in `data` are stored as the provider gave them
    assert junk.to_document() == {
        "url": "N/A",
        "raw_url": "N/A",
        "source_field": "discord",
        "status": "unsupported",
        "attempted_at": T0,
        "attempts": 0,
    }
    # and every one of them reads back into the same model
    assert Account.from_document(account.to_document()) == account
    assert Token.from_document(token.to_document()) == token
    assert Content.from_document(doc) == content
