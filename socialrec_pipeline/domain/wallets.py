"""Wallet addresses written in free text (account bios): the on-chain ↔ social join axis.

Pure rules, no IO. `wallets_in_text(bio)` returns, in order and each once:
- **Solana**: a run of 32–44 base58 characters that decodes to exactly 32 bytes (an ed25519
  public key). The run must stand alone — the characters on either side are neither letters nor
  digits (so a 64–88 character transaction signature never yields a 44-character slice), and it
  must hold a digit and letters of both cases (a long camel-case word or hashtag that happens to
  be valid base58 is not an address; a real address lacks a digit with probability ≈ (49/58)^n,
  0.1–0.5 %, the price of that rule).
- **EVM**: `0x` + exactly 40 hex digits standing alone (a 64-hex transaction hash does not match),
  stored lower-cased: EVM addresses are case-insensitive (the mixed case is only a checksum).

URLs are removed before matching: a base58-looking path segment (`solscan.io/tx/…`,
`pump.fun/coin/…`) names a page, not a wallet the account declares.
"""

from __future__ import annotations

import re

BASE58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_BASE58_INDEX = {c: i for i, c in enumerate(BASE58_ALPHABET)}

_SOLANA = re.compile(r"(?<![0-9A-Za-z])[1-9A-HJ-NP-Za-km-z]{32,44}(?![0-9A-Za-z])")
_EVM = re.compile(r"(?<![0-9A-Za-z])0x[0-9a-fA-F]{40}(?![0-9A-Za-z])")
#: Scheme URLs, `www.` hosts and `host.tld/path` forms, each up to the next blank.
_URLISH = re.compile(
    r"(?:[a-z][a-z0-9+.-]*://\S+)|(?:\bwww\.\S+)|(?:\b[\w-]+(?:\.[\w-]+)+/\S*)", re.IGNORECASE
)


def base58_decode(text: str) -> bytes:
    """Bitcoin-alphabet base58 → bytes; each leading `1` is one leading zero byte.

    Raises ValueError on a character outside the alphabet."""
    number = 0
    for char in text:
        digit = _BASE58_INDEX.get(char)
        if digit is None:
            raise ValueError(f"{char!r} is not a base58 character")
        number = number * 58 + digit
    zeros = len(text) - len(text.lstrip("1"))
    body = number.to_bytes((number.bit_length() + 7) // 8, "big") if number else b""
    return b"\x00" * zeros + body


def is_solana_address(candidate: str) -> bool:
    """32–44 base58 characters decoding to exactly 32 bytes (no context rules)."""
    if not 32 <= len(candidate) <= 44:
        return False
    try:
        return len(base58_decode(candidate)) == 32
    except ValueError:
        return False


def _looks_like_address(run: str) -> bool:
    return (
        any(c.isdigit() for c in run)
        and any(c.isupper() for c in run)
        and any(c.islower() for c in run)
        and is_solana_address(run)
    )


def normalize_wallet(value: str) -> str:
    """The stored spelling of a wallet: EVM lower-cased, Solana as written (base58 is case-exact)."""
    value = value.strip()
    return value.lower() if _EVM.fullmatch(value) else value


def wallets_in_text(text: str | None) -> list[str]:
    """Solana and EVM addresses written in `text`, in order of appearance, each once."""
    if not text:
        return []
    cleaned = _URLISH.sub(" ", text)
    found: list[tuple[int, str]] = []
    for match in _SOLANA.finditer(cleaned):
        if _looks_like_address(match.group()):
            found.append((match.start(), match.group()))
    for match in _EVM.finditer(cleaned):
        found.append((match.start(), match.group().lower()))
    return list(dict.fromkeys(value for _, value in sorted(found)))
