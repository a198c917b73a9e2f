"""One cleaning rule for every token symbol (issue 19 defect 4): `clean_symbol`, and the three
models that carry a symbol (the event, the upstream token, the marker) all apply it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from socialrec_pipeline.domain.events import MAX_SYMBOL_CHARS, TokenFlowEvent, clean_symbol
from socialrec_pipeline.domain.models import Token
from socialrec_pipeline.recording.soltracker import UpstreamToken

ADDRESS = "7GCihgDB8fe6KNjn2MYtkzZcRjQy3t9GHdC8uHYmW2hr"

#: Each breaks the rule in one way; every one must be dropped.
DIRTY = {
    "bidi override": "POP\u202eTAC",
    "bidi isolate": "POP\u2066CAT",
    "left-to-right mark": "\u200ePOP",
    "ANSI colour escape": "\x1b[31mPEPE\x1b[0m",
    "BEL": "PEPE\x07",
    "newline": "PEPE\nSEND 1 SOL",
    "tab": "PE\tPE",
    "NUL": "PEPE\x00",
    "zero-width space": "PE\u200bPE",
    "zero-width non-joiner": "PE\u200cPE",
    "zero-width joiner between letters": "PE\u200dPE",
    "word joiner": "PEPE\u2060",
    "soft hyphen": "PE\u00adPE",
    "byte-order mark": "\ufeffPEPE",
    "line separator": "PE\u2028PE",
    "tag characters": "PEPE\U000e0041",
    "lone surrogate": "\ud800",
    "one character too long": "x" * (MAX_SYMBOL_CHARS + 1),
    "absurd length": "W" * 70_000,
    "blank": "   ",
}

CLEAN = {
    "ascii": ("PEPE", "PEPE"),
    "dollar": ("$WIF", "$WIF"),
    "stripped": ("  POP  ", "POP"),
    "emoji joined by a zero-width joiner": ("🐸\u200d🔥 PEPE", "🐸\u200d🔥 PEPE"),
    "joiner after a presentation selector": ("❤\ufe0f\u200d🔥", "❤\ufe0f\u200d🔥"),
    "joiner after a skin tone": ("👨🏽\u200d💻", "👨🏽\u200d💻"),
    "cjk": ("中文币", "中文币"),
    "longest allowed": ("x" * MAX_SYMBOL_CHARS, "x" * MAX_SYMBOL_CHARS),
}


@pytest.mark.parametrize("text", DIRTY.values(), ids=DIRTY.keys())
def test_a_symbol_breaking_the_rule_is_dropped(text):
    assert clean_symbol(text) is None


@pytest.mark.parametrize(("text", "kept"), CLEAN.values(), ids=CLEAN.keys())
def test_a_clean_symbol_is_kept_stripped(text, kept):
    assert clean_symbol(text) == kept


@pytest.mark.parametrize("text", DIRTY.values(), ids=DIRTY.keys())
def test_every_model_carrying_a_symbol_applies_the_rule(text):
    event = TokenFlowEvent.model_validate({"tokenAddress": ADDRESS, "totalInvestedAlphaFinders": 6, "symbol": text})
    upstream = UpstreamToken.model_validate({"address": ADDRESS, "totalInvestedAlphaFinders": 6, "symbol": text})
    marker = Token.of(address=ADDRESS, discovered_at=datetime(2026, 12, 1, tzinfo=UTC), symbol=text)
    assert (event.symbol, upstream.symbol, marker.symbol) == (None, None, None)


def test_a_bad_upstream_symbol_leaves_the_rest_of_the_token_valid():
    upstream = UpstreamToken.model_validate(
        {"address": ADDRESS, "totalInvestedAlphaFinders": 6, "symbol": "\x1b]0;pwned\x07", "twitter": "x.com/kol"}
    )
    assert (upstream.symbol, upstream.twitter, upstream.total_invested_alpha_finders) == (None, "x.com/kol", 6)
