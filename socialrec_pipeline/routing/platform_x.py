"""X / Twitter: tweets, profiles, communities, searches, intents, t.co short links.

Keys: tweet id, community id, lower-case handle (X handles are case-insensitive), the search query as
written (stripped), `{action}?{params}` for intents, the t.co code as written (case-sensitive).
"""

from __future__ import annotations

import re

from socialrec_pipeline.routing.normalize import ParsedUrl, generic_canonical, q
from socialrec_pipeline.routing.reserved import X_RESERVED
from socialrec_pipeline.routing.source_types import SourceType as ST

Classified = tuple[ST, str | None, str]

_ID = re.compile(r"^\d{1,20}$")
_HANDLE = re.compile(r"^[A-Za-z0-9_]{1,15}$")
_TCO = re.compile(r"^[A-Za-z0-9]{1,20}$")
X = "https://x.com"

#: `/{handle}/{tab}` pages that still identify the profile.
_PROFILE_TABS = frozenset(
    {
        "with_replies", "media", "likes", "highlights", "articles", "followers", "following",
        "verified_followers", "followers_you_follow", "photo", "header_photo", "superfollows",
        "affiliates", "communities", "lists", "topics", "creator-subscriptions",
    }
)
#: Tweet sub-pages that still identify the tweet.
_TWEET_TABS = frozenset({"photo", "video", "analytics", "likes", "retweets", "quotes", "history", "media_tags"})

#: Intent action → the parameters that identify it (everything else is dropped).
_INTENT_PARAMS: dict[str, tuple[str, ...]] = {
    "tweet": ("hashtags", "text", "url", "via"),
    "follow": ("screen_name", "user_id"),
    "user": ("screen_name", "user_id"),
    "retweet": ("tweet_id",),
    "like": ("tweet_id",),
}
_INTENT_ALIASES = {"post": "tweet", "favorite": "like", "share": "tweet"}


def _unknown(p: ParsedUrl) -> Classified:
    url = generic_canonical(p, "x.com")
    return ST.X_UNKNOWN, url, url


def _tweet(tweet_id: str, handle: str | None) -> Classified:
    who = handle.lower() if handle else "i"
    return ST.X_TWEET, tweet_id, f"{X}/{who}/status/{tweet_id}"


def _search(query: str) -> Classified:
    return ST.X_SEARCH, query, f"{X}/search?q={q(query)}"


def _intent(p: ParsedUrl, action: str) -> Classified:
    action = _INTENT_ALIASES.get(action, action)
    names = _INTENT_PARAMS.get(action)
    if names is None:
        return _unknown(p)
    parts = []
    for name in names:
        value = p.param(name)
        if value is not None:
            if name == "screen_name":
                value = value.lstrip("@").lower()
            parts.append(f"{name}={q(value)}")
    key = f"{action}?{'&'.join(parts)}" if parts else action
    return ST.X_INTENT, key, f"{X}/intent/{key}"


def _classify_x_i(p: ParsedUrl, segs: tuple[str, ...]) -> Classified:
    """`x.com/i/...`: tweets by id, communities and intents."""
    n = len(segs)
    second = segs[1].lower() if n > 1 else ""
    if second == "web" and n > 3 and segs[2].lower() == "status" and _ID.match(segs[3]):
        return _tweet(segs[3], None)
    if second == "status" and n > 2 and _ID.match(segs[2]):
        return _tweet(segs[2], None)
    if second == "communities" and n > 2 and _ID.match(segs[2]):
        return ST.X_COMMUNITY, segs[2], f"{X}/i/communities/{segs[2]}"
    if second == "intent" and n > 2:
        return _intent(p, segs[2].lower())
    return _unknown(p)


def classify_x(p: ParsedUrl) -> Classified:
    segs = p.segments
    if not segs and p.fragment.startswith("!/"):
        # Legacy hash-bang links: `twitter.com/#!/kolguy/status/1`.
        segs = tuple(s for s in p.fragment[2:].split("?")[0].split("/") if s)
    n = len(segs)
    if n == 0:
        return _unknown(p)
    first = segs[0].lower()
    if first == "i":
        return _classify_x_i(p, segs)
    if first == "statuses" and n > 1 and _ID.match(segs[1]):
        return _tweet(segs[1], None)
    if first == "search":
        query = p.param("q")
        return _search(query) if query else _unknown(p)
    if first == "hashtag" and n > 1 and segs[1].strip():
        # X serves `/hashtag/{tag}` as the search for `#tag`: one target, one canonical.
        return _search("#" + segs[1].strip().lstrip("#"))
    if first == "intent":
        return _intent(p, segs[1].lower()) if n > 1 else _unknown(p)
    if first == "share" and n == 1:
        return _intent(p, "share")
    # `x.com/@kolguy` is a common spelling of the profile and X resolves it.
    handle = segs[0][1:] if segs[0].startswith("@") else segs[0]
    if handle.lower() in X_RESERVED or not _HANDLE.match(handle):
        return _unknown(p)
    if n == 1:
        return ST.X_PROFILE, handle.lower(), f"{X}/{handle.lower()}"
    second = segs[1].lower()
    if second in ("status", "statuses") and n > 2 and _ID.match(segs[2]):
        if n == 3 or segs[3].lower() in _TWEET_TABS:
            return _tweet(segs[2], handle)
        return _unknown(p)
    if n == 2 and second in _PROFILE_TABS:
        return ST.X_PROFILE, handle.lower(), f"{X}/{handle.lower()}"
    return _unknown(p)


def classify_tco(p: ParsedUrl) -> Classified:
    if len(p.segments) == 1 and _TCO.match(p.segments[0]):
        code = p.segments[0]
        return ST.X_SHORTLINK, code, f"https://t.co/{code}"
    url = generic_canonical(p, "t.co")
    return ST.X_UNKNOWN, url, url
