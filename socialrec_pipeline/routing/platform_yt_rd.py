"""YouTube and Reddit.

YouTube keys: the 11-character video id (case-sensitive); channels keyed `UC…` (as written),
`@handle` (lower-case: handles are case-insensitive), `c/{name}` or `user/{name}` (legacy custom and
user URLs, lower-case). Names may be in any script (Cyrillic, Hangul, Devanagari, …), raw or
percent-encoded: the key is the decoded name (NFC, lower-cased), the canonical URL percent-encodes
it, so the canonical URL routes back to the same key. Videos canonicalize to
`https://youtube.com/watch?v={id}`; shorts keep `https://youtube.com/shorts/{id}` so their source
type survives a round trip.

Reddit keys: post id (base36, lower-case), subreddit name and user name lower-case (Reddit resolves
both case-insensitively), share id as written, search query as written. `redd.it/{id}` is the post
itself (the path is its base36 id): a `reddit_post` with the same key and canonical URL as
`reddit.com/comments/{id}`, nothing to resolve. Only `/r/{sub}/s/{shareId}` needs resolving.
"""

from __future__ import annotations

import re
import unicodedata

from socialrec_pipeline.routing.normalize import ParsedUrl, generic_canonical, q
from socialrec_pipeline.routing.reserved import REDDIT_PSEUDO_SUBS, YOUTUBE_RESERVED
from socialrec_pipeline.routing.source_types import SourceType as ST

Classified = tuple[ST, str | None, str]

_YT_ID = re.compile(r"^[A-Za-z0-9_-]{11}$")
_YT_UC = re.compile(r"^UC[A-Za-z0-9_-]{22}$")
_YT_TABS = frozenset(
    {
        "home", "videos", "shorts", "streams", "featured", "playlists", "community", "about",
        "channels", "live", "podcasts", "releases", "search", "posts", "membership", "store",
        "courses",
    }
)
YT = "https://youtube.com"

_RD_ID = re.compile(r"^[a-z0-9]{1,12}$")
_RD_SUB = re.compile(r"^[A-Za-z0-9_]{2,21}$")
_RD_USER = re.compile(r"^[A-Za-z0-9_-]{1,20}$")
_RD_SHARE = re.compile(r"^[A-Za-z0-9]{5,20}$")
_RD_SUB_TABS = frozenset({"hot", "new", "top", "rising", "controversial", "gilded", "wiki", "about"})
_RD_USER_TABS = frozenset({"submitted", "comments", "overview", "posts", "about", "gilded"})
RD = "https://reddit.com"


def _yt_name(text: str, low: int, high: int) -> str | None:
    """A YouTube handle or custom/user name in any script, NFC and lower-cased; None if not one.

    Letters and digits of every script, combining marks (Devanagari, Thai vowel signs) and
    `.`, `_`, `-`, `·` are allowed; anything else (`/`, `%`, `@`, spaces, symbols) is not a name.
    """
    name = unicodedata.normalize("NFC", text)
    if not low <= len(name) <= high:
        return None
    for ch in name:
        if not (ch.isalnum() or ch in "._-\u00b7" or unicodedata.category(ch).startswith("M")):
            return None
    return name.lower()


def _yt_unknown(p: ParsedUrl) -> Classified:
    url = generic_canonical(p, "youtu.be" if p.host == "youtu.be" else "youtube.com")
    return ST.YOUTUBE_UNKNOWN, url, url


def _yt_video(video_id: str) -> Classified:
    return ST.YOUTUBE_VIDEO, video_id, f"{YT}/watch?v={video_id}"


def _yt_channel(prefix: str, name: str) -> Classified:
    """`prefix` is `@`, `c/` or `user/`; the canonical URL percent-encodes a non-ASCII name."""
    return ST.YOUTUBE_CHANNEL, f"{prefix}{name}", f"{YT}/{prefix}{q(name)}"


def classify_youtube(p: ParsedUrl) -> Classified:
    segs = p.segments
    n = len(segs)
    if p.host == "youtu.be":
        if n == 1 and _YT_ID.match(segs[0]):
            return _yt_video(segs[0])
        return _yt_unknown(p)
    if n == 0:
        return _yt_unknown(p)
    first = segs[0].lower()
    if first == "watch" and n == 1:
        video_id = p.param("v")
        if video_id and _YT_ID.match(video_id):
            return _yt_video(video_id)
        return _yt_unknown(p)
    if first == "shorts" and n == 2 and _YT_ID.match(segs[1]):
        return ST.YOUTUBE_SHORT, segs[1], f"{YT}/shorts/{segs[1]}"
    if first in ("embed", "v", "e", "live") and n == 2 and _YT_ID.match(segs[1]):
        return _yt_video(segs[1])
    # A channel page, bare or on one of its tabs (`/@h/videos`, `/channel/UC…/about`).
    one_part = n == 1 or (n == 2 and segs[1].lower() in _YT_TABS)
    two_part = n == 2 or (n == 3 and segs[2].lower() in _YT_TABS)
    if first == "channel" and n > 1 and _YT_UC.match(segs[1]) and two_part:
        return ST.YOUTUBE_CHANNEL, segs[1], f"{YT}/channel/{segs[1]}"
    if segs[0].startswith("@") and one_part and (handle := _yt_name(segs[0][1:], 3, 30)):
        return _yt_channel("@", handle)
    if first in ("c", "user") and n > 1 and two_part and (name := _yt_name(segs[1], 1, 100)):
        return _yt_channel(f"{first}/", name)
    if first not in YOUTUBE_RESERVED and one_part and (name := _yt_name(segs[0], 1, 100)):
        # Legacy vanity URL `youtube.com/{name}` is the custom URL `/c/{name}`.
        return _yt_channel("c/", name)
    return _yt_unknown(p)


def _rd_unknown(p: ParsedUrl, host: str = "reddit.com") -> Classified:
    url = generic_canonical(p, host)
    return ST.REDDIT_UNKNOWN, url, url


def _rd_post(post_id: str, prefix: str = "") -> Classified:
    return ST.REDDIT_POST, post_id, f"{RD}{prefix}/comments/{post_id}"


def _rd_search(p: ParsedUrl, prefix: str) -> Classified | None:
    query = p.param("q")
    if not query:
        return None
    url = f"{RD}{prefix}/search?q={q(query)}"
    # restrict_sr narrows a subreddit search to that subreddit: a different result set, kept.
    if prefix and (p.param("restrict_sr") or "").lower() in ("1", "on", "true"):
        url += "&restrict_sr=1"
    return ST.REDDIT_SEARCH, query, url


def classify_reddit(p: ParsedUrl) -> Classified:
    segs = p.segments
    n = len(segs)
    if n == 0:
        return _rd_unknown(p)
    first = segs[0].lower()
    if first == "r" and n > 1 and _RD_SUB.match(segs[1]):
        sub = segs[1].lower()
        prefix = f"/r/{sub}"
        third = segs[2].lower() if n > 2 else ""
        if third == "comments" and n > 3 and _RD_ID.match(segs[3].lower()):
            post_id = segs[3].lower()
            # `/r/u_{name}` is a user's profile feed; its posts are keyed without it.
            return _rd_post(post_id, "" if sub.startswith("u_") else prefix)
        if third == "s" and n == 4 and _RD_SHARE.match(segs[3]):
            return ST.REDDIT_SHARE, segs[3], f"{RD}{prefix}/s/{segs[3]}"
        if third == "search" and n == 3:
            return _rd_search(p, prefix) or _rd_unknown(p)
        if sub in REDDIT_PSEUDO_SUBS:
            return _rd_unknown(p)
        if n == 2 or (n == 3 and third in _RD_SUB_TABS):
            return ST.REDDIT_SUBREDDIT, sub, f"{RD}{prefix}"
        return _rd_unknown(p)
    if first in ("u", "user") and n > 1 and _RD_USER.match(segs[1]):
        name = segs[1].lower()
        third = segs[2].lower() if n > 2 else ""
        if third == "comments" and n > 3 and _RD_ID.match(segs[3].lower()):
            return _rd_post(segs[3].lower())
        if third == "s" and n == 4 and _RD_SHARE.match(segs[3]):
            return ST.REDDIT_SHARE, segs[3], f"{RD}/user/{name}/s/{segs[3]}"
        if n == 2 or (n == 3 and third in _RD_USER_TABS):
            return ST.REDDIT_USER, name, f"{RD}/user/{name}"
        return _rd_unknown(p)
    # A gallery's and a poll's own pages name the post by its id.
    if first in ("comments", "gallery", "poll") and n > 1 and _RD_ID.match(segs[1].lower()):
        return _rd_post(segs[1].lower())
    if first == "search" and n == 1:
        return _rd_search(p, "") or _rd_unknown(p)
    # reserved.REDDIT_RESERVED (settings, login, ...) and any other first segment: no handle there.
    return _rd_unknown(p)


def classify_reddit_short(p: ParsedUrl) -> Classified:
    """`redd.it/{id}` is the post `{id}` itself (no redirect needed); media hosts (`i.redd.it`,
    `v.redd.it`) are reddit_unknown on their own host."""
    if p.host == "redd.it" and len(p.segments) == 1 and _RD_ID.match(p.segments[0].lower()):
        return _rd_post(p.segments[0].lower())
    return _rd_unknown(p, p.host)
