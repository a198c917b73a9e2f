"""TikTok and Instagram (the paid platforms).

TikTok keys: video/photo id, lower-case handle (TikTok handles are case-insensitive), search query as
written, `#tag` for tag pages, short-link code as written (case-sensitive). A video whose author is not
in the URL (`/embed/v2/{id}`, `/v/{id}.html`) canonicalizes to `https://tiktok.com/@/video/{id}`, the
author-less form TikTok itself redirects to the right author.

Instagram keys: shortcode as written (case-sensitive), story id (numeric) for
`/stories/{handle}/{storyId}` (the earlier router keyed these on the handle), `highlight:{id}` for
highlights (their own id space), lower-case handle for profiles.
"""

from __future__ import annotations

import re

from socialrec_pipeline.routing.normalize import ParsedUrl, generic_canonical, q
from socialrec_pipeline.routing.reserved import INSTAGRAM_RESERVED
from socialrec_pipeline.routing.source_types import SourceType as ST

Classified = tuple[ST, str | None, str]

_TT_ID = re.compile(r"^\d{5,25}$")
_TT_V_HTML = re.compile(r"^(\d{5,25})\.html$")
_TT_HANDLE = re.compile(r"^[A-Za-z0-9_.]{1,24}$")
#: TikTok sometimes writes the author's secUid where the handle goes (`/@MS4wLjABAAAA…/video/{id}`).
_TT_SEC_UID = re.compile(r"^MS4wLjABAAAA[A-Za-z0-9_-]{20,100}$")
_TT_CODE = re.compile(r"^[A-Za-z0-9]{5,20}$")
_TT_PROFILE_TABS = frozenset({"live", "playlists", "reposts", "liked"})
TT = "https://tiktok.com"

_IG_CODE = re.compile(r"^[A-Za-z0-9_-]{5,64}$")
_IG_HANDLE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._]{0,29}$")
_IG_STORY = re.compile(r"^\d{5,25}$")
_IG_KINDS = {"p": ST.INSTAGRAM_POST, "reel": ST.INSTAGRAM_REEL, "reels": ST.INSTAGRAM_REEL, "tv": ST.INSTAGRAM_TV}
_IG_PATH = {ST.INSTAGRAM_POST: "p", ST.INSTAGRAM_REEL: "reel", ST.INSTAGRAM_TV: "tv"}
_IG_PROFILE_TABS = frozenset(
    {"tagged", "reels", "saved", "igtv", "guides", "channel", "followers", "following", "related_profiles"}
)
IG = "https://instagram.com"


def _tt_unknown(p: ParsedUrl, host: str = "tiktok.com") -> Classified:
    url = generic_canonical(p, host)
    return ST.TIKTOK_UNKNOWN, url, url


def _tt_video(video_id: str, author: str = "", kind: str = "video") -> Classified:
    """Keyed by the numeric id whatever the author segment holds. A handle is lower-cased (TikTok
    handles are case-insensitive), a secUid is kept as written (it is case-sensitive), anything
    else is left out (`/@/video/{id}`, the author-less form TikTok redirects to the author)."""
    st = ST.TIKTOK_PHOTO if kind == "photo" else ST.TIKTOK_VIDEO
    if _TT_HANDLE.match(author):
        author = author.lower()
    elif not _TT_SEC_UID.match(author):
        author = ""
    return st, video_id, f"{TT}/@{author}/{kind}/{video_id}"


def classify_tiktok(p: ParsedUrl) -> Classified:
    segs = p.segments
    n = len(segs)
    if n == 0:
        return _tt_unknown(p)
    s0 = segs[0]
    if s0.startswith("@"):
        handle = s0[1:]
        if n > 2 and segs[1].lower() in ("video", "photo") and _TT_ID.match(segs[2]):
            return _tt_video(segs[2], handle, segs[1].lower())
        # The handle rule applies to profiles only: a video is found by its id.
        if handle and not _TT_HANDLE.match(handle):
            return _tt_unknown(p)
        if handle and (n == 1 or (n == 2 and segs[1].lower() in _TT_PROFILE_TABS)):
            return ST.TIKTOK_PROFILE, handle.lower(), f"{TT}/@{handle.lower()}"
        return _tt_unknown(p)
    first = s0.lower()
    if first == "t" and n == 2 and _TT_CODE.match(segs[1]):
        return ST.TIKTOK_SHORTLINK, segs[1], f"{TT}/t/{segs[1]}"
    if first == "embed":
        rest = segs[2:] if n > 1 and segs[1].lower() == "v2" else segs[1:]
        if rest and _TT_ID.match(rest[0]):
            return _tt_video(rest[0])
    if first == "v" and n == 2 and (m := _TT_V_HTML.match(segs[1])):
        return _tt_video(m.group(1))
    if first == "share" and n == 3 and segs[1].lower() == "video" and _TT_ID.match(segs[2]):
        return _tt_video(segs[2])
    if first == "video" and n == 2 and _TT_ID.match(segs[1]):
        return _tt_video(segs[1])
    if first == "search":
        query = p.param("q")
        if query:
            return ST.TIKTOK_SEARCH, query, f"{TT}/search?q={q(query)}"
    if first == "tag" and n == 2 and segs[1].strip().lstrip("#"):
        tag = segs[1].strip().lstrip("#")
        return ST.TIKTOK_SEARCH, "#" + tag, f"{TT}/tag/{q(tag)}"
    # Every other first segment is an app page (reserved.TIKTOK_RESERVED): profiles need the `@`.
    return _tt_unknown(p)


def classify_tiktok_short(p: ParsedUrl) -> Classified:
    """`vm.tiktok.com/{code}` and `vt.tiktok.com/{code}`; the host stays in the canonical URL."""
    if len(p.segments) == 1 and _TT_CODE.match(p.segments[0]):
        return ST.TIKTOK_SHORTLINK, p.segments[0], f"https://{p.host}/{p.segments[0]}"
    return _tt_unknown(p, p.host)


def _ig_unknown(p: ParsedUrl) -> Classified:
    url = generic_canonical(p, "instagram.com")
    return ST.INSTAGRAM_UNKNOWN, url, url


def _ig_media(kind: str, code: str) -> Classified:
    st = _IG_KINDS[kind]
    return st, code, f"{IG}/{_IG_PATH[st]}/{code}"


def _ig_profile(handle: str) -> Classified:
    return ST.INSTAGRAM_PROFILE, handle.lower(), f"{IG}/{handle.lower()}"


def classify_instagram(p: ParsedUrl) -> Classified:
    segs = p.segments
    n = len(segs)
    if n == 0:
        return _ig_unknown(p)
    first = segs[0].lower()
    if first in _IG_KINDS:
        if n > 1 and _IG_CODE.match(segs[1]):
            return _ig_media(first, segs[1])
        return _ig_unknown(p)
    if first == "stories":
        if n == 3 and segs[1].lower() == "highlights" and _IG_STORY.match(segs[2]):
            key = segs[2]
            return ST.INSTAGRAM_STORY, f"highlight:{key}", f"{IG}/stories/highlights/{key}"
        if n > 1 and _IG_HANDLE.match(segs[1]) and segs[1].lower() not in INSTAGRAM_RESERVED | {"highlights"}:
            handle = segs[1].lower()
            if n == 3 and _IG_STORY.match(segs[2]):
                return ST.INSTAGRAM_STORY, segs[2], f"{IG}/stories/{handle}/{segs[2]}"
            if n == 2:
                # "This account's current stories": the target is the account.
                return _ig_profile(handle)
        return _ig_unknown(p)
    if first in INSTAGRAM_RESERVED or not _IG_HANDLE.match(segs[0]):
        return _ig_unknown(p)
    if n == 1:
        return _ig_profile(segs[0])
    second = segs[1].lower()
    if second in _IG_KINDS and n > 2 and _IG_CODE.match(segs[2]):
        return _ig_media(second, segs[2])
    if n == 2 and second in _IG_PROFILE_TABS:
        return _ig_profile(segs[0])
    return _ig_unknown(p)
