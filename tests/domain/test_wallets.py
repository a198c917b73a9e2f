"""Wallet extraction from bios: real address shapes, and look-alikes that must not match."""

from __future__ import annotations

import pytest

from socialrec_pipeline.domain.wallets import (
    base58_decode,
    is_solana_address,
    normalize_wallet,
    wallets_in_text,
)

# Mainnet-shaped addresses (USDC, BONK and wSOL mints, a well-known wallet), each a 32-byte key.
USDC = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"
BONK = "DezXAZ8z7PnrnRJjz3wXBoRgixCa6xjnB7YaB1pPB263"
WALLET = "7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU"
WSOL = "So11111111111111111111111111111111111111112"  # 43 characters
PUMP_MINT = "2qEHjDLDLbuBgRYvsxhc5D6uDWAivNFZGan56P1tpump"  # pump.fun-shaped: ends in "pump"
#: A real transaction signature (64 bytes, 88 characters).
TX_SIG = "5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW"
EVM = "0x0Ae024D3C20a1b2c3d4e5f60718293a4b5c6d7e8"


def test_base58_decode_known_values():
    assert base58_decode("1") == b"\x00"
    assert base58_decode("11") == b"\x00\x00"
    assert base58_decode("2") == b"\x01"
    assert base58_decode("5Q") == bytes([0xFF])
    assert base58_decode("11111111111111111111111111111111") == bytes(32)
    assert len(base58_decode(USDC)) == 32
    assert len(base58_decode(TX_SIG)) == 64
    with pytest.raises(ValueError):
        base58_decode("0OIl")


@pytest.mark.parametrize("address", [USDC, BONK, WALLET, WSOL, PUMP_MINT])
def test_real_solana_addresses_are_addresses(address):
    assert is_solana_address(address)
    assert wallets_in_text(address) == [address]


@pytest.mark.parametrize(
    "bio, expected",
    [
        (f"CA: {WALLET}", [WALLET]),
        (f"CA:{WALLET}", [WALLET]),
        (f"$MOON CA - {PUMP_MINT} 🚀🚀", [PUMP_MINT]),
        (f"dev wallet ({WALLET}).", [WALLET]),
        (f"sol: {WALLET}, eth: {EVM}", [WALLET, EVM.lower()]),
        (f"{WALLET}|{BONK}", [WALLET, BONK]),
        (f"“{USDC}”", [USDC]),
        (f"… BNB: {EVM}…", [EVM.lower()]),
        (f"CA👉{WALLET}👈 twice: {WALLET}", [WALLET]),
        (f"line one\nCA\n{BONK}\n", [BONK]),
    ],
)
def test_addresses_in_real_bio_shapes(bio, expected):
    assert wallets_in_text(bio) == expected


@pytest.mark.parametrize(
    "bio",
    [
        # A transaction signature is 64 bytes: no 32–44 slice of it may match.
        f"proof: {TX_SIG}",
        f"tx {TX_SIG[:60]}",
        # Valid base58, decodes to 32 bytes, but a camel-case phrase (no digit).
        "BuyTheDipAndKeepForeverWeAreGoingToTheMoonSr",
        # Base58-looking path segments inside URLs name pages, not declared wallets.
        f"chart https://dexscreener.com/solana/{WALLET}",
        f"solscan.io/account/{WALLET}",
        f"www.pump.fun/coin/{PUMP_MINT}",
        f"https://solscan.io/tx/{TX_SIG}",
        # Too short / too long / wrong characters / glued to other letters.
        WALLET[:31],
        WALLET + "9",
        "x" + WALLET,
        WALLET.replace("7", "0"),
        # A 64-hex transaction hash is not an EVM address, nor 39 or 41 hex digits.
        "0x" + "ab" * 32,
        "0x" + "a" * 39,
        "0x" + "a" * 41,
        "",
    ],
)
def test_look_alikes_do_not_match(bio):
    assert wallets_in_text(bio) == []


def test_a_non_32_byte_run_is_not_an_address():
    # 44 base58 characters with digits and both cases, but the value needs 33 bytes.
    run = "zzzzZZZZ9999zzzzZZZZ9999zzzzZZZZ9999zzzzZZZZ"
    assert len(base58_decode(run)) > 32
    assert wallets_in_text(f"CA: {run}") == []


def test_wallets_are_normalized_for_joins():
    assert normalize_wallet(f" {EVM} ") == EVM.lower()
    assert normalize_wallet(WALLET) == WALLET
    assert wallets_in_text(None) == []
