"""`socialrec backfill-queues`: rows written before the retry / refresh queues existed join them."""

from __future__ import annotations

from bson import ObjectId

from socialrec_pipeline.cli import main
from socialrec_pipeline.domain.enums import RETRY_PARTITIONS, FetchStatus, ObjectKind, Platform
from socialrec_pipeline.domain.models import MetricPoint, SocialUrlRecord, Token
from socialrec_pipeline.store import Store
from socialrec_pipeline.store.tokens import NO_ATTEMPT
from tests.store.conftest import T0, h, unique


def test_backfill_queues_derives_both_queues(mongo_uri, fresh_db, monkeypatch, capsys):
    store = Store(fresh_db)
    store.ensure_indexes()
    address = unique("So")
    url = "https://x.com/a/status/1"
    store.tokens.write_marker(Token.of(address=address, discovered_at=T0, social_urls=[
        SocialUrlRecord(url=url, raw_url=url, status=FetchStatus.ERROR, attempted_at=h(-2), attempts=1)]))
    object_id = ObjectId()
    store.metrics.record_first_point(ObjectKind.ACCOUNTS, object_id, Platform.X,
                                     MetricPoint.of(Platform.X, ObjectKind.ACCOUNTS, {"followers": 3}, h(-3)))
    # As written by the previous version: no queue fields.
    fresh_db.tokens.update_one({"address": address}, {"$unset": {"oldest_attempt": ""}})
    fresh_db.metric_series.update_one({"object_id": object_id, "object": "accounts"},
                                      {"$unset": {"refresh_at": "", "last_point_at": "", "linked_at": ""}})
    monkeypatch.setenv("MONGODB_URI", mongo_uri)
    monkeypatch.setenv("MONGODB_DATABASE", fresh_db.name)

    assert main(["backfill-queues"]) == 0

    assert "tokens updated: 1" in capsys.readouterr().out
    queue = fresh_db.tokens.find_one({"address": address})["oldest_attempt"]
    assert queue == {**{s.value: NO_ATTEMPT for s in RETRY_PARTITIONS}, "error": h(-2)}
    series = fresh_db.metric_series.find_one({"object": "accounts", "object_id": object_id})
    assert series["refresh_at"] == series["last_point_at"] == h(-3) and "linked_at" in series
