"""token.flow message validation at the boundary (contracts/token-flow-event.md)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from socialrec_pipeline.domain.events import (
    AF_INVESTOR_THRESHOLD,
    MAX_MESSAGE_BYTES,
    InvalidEvent,
    parse_token_flow,
)

ADDRESS = "7GCihgDB8fe6KNjn2MYtkzZcRjQy3t9GHdC8uHYmW2hr"


def body(**fields) -> bytes:
    payload = {"tokenAddress": ADDRESS, "totalInvestedAlphaFinders": 6, **fields}
    return json.dumps({k: v for k, v in payload.items() if v is not ...}).encode()


def test_contract_example_parses_with_utc_times_and_ignores_unknown_fields():
    event = parse_token_flow(
        body(
            firstFlowTimestamp="2026-11-29T21:14:03.512Z",
            symbol="POPCAT",
            afGroupId="g-main",
            flowAt=1796245200000,
            somethingNew={"nested": True},
        )
    )
    assert event.token_address == ADDRESS
    assert event.first_flow_timestamp == datetime(2026, 11, 29, 21, 14, 3, 512000, tzinfo=UTC)
    assert event.flow_at == datetime.fromtimestamp(1796245200, tz=UTC)
    assert event.symbol == "POPCAT"


def test_offset_timestamps_are_converted_to_utc():
    event = parse_token_flow(body(firstFlowTimestamp="2026-11-30T09:00:00+09:00"))
    assert event.first_flow_timestamp == datetime(2026, 11, 30, 0, 0, tzinfo=UTC)


def test_threshold_is_five_and_inclusive():
    assert AF_INVESTOR_THRESHOLD == 5
    assert parse_token_flow(body(totalInvestedAlphaFinders=5)).qualifies()
    assert not parse_token_flow(body(totalInvestedAlphaFinders=4)).qualifies()


@pytest.mark.parametrize(
    ("raw", "reason_fragment"),
    [
        (b"not json", "not valid JSON"),
        (b"\xff\xfe", "not valid JSON"),
        (b"[1, 2]", "not a JSON object"),
        (body(tokenAddress=...), "tokenAddress"),
        (body(tokenAddress="0OIl" * 10), "tokenAddress"),
        (body(tokenAddress="short"), "tokenAddress"),
        (body(tokenAddress=123), "tokenAddress"),
        (body(totalInvestedAlphaFinders=...), "totalInvestedAlphaFinders"),
        (body(totalInvestedAlphaFinders="6"), "totalInvestedAlphaFinders"),
        (body(totalInvestedAlphaFinders=True), "totalInvestedAlphaFinders"),
        (body(totalInvestedAlphaFinders=6.5), "totalInvestedAlphaFinders"),
        (body(totalInvestedAlphaFinders=-1), "totalInvestedAlphaFinders"),
        (body(firstFlowTimestamp="2026-11-29T21:14:03"), "firstFlowTimestamp"),
        (body(firstFlowTimestamp="yesterday"), "firstFlowTimestamp"),
        (body(firstFlowTimestamp=[1]), "firstFlowTimestamp"),
        (body(symbol=5), "symbol"),
    ],
)
def test_invalid_messages_raise_with_a_reason_naming_the_problem(raw, reason_fragment):
    with pytest.raises(InvalidEvent) as caught:
        parse_token_flow(raw)
    assert reason_fragment in caught.value.reason


def test_oversized_message_is_rejected_before_parsing():
    huge = body(symbol="x" * MAX_MESSAGE_BYTES)
    with pytest.raises(InvalidEvent, match="exceeds"):
        parse_token_flow(huge)


@pytest.mark.parametrize(
    "raw",
    [b"[" * 30_000 + b"]" * 30_000, b'{"totalInvestedAlphaFinders": ' + b"9" * 5_000 + b"}"],
    ids=["deep-nesting", "huge-integer"],
)
def test_json_the_parser_refuses_to_build_is_an_invalid_event(raw):
    assert len(raw) <= MAX_MESSAGE_BYTES
    with pytest.raises(InvalidEvent, match="unparseable JSON"):
        parse_token_flow(raw)
