"""Which failed inbox writes are blamed on the message (dead-letter) and which on infrastructure."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pymongo.errors import AutoReconnect, BulkWriteError, NetworkTimeout

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
