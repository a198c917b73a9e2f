"""The `token.flow` message body (contracts/token-flow-event.md), validated at the boundary."""

from __future__ import annotations

import json
import re
import unicodedata
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, TypeGuard

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
)
from pydantic_core import from_json

from socialrec_pipeline.domain.instants import is_instant, parse_instant

#: The recording threshold (SPEC §6.1): a typed constant, not a lookup that could fail open.
AF_INVESTOR_THRESHOLD: int = 5

MAX_MESSAGE_BYTES: int = 64 * 1024

_BASE58_ADDRESS = re.compile(r"^[1-9A-HJ-NP-Za-km-z]{32,44}$")


Instant = Annotated[datetime | None, BeforeValidator(parse_instant)]


#: `symbol` is display text that reaches run config, the run's log and the marker: bounded in
#: length, and free of anything that could hide or reorder what an operator reads.
MAX_SYMBOL_CHARS: int = 64
#: Unicode categories never allowed in event text: controls, lone surrogates (BSON cannot store
#: them), line and paragraph separators.
_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})
#: Bidirectional embeddings, overrides, isolates and marks (the "Trojan Source" characters) and
#: the byte-order mark. Other format characters (e.g. the zero-width joiner of emoji) are allowed.
_FORBIDDEN_CHARS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\ufeff")
#: The Solana mainnet-beta genesis: no token flowed before it.
EARLIEST_FLOW = datetime(2020, 3, 16, tzinfo=UTC)
#: Producer clocks may run a little ahead; anything further in the future is not a real flow.
MAX_FLOW_CLOCK_SKEW = timedelta(days=1)


#: The zero-width joiner: invisible, but it is how emoji sequences (🐸‍🔥) are written.
_ZWJ = "\u200d"
#: Emoji presentation selectors (U+FE0E/U+FE0F), which may stand between an emoji and a joiner.
_PRESENTATION = frozenset("\ufe0e\ufe0f")


def _joins_emoji(text: str, i: int) -> bool:
    """Whether the joiner at `text[i]` stands inside an emoji sequence: a symbol (or a skin-tone
    modifier, or a presentation selector after one) before it, a symbol after it."""
    before = text[i - 1] if i > 0 else ""
    if before in _PRESENTATION and i > 1:
        before = text[i - 2]
    after = text[i + 1] if i + 1 < len(text) else ""
    if not (before and after):
        return False
    return unicodedata.category(before) in ("So", "Sk") and unicodedata.category(after) == "So"


def clean_symbol(value: str | None) -> str | None:
    """The one cleaning rule for a token symbol, wherever it comes from (the event, SolTracker on
    the stream and on reconcile, a manual launch, the marker model): the text stripped, or None
    when it is empty, longer than `MAX_SYMBOL_CHARS`, or holds anything that could hide, reorder
    or forge what an operator reads — a control character (ANSI escape, BEL, newline, tab, NUL),
    a lone surrogate, a line/paragraph separator, or any invisible format character (bidi
    embeddings/overrides/isolates/marks, zero-width space and non-joiner, word joiner, soft
    hyphen, BOM, tag characters). The one format character kept is the zero-width joiner inside
    an emoji sequence. Dropped as a whole, never repaired: a symbol with hidden characters is
    not the text its publisher showed, and the recorder falls back to the upstream's symbol."""
    if value is None:
        return None
    text = value.strip()
    if not text or len(text) > MAX_SYMBOL_CHARS:
        return None
    for i, ch in enumerate(text):
        category = unicodedata.category(ch)
        if ch in _FORBIDDEN_CHARS or category in _FORBIDDEN_CATEGORIES:
            return None
        if category == "Cf" and not (ch == _ZWJ and _joins_emoji(text, i)):
            return None
    return text


def _symbol(value: Any) -> Any:
    # Dropped, not rejected: the symbol is display only, the token is still worth recording, and
    # the recorder falls back to the upstream's symbol (docs/decisions.md, "The stream").
    return clean_symbol(value) if isinstance(value, str) else value


def plausible_flow_time(value: datetime | None, now: datetime | None = None) -> datetime | None:
    """A first-flow time before Solana existed or beyond the clock skew is dropped (the upstream's
    value is used): the earliest time wins across duplicates, so a bogus early one would stick."""
    if value is None:
        return None
    now = now or datetime.now(UTC)
    return value if EARLIEST_FLOW <= value <= now + MAX_FLOW_CLOCK_SKEW else None


def is_token_address(value: Any) -> TypeGuard[str]:
    """A base58 Solana address of 32-44 characters (an event's tokenAddress, a launch's token_address)."""
    return isinstance(value, str) and _BASE58_ADDRESS.match(value) is not None


def _address(value: Any) -> str:
    if not is_token_address(value):
        raise ValueError("tokenAddress must be a base58 Solana address of 32-44 characters")
    return value


class TokenFlowEvent(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    token_address: Annotated[str, BeforeValidator(_address)] = Field(alias="tokenAddress")
    total_invested_alpha_finders: StrictInt = Field(alias="totalInvestedAlphaFinders", ge=0)
    first_flow_timestamp: Annotated[Instant, AfterValidator(plausible_flow_time)] = Field(
        default=None, alias="firstFlowTimestamp"
    )
    symbol: Annotated[StrictStr | None, BeforeValidator(_symbol)] = None
    af_group_id: StrictStr | None = Field(default=None, alias="afGroupId")
    flow_at: Instant = Field(default=None, alias="flowAt")

    def qualifies(self, threshold: int = AF_INVESTOR_THRESHOLD) -> bool:
        return self.total_invested_alpha_finders >= threshold


#: A dead-letter reason is logged, counted and sent as a message header: bounded and printable.
MAX_REASON_CHARS: int = 200


def safe_reason(text: str) -> str:
    """`text` with every character that is not printable (controls, bidi marks, surrogates, line
    breaks) replaced by `?`, cut to `MAX_REASON_CHARS`: validator messages quote the offending
    value, which comes from the producer and must not forge log lines or bloat headers."""
    cleaned = "".join(
        ch if ch.isprintable() and ch not in _FORBIDDEN_CHARS and unicodedata.category(ch) != "Cs" else "?"
        for ch in text[: MAX_REASON_CHARS + 1]
    )
    return cleaned if len(cleaned) <= MAX_REASON_CHARS else cleaned[: MAX_REASON_CHARS - 1] + "…"


class InvalidEvent(ValueError):
    """The message cannot be processed; `reason` is safe to log and count."""

    def __init__(self, reason: str) -> None:
        reason = safe_reason(reason)
        super().__init__(reason)
        self.reason = reason


def parse_token_flow(body: bytes) -> TokenFlowEvent:
    """Decode and validate one message body, or raise `InvalidEvent` with a short reason."""
    return validate_payload(decode_body(body))


def decode_body(body: bytes) -> dict[str, Any]:
    """The body's JSON object, or `InvalidEvent` with a short reason (size, JSON, not an object)."""
    if len(body) > MAX_MESSAGE_BYTES:
        raise InvalidEvent(f"message of {len(body)} bytes exceeds {MAX_MESSAGE_BYTES}")
    try:
        # pydantic's parser: ~0.6 µs for an event here, against ~2.5 µs for `json.loads`, which
        # was half of what the sensor spent on a message of its own. Where it succeeds the two
        # agree; what it refuses goes to `json.loads`, which reads some of it (UTF-16 and UTF-32, a
        # byte-order mark, a lone surrogate escape, nesting deeper than 200) and names the reason
        # for the rest.
        payload = from_json(body, cache_strings="keys")
    except ValueError:
        payload = _decode_standard(body)
    if not isinstance(payload, dict):
        raise InvalidEvent("body is not a JSON object")
    return payload


def _decode_standard(body: bytes) -> Any:
    """`json.loads`, its failures as `InvalidEvent` with a short reason."""
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidEvent(f"not valid JSON: {exc.__class__.__name__}") from None
    except (RecursionError, ValueError) as exc:
        # Deep nesting and over-long integers are valid JSON the parser refuses to build.
        raise InvalidEvent(f"unparseable JSON: {exc.__class__.__name__}") from None


def validate_payload(payload: dict[str, Any]) -> TokenFlowEvent:
    """The event a decoded body carries, or `InvalidEvent` naming the first field that fails."""
    try:
        return TokenFlowEvent.model_validate(payload)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first.get("loc", ())) or "body"
        raise InvalidEvent(f"{field}: {first.get('msg', 'invalid')}") from None


#: The model's own field names where they differ from the wire names: `populate_by_name` accepts
#: them too, so a payload using one is left to the full validation.
_FIELD_NAMES = frozenset(
    name for name, info in TokenFlowEvent.model_fields.items() if info.alias and info.alias != name
)


def clearly_below_threshold(payload: dict[str, Any], threshold: int) -> bool:
    """True only when `validate_payload(payload)` would succeed and the event is below `threshold`,
    decided without building the model (the sensor acks such a message and keeps nothing of it).

    False means "not decided here", never "invalid": the caller then runs the full validation,
    which builds the event or names the reason it is dead-lettered, exactly as before. Every check
    is the model's own rule, stricter where that is simpler: an exact `int` count in
    `0 <= count < threshold`, a base58 address, text or null for `symbol` and `afGroupId` (the
    symbol's cleaning never rejects text), timestamps `parse_instant` accepts, and none of the
    model's own field names (which `populate_by_name` would read instead).
    """
    count = payload.get("totalInvestedAlphaFinders")
    if type(count) is not int or not 0 <= count < threshold:  # noqa: E721 - bool is not a count
        return False
    if not is_token_address(payload.get("tokenAddress")):
        return False
    for key in ("symbol", "afGroupId"):
        text = payload.get(key)
        if text is not None and type(text) is not str:  # noqa: E721 - exactly what StrictStr takes
            return False
    if not (is_instant(payload.get("firstFlowTimestamp")) and is_instant(payload.get("flowAt"))):
        return False
    return _FIELD_NAMES.isdisjoint(payload)
