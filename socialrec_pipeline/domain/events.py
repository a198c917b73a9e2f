"""The `token.flow` message body (contracts/token-flow-event.md), validated at the boundary."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
)

#: The recording threshold (SPEC §6.1): a typed constant, not a lookup that could fail open.
AF_INVESTOR_THRESHOLD: int = 5

MAX_MESSAGE_BYTES: int = 64 * 1024

_BASE58_ADDRESS = re.compile(r"^[1-9A-HJ-NP-Za-km-z]{32,44}$")


def parse_instant(value: Any) -> datetime | None:
    """ISO-8601 with an explicit offset, or epoch milliseconds, into an aware UTC datetime."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError("a boolean is not a timestamp")
    if isinstance(value, int):
        if not 0 <= value < 10**14:
            raise ValueError("epoch milliseconds out of range")
        return datetime.fromtimestamp(value / 1000, tz=timezone.utc)
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        parsed = datetime.fromisoformat(text)
        if parsed.tzinfo is None:
            raise ValueError("timestamp has no UTC offset")
        return parsed.astimezone(timezone.utc)
    raise ValueError(f"expected ISO-8601 string or epoch milliseconds, got {type(value).__name__}")


Instant = Annotated[datetime | None, BeforeValidator(parse_instant)]


def _address(value: Any) -> str:
    if not isinstance(value, str) or not _BASE58_ADDRESS.match(value):
        raise ValueError("tokenAddress must be a base58 Solana address of 32-44 characters")
    return value


class TokenFlowEvent(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    token_address: Annotated[str, BeforeValidator(_address)] = Field(alias="tokenAddress")
    total_invested_alpha_finders: StrictInt = Field(alias="totalInvestedAlphaFinders", ge=0)
    first_flow_timestamp: Instant = Field(default=None, alias="firstFlowTimestamp")
    symbol: StrictStr | None = None
    af_group_id: StrictStr | None = Field(default=None, alias="afGroupId")
    flow_at: Instant = Field(default=None, alias="flowAt")

    def qualifies(self, threshold: int = AF_INVESTOR_THRESHOLD) -> bool:
        return self.total_invested_alpha_finders >= threshold


class InvalidEvent(ValueError):
    """The message cannot be processed; `reason` is safe to log and count."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def parse_token_flow(body: bytes) -> TokenFlowEvent:
    """Decode and validate one message body, or raise `InvalidEvent` with a short reason."""
    if len(body) > MAX_MESSAGE_BYTES:
        raise InvalidEvent(f"message of {len(body)} bytes exceeds {MAX_MESSAGE_BYTES}")
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidEvent(f"not valid JSON: {exc.__class__.__name__}") from None
    except (RecursionError, ValueError) as exc:
        # Deep nesting and over-long integers are valid JSON the parser refuses to build.
        raise InvalidEvent(f"unparseable JSON: {exc.__class__.__name__}") from None
    if not isinstance(payload, dict):
        raise InvalidEvent("body is not a JSON object")
    try:
        return TokenFlowEvent.model_validate(payload)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first.get("loc", ())) or "body"
        raise InvalidEvent(f"{field}: {first.get('msg', 'invalid')}") from None
