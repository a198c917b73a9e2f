"""A small graph whose every signal is worked out by hand in tests/signals/test_signals.py.

Two days: D0 = 2026-11-09 and D1 = 2026-11-10 (UTC); D2 is "later" (after D1's cutoff).

    token  discovered   links (linked_at)                         fingerprints
    A1     D0 10:00     C1 (D0 10:05), H (D0 10:06)               domain:shared.io
    A2     D0 11:00     K2 (D0 11:05)                             domain:shared.io
    B1     D0 12:00     V1 (D0 12:05), H (D0 12:06)
    B2     D0 13:00     V1 (D0 13:05)
    Z1     D0 14:00     H (D0 14:05)
    Z2     D0 15:00     H (D0 15:05)
    T      D1 12:00     C1 (D1 12:01), C2 (D1 12:02), K2 (D1 12:03),   domain:shared.io, domain:own.xyz
                        K3 (D1 12:04), V2 (D1 12:05),
                        C3 (D2 01:00: after the cutoff)
    L      D1 13:00     C1 (D1 13:01)
    N1     D2 09:00     H (D2 09:05)

Objects: C1 an X tweet created by K1 (an X account created 3 days before T's discovery); C2 a
YouTube video whose title holds T's address; K2 a YouTube channel created 400 days before T's
discovery; K3 an Instagram profile (no creation time); V1 a venue of B1 and B2; V2 a Telegram
channel whose description holds T's address; H a hub account (4 tokens by D1, limit 3 in the
tests); W an X account whose bio (known_wallets) holds T's address, stored D1 09:00; W2 the same,
stored on D2. Series: C1 likeCount 10 (D0 10:00) → 58 (D1 10:00); C2 viewCount 100 (D1 10:00) →
250 (D1 12:00) → 900 (D1 14:00), then 100000 on D2 01:00 (after the cutoff).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from bson import ObjectId

D0 = datetime(2026, 11, 9, tzinfo=UTC)
D1 = datetime(2026, 11, 10, tzinfo=UTC)
D2 = datetime(2026, 11, 11, tzinfo=UTC)

T = "7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU"  # a real-looking address: the smallest of all
A1, A2, B1, B2, Z1, Z2, L, N1 = "A1tok", "A2tok", "B1tok", "B2tok", "Z1tok", "Z2tok", "Ltok", "N1tok"


def at(day: datetime, hour: int, minute: int = 0) -> datetime:
    return day + timedelta(hours=hour, minutes=minute)


class Ids:
    def __init__(self) -> None:
        self.C1, self.C2, self.C3 = ObjectId(), ObjectId(), ObjectId()
        self.K1, self.K2, self.K3, self.H, self.W, self.W2 = (ObjectId() for _ in range(6))
        self.V1, self.V2 = ObjectId(), ObjectId()


def _token(address: str, discovered_at: datetime, fingerprints: list[str] | None = None) -> dict[str, Any]:
    return {
        "address": address,
        "discovered_at": discovered_at,
        "fingerprints": fingerprints or [],
        "social_urls": [],
        "created_at": discovered_at,
        "updated_at": discovered_at,
    }


def link(address: str, kind: str, object_id: ObjectId, linked_at: datetime, platform: str = "x") -> dict[str, Any]:
    return {
        "token_address": address,
        "object": kind,
        "object_id": object_id,
        "source_url": f"https://example.test/{address}/{object_id}",
        "platform": platform,
        "link_depth": 0,
        "linked_at": linked_at,
        "observed_at": linked_at,
        "created_at": linked_at,
        "updated_at": linked_at,
    }


def _account(oid: ObjectId, platform: str, created: datetime | None, stored: datetime, wallets=()) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "_id": oid,
        "platform": platform,
        "platform_key": f"key-{oid}",
        "known_wallets": list(wallets),
        "observed_at": stored,
        "created_at": stored,
        "updated_at": stored,
    }
    if created is not None:
        doc["account_created_at"] = created
    return doc


def point(when: datetime, **metrics: int) -> dict[str, Any]:
    return {"at": when, "metrics": metrics}


def seed(db) -> Ids:
    ids = Ids()
    t_found = at(D1, 12)
    db.tokens.insert_many(
        [
            _token(A1, at(D0, 10), ["domain:shared.io"]),
            _token(A2, at(D0, 11), ["domain:shared.io"]),
            _token(B1, at(D0, 12)),
            _token(B2, at(D0, 13)),
            _token(Z1, at(D0, 14)),
            _token(Z2, at(D0, 15)),
            _token(T, t_found, ["domain:shared.io", "domain:own.xyz"]),
            _token(L, at(D1, 13)),
            _token(N1, at(D2, 9)),
        ]
    )
    db.accounts.insert_many(
        [
            _account(ids.K1, "x", t_found - timedelta(days=3), at(D0, 10)),
            _account(ids.K2, "yt", t_found - timedelta(days=400), at(D0, 11)),
            _account(ids.K3, "ig", None, at(D1, 12)),
            _account(ids.H, "x", t_found - timedelta(days=2000), at(D0, 10)),
            _account(ids.W, "x", t_found - timedelta(days=1), at(D1, 9), wallets=[T]),
            _account(ids.W2, "x", None, at(D2, 1), wallets=[T]),
        ]
    )
    stored = at(D0, 10)
    db.contents.insert_many(
        [
            {"_id": ids.C1, "platform": "x", "subtype": "tweet", "creator_id": ids.K1, "text": {"primary": "gm"},
             "source_urls": [{"url": f"https://x.com/k1/status/{ids.C1}", "status": "ok", "observed_at": stored}],
             "observed_at": stored, "created_at": stored},
            {"_id": ids.C2, "platform": "yt", "subtype": "video", "text": {"primary": f"buy {T} now"},
             "source_urls": [{"url": f"https://youtu.be/{ids.C2}", "status": "ok", "observed_at": stored}],
             "observed_at": stored, "created_at": stored},
            {"_id": ids.C3, "platform": "x", "subtype": "tweet", "creator_id": ids.H, "text": {"body": T},
             "source_urls": [{"url": f"https://x.com/h/status/{ids.C3}", "status": "ok", "observed_at": stored}],
             "observed_at": stored, "created_at": stored},
        ]
    )
    db.venues.insert_many(
        [
            {"_id": ids.V1, "platform": "tg", "platform_key": "v1", "observed_at": stored, "created_at": stored},
            {"_id": ids.V2, "platform": "tg", "platform_key": "v2", "description": f"CA: {T}",
             "observed_at": stored, "created_at": stored},
        ]
    )
    db.token_links.insert_many(
        [
            link(A1, "contents", ids.C1, at(D0, 10, 5)),
            link(A1, "accounts", ids.H, at(D0, 10, 6)),
            link(A2, "accounts", ids.K2, at(D0, 11, 5), "yt"),
            link(B1, "venues", ids.V1, at(D0, 12, 5), "tg"),
            link(B1, "accounts", ids.H, at(D0, 12, 6)),
            link(B2, "venues", ids.V1, at(D0, 13, 5), "tg"),
            link(Z1, "accounts", ids.H, at(D0, 14, 5)),
            link(Z2, "accounts", ids.H, at(D0, 15, 5)),
            link(T, "contents", ids.C1, at(D1, 12, 1)),
            link(T, "contents", ids.C2, at(D1, 12, 2), "yt"),
            link(T, "accounts", ids.K2, at(D1, 12, 3), "yt"),
            link(T, "accounts", ids.K3, at(D1, 12, 4), "ig"),
            link(T, "venues", ids.V2, at(D1, 12, 5), "tg"),
            link(T, "contents", ids.C3, at(D2, 1)),
            link(L, "contents", ids.C1, at(D1, 13, 1)),
            link(N1, "accounts", ids.H, at(D2, 9, 5)),
        ]
    )
    db.metric_series.insert_many(
        [
            {"object": "contents", "object_id": ids.C1, "platform": "x",
             "points": [point(at(D0, 10), likeCount=10), point(at(D1, 10), likeCount=58)]},
            {"object": "contents", "object_id": ids.C2, "platform": "yt",
             "points": [point(at(D1, 10), viewCount=100), point(at(D1, 12), viewCount=250),
                        point(at(D1, 14), viewCount=900), point(at(D2, 1), viewCount=100_000)]},
        ]
    )
    return ids
