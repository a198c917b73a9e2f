"""How each platform compares handles: the normalised key stored next to a handle's spelling.

X, GitHub, Reddit, TikTok, Instagram, Telegram and YouTube resolve a handle whatever its letter
case (`x.com/KolMixed` and `x.com/kolmixed` are one account), so a handle is matched on its
lower-cased key while the stored value keeps the platform's own spelling. A platform absent from
`CASE_INSENSITIVE` compares handles exactly. This module is the one place that rule lives: the
model's `handles[].key`, the store's queries and the interval merge all call `handle_key`.
"""

from __future__ import annotations

from socialrec_pipeline.domain.enums import Platform

CASE_INSENSITIVE: frozenset[Platform] = frozenset(
    {
        Platform.X,
        Platform.GITHUB,
        Platform.REDDIT,
        Platform.TIKTOK,
        Platform.INSTAGRAM,
        Platform.TELEGRAM,
        Platform.YOUTUBE,
    }
)


def handle_key(platform: Platform | str, handle: str) -> str:
    """The key `handle` is matched by on `platform` (lower-cased where the platform ignores case)."""
    try:
        insensitive = Platform(platform) in CASE_INSENSITIVE
    except ValueError:
        insensitive = False
    return handle.lower() if insensitive else handle


def handle_keys(handle: str) -> list[str]:
    """Every key `handle` can have on some platform (for a query that names no platform)."""
    return list(dict.fromkeys([handle.lower(), handle]))
