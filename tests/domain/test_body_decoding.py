"""A message body decodes to what the standard library's `json.loads` reads from it, or is refused
where it refuses it, whichever parser does the work (`decode_body` tries pydantic's first).

Values are compared through `json.dumps`, so 1 and 1.0, True and 1, and the order of keys all
count, and NaN equals NaN.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from socialrec_pipeline.domain import events
from socialrec_pipeline.domain.events import MAX_MESSAGE_BYTES, InvalidEvent, decode_body
from socialrec_pipeline.domain.instants import MAX_EPOCH_MS, is_instant, parse_instant

TYPICAL = (
    b'{"tokenAddress": "7GCihgDB8fe6KNjn2MYtkzZcRjQy3t9GHdC8uHYmW2hr", "totalInvestedAlphaFinders": 2, '
    b'"firstFlowTimestamp": "2026-11-29T21:14:03.512Z", "symbol": "POPCAT", "afGroupId": "g-main", '
    b'"flowAt": 1796245200000}'
)


def standard(body: bytes) -> str | None:
    """What `json.loads` reads (as JSON text again), None where it refuses or reads no object."""
    if len(body) > MAX_MESSAGE_BYTES:
        return None
    try:
        value = json.loads(body)
    except Exception:  # noqa: BLE001 - any refusal
        return None
    return json.dumps(value) if isinstance(value, dict) else None


def decoded(body: bytes) -> str | None:
    try:
        return json.dumps(decode_body(body))
    except InvalidEvent:
        return None


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats()
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@given(payload=st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=6), ascii_only=st.booleans())
def test_any_json_object_decodes_as_the_standard_library_reads_it(payload, ascii_only):
    body = json.dumps(payload, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    assert decoded(body) == standard(body)


@given(body=st.binary(max_size=64))
def test_any_bytes_decode_or_are_refused_as_the_standard_library_decides(body):
    assert decoded(body) == standard(body)


@given(
    prefix=st.sampled_from([b"", b" ", b"\xef\xbb\xbf", b"["]),
    middle=st.sampled_from([b'{"a": 1}', b'{"a": NaN}', b'{"a": "\\ud800"}', b'{"a": 1e999}', b'{"a": [1,]}']),
    suffix=st.sampled_from([b"", b" ", b"\n", b"]", b"x", b"\x00"]),
)
def test_near_misses_decode_as_the_standard_library_reads_them(prefix, middle, suffix):
    body = prefix + middle + suffix
    assert decoded(body) == standard(body)


@pytest.mark.parametrize(
    "body",
    [
        '{"a": 1}'.encode("utf-16"),
        '{"a": 1}'.encode("utf-32"),
        b'\xef\xbb\xbf{"a": 1}',
        b'{"a": "\\udc00"}',
        b'{"a": ' + b"[" * 300 + b"]" * 300 + b"}",
    ],
    ids=["utf-16", "utf-32", "byte-order-mark", "lone-surrogate", "nesting-300"],
)
def test_what_the_fast_parser_refuses_the_standard_library_still_reads(body):
    assert decoded(body) is not None
    assert decoded(body) == standard(body)


def test_a_typical_event_is_decoded_without_the_standard_librarys_parser(monkeypatch):
    """The speed of the sensor's drain rests on this (docs/benchmarks.md, `sensor.py`)."""

    def refuse(*args, **kwargs):
        raise AssertionError("json.loads was called")

    monkeypatch.setattr(events.json, "loads", refuse)
    assert decode_body(TYPICAL)["totalInvestedAlphaFinders"] == 2


def parses(value: object) -> bool:
    try:
        parse_instant(value)
    except Exception:  # noqa: BLE001 - any refusal
        return False
    return True


@given(
    value=st.one_of(
        st.integers(min_value=-(10**15), max_value=10**15),
        st.sampled_from([0, MAX_EPOCH_MS - 1, MAX_EPOCH_MS, -1, True, False, None, 1.5, [1]]),
        st.text(max_size=30),
        st.datetimes(timezones=st.timezones()).map(lambda at: at.isoformat()),
        st.datetimes().map(lambda at: at.isoformat() + "Z"),
    )
)
def test_is_instant_answers_what_parse_instant_accepts(value):
    assert is_instant(value) == parses(value)
