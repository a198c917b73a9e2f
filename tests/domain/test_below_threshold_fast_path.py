"""The sensor's shortcut for valid events below the threshold never changes a verdict.

`clearly_below_threshold` lets the drain ack a below-threshold message without building the
model; it may only answer True for a payload the full validation accepts with a count below the
threshold. `classify` with the threshold must give every invalid body the same dead-letter reason
as the full validation, and every qualifying body the same event.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from socialrec_pipeline.domain.events import (
    InvalidEvent,
    clearly_below_threshold,
    decode_body,
    parse_token_flow,
    validate_payload,
)
from socialrec_pipeline.stream.intake import classify

ADDRESS = "7GCihgDB8fe6KNjn2MYtkzZcRjQy3t9GHdC8uHYmW2hr"
TYPICAL = {
    "tokenAddress": ADDRESS,
    "totalInvestedAlphaFinders": 2,
    "firstFlowTimestamp": "2026-11-29T21:14:03.512Z",
    "symbol": "POPCAT",
    "afGroupId": "g-main",
    "flowAt": 1796245200000,
}


def full_verdict(body: bytes, threshold: int) -> tuple[str, object]:
    """What the full validation says: ("invalid", reason), ("below", None) or ("qualifies", event)."""
    try:
        event = parse_token_flow(body)
    except InvalidEvent as exc:
        return "invalid", exc.reason
    except Exception as exc:  # noqa: BLE001 - classify's own fallback reason
        return "invalid", f"unparseable body: {type(exc).__name__}"
    return ("qualifies", event) if event.qualifies(threshold) else ("below", None)


def assert_same_verdict(body: bytes, threshold: int) -> None:
    kind, value = full_verdict(body, threshold)
    event, reason = classify(body, threshold)
    if kind == "invalid":
        assert (event, reason) == (None, value)
    elif kind == "qualifies":
        assert (event, reason) == (value, "")
    else:
        assert reason == "" and (event is None or not event.qualifies(threshold))


def test_the_typical_below_threshold_event_takes_the_shortcut():
    assert clearly_below_threshold(TYPICAL, 5)
    assert classify(json.dumps(TYPICAL).encode(), 5) == (None, "")
    assert not clearly_below_threshold({**TYPICAL, "totalInvestedAlphaFinders": 5}, 5)  # qualifies


@pytest.mark.parametrize(
    "change",
    [
        {"tokenAddress": "0OIl" * 10},
        {"tokenAddress": None},
        {"totalInvestedAlphaFinders": True},
        {"totalInvestedAlphaFinders": -1},
        {"totalInvestedAlphaFinders": 2.0},
        {"totalInvestedAlphaFinders": "2"},
        {"firstFlowTimestamp": "2026-11-29T21:14:03"},  # no offset
        {"firstFlowTimestamp": "0001-01-01T00:00:00+01:00"},  # overflows on conversion to UTC
        {"flowAt": 10**14},
        {"flowAt": False},
        {"flowAt": 1.5},
        {"symbol": 5},
        {"symbol": ["POPCAT"]},
        {"afGroupId": 7},
        {"token_address": ADDRESS},  # a field name the model also reads
        {"total_invested_alpha_finders": 9},
    ],
)
def test_anything_doubtful_goes_to_the_full_validation_with_the_same_outcome(change):
    payload = {**TYPICAL, **change}
    assert not clearly_below_threshold(payload, 5)
    assert_same_verdict(json.dumps(payload).encode(), 5)


def test_text_and_null_the_model_accepts_still_take_the_shortcut():
    for change in ({"symbol": "\u202eevil"}, {"symbol": None}, {"afGroupId": None}, {"firstFlowTimestamp": None}):
        payload = {**TYPICAL, **change}
        validate_payload(payload)  # valid
        assert clearly_below_threshold(payload, 5)


def test_bodies_that_are_not_objects_keep_their_reasons():
    for body in (b"{not json", b"[1]", b"\xff", b"[" * 30_000 + b"]" * 30_000, b"x" * 70_000):
        assert_same_verdict(body, 5)
        with pytest.raises(InvalidEvent):
            decode_body(body)


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=12),
    st.integers(min_value=0, max_value=2 * 10**14),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(
        [
            ADDRESS,
            "So11111111111111111111111111111111111111112",
            "short",
            "",
            "2026-11-29T21:14:03.512Z",
            "2026-11-29T21:14:03+09:00",
            "2026-11-29T21:14:03",
            "9999-12-31T23:59:59-01:00",
            "1999-01-01T00:00:00Z",
            "POPCAT",
            " \u200b ",
        ]
    ),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=2),
)
KEYS = st.sampled_from(
    [
        "tokenAddress",
        "totalInvestedAlphaFinders",
        "firstFlowTimestamp",
        "symbol",
        "afGroupId",
        "flowAt",
        "token_address",
        "total_invested_alpha_finders",
        "first_flow_timestamp",
        "af_group_id",
        "flow_at",
        "somethingNew",
    ]
)


@given(
    base=st.booleans(),
    changes=st.dictionaries(KEYS, VALUES, max_size=3),
    dropped=st.lists(KEYS, max_size=2),
    threshold=st.integers(min_value=1, max_value=8),
)
def test_any_payload_gets_the_verdict_of_the_full_validation(base, changes, dropped, threshold):
    payload = {**(TYPICAL if base else {}), **changes}
    for key in dropped:
        payload.pop(key, None)
    if clearly_below_threshold(payload, threshold):
        assert not validate_payload(payload).qualifies(threshold)
    assert_same_verdict(json.dumps(payload).encode(), threshold)


@given(key=KEYS, value=VALUES, threshold=st.integers(min_value=1, max_value=8))
def test_one_field_changed_in_a_typical_event_gets_the_verdict_of_the_full_validation(key, value, threshold):
    """Near the shortcut's edge: the typical event with one field replaced (most keep it valid)."""
    payload = {**TYPICAL, key: value}
    if clearly_below_threshold(payload, threshold):
        assert not validate_payload(payload).qualifies(threshold)
    assert_same_verdict(json.dumps(payload).encode(), threshold)
