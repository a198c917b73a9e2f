"""Which failed inbox writes are blamed on the message (dead-letter) and which on infrastructure."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pymongo.errors import AutoReconnect, BulkWriteError, NetworkTimeout, WriteError

from socialrec_pipeline.domain.events import TokenFlowEvent
from socialrec_pipeline.stream.inbox import RecordInbox, rejects_content

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)


def test_bson_encoding_failures_are_the_message_s_fault(fresh_db):
    coll = fresh_db["scratch"]
    for bad in ({"s": "\ud800"}, {"n": 2**70}):
        with pytest.raises(Exception) as raised:
            coll.insert_one(bad)
        assert rejects_content(raised.value), raised.value


def test_a_missing_index_or_a_lost_connection_is_never_blamed_on_the_message(fresh_db):
    inbox = RecordInbox(fresh_db)  # indexes not ensured: the hinted writes are refused
    event = TokenFlowEvent.model_validate(
        {"tokenAddress": "So11111111111111111111111111111111111111112", "totalInvestedAlphaFinders": 6}
    )
    with pytest.raises(BulkWriteError) as raised:
        inbox.accept([event], NOW)
    assert not rejects_content(raised.value)
    assert not rejects_content(AutoReconnect("down")) and not rejects_content(NetworkTimeout("slow"))
    assert not rejects_content(RuntimeError("a bug"))


def test_a_dead_letter_reason_is_bounded_and_printable():
    from socialrec_pipeline.domain.events import MAX_REASON_CHARS, InvalidEvent, parse_token_flow, safe_reason

    body = {
        "tokenAddress": "So11111111111111111111111111111111111111112",
        "totalInvestedAlphaFinders": 6,
        "firstFlowTimestamp": "x" * 5_000,
    }
    import json

    with pytest.raises(InvalidEvent) as raised:
        parse_token_flow(json.dumps(body).encode())
    assert raised.value.reason.startswith("firstFlowTimestamp") and len(raised.value.reason) <= MAX_REASON_CHARS
    assert safe_reason("bad\nline\u202e\ud800 end") == "bad?line?? end"


def _oversized_upsert(coll, address: str) -> BulkWriteError:
    """The server's own answer to an inbox upsert whose new document exceeds 16 MiB."""
    from pymongo import UpdateOne

    pad = "x" * (17 * 1024 * 1024)
    with pytest.raises(BulkWriteError) as raised:
        coll.bulk_write([UpdateOne({"token_address": address}, {"$set": {"pad": pad}}, upsert=True)])
    return raised.value


def test_a_too_large_upsert_is_the_message_s_fault_whatever_code_the_server_uses(fresh_db):
    refused = _oversized_upsert(fresh_db["scratch"], "So11111111111111111111111111111111111111112")
    [error] = refused.details["writeErrors"]
    assert "larger than" in error["errmsg"]  # 17420 "Document to upsert is larger than 16777216"
    assert rejects_content(refused)
    # What real MongoDB answers for the same refusals (its codes and wording, as the driver raises them).
    for code, name, message in (
        (17420, "Location17420", "Document to upsert is larger than 16777216"),
        (17419, "Location17419", "Resulting document after update is larger than 16777216"),
        (10334, "BSONObjectTooLarge", "BSONObj size: 16793600 (0x1004000) is invalid"),
        (2, "BadValue", "object to insert too large. size in bytes: 16793650, max size: 16777216"),
        (9999999, "Location9999999", "Resulting document after update is larger than 16777216"),
    ):
        assert rejects_content(WriteError(message, code, {"code": code, "codeName": name, "errmsg": message}))
        bulk = BulkWriteError({"writeErrors": [{"index": 0, "code": code, "codeName": name, "errmsg": message}]})
        assert rejects_content(bulk), (code, message)
    # A bulk write refused for the content but not acknowledged by the majority is infrastructure.
    mixed = BulkWriteError(
        {"writeErrors": [{"index": 0, "code": 17420, "errmsg": "Document to upsert is larger than 16777216"}],
         "writeConcernErrors": [{"code": 64, "errmsg": "waiting for replication timed out"}]}
    )
    assert not rejects_content(mixed)
    hint = "error processing query: planner returned error :: caused by :: hint provided does not correspond"
    assert not rejects_content(WriteError(hint, 2, {"code": 2, "codeName": "BadValue", "errmsg": hint}))


class _OversizedInbox(RecordInbox):
    """An inbox that also stores, per event, a field of 17 MiB for the token `HUGE` (standing for
    any event whose entry the server refuses as too large: the refusal is the real server's)."""

    def accept(self, events, now):
        events = list(events)
        count = super().accept(events, now)
        if any(e.token_address == HUGE for e in events):
            raise _oversized_upsert(self._coll, f"{HUGE}-new")  # an upsert that inserts: 17420
        return count


HUGE = "7GCihgDB8fe6KNjn2MYtkzZcRjQy3t9GHdC8uHYmW2hr"


def test_a_too_large_inbox_upsert_dead_letters_its_message_and_the_stream_goes_on(broker, fresh_db):
    from socialrec_pipeline.stream.intake import TokenFlowDrain

    ok = "So11111111111111111111111111111111111111112"
    for address in (ok, HUGE, "DezXAZ8z7PnrnRJjz3wXBoRgixCa6xjnB7YaB1pPB263"):
        broker.publish({"tokenAddress": address, "totalInvestedAlphaFinders": 6})
    inbox = _OversizedInbox(fresh_db)
    inbox.ensure_indexes()
    counts = TokenFlowDrain(broker.url, broker.queue, inbox, 5, exchange=broker.exchange).run()
    assert counts.consumed == 3 and counts.invalid == 1 and counts.queued == 2
    assert broker.depth(broker.queue) == 0  # acknowledged: nothing stalls, nothing is redelivered
    [reason] = counts.invalid_reasons
    assert "BulkWriteError" in reason
