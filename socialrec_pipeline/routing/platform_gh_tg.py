"""GitHub, Telegram and Discord.

GitHub keys: `owner/name` lower-case (GitHub resolves both case-insensitively), login lower-case,
gist id lower-case hex. Anything below a repository (`/tree/…`, `/blob/…`, `/issues/1`) is the repo.

Telegram keys: public name lower-case (the contracts key a venue by the lower-cased public name),
`{name}/{msgId}` for posts, the invite hash as written (case-sensitive) for `/+{hash}` and
`/joinchat/{hash}` (one canonical: `https://t.me/+{hash}`). Private-chat links `/c/{chatId}/{msgId}`
are `telegram_post` keyed `c/{chatId}/{msgId}`: they do name a post, and the generator records the
`blocked` the contracts prescribe (there is no public preview) instead of the URL vanishing into
`unknown`.

Discord keys: the invite code as written; every spelling canonicalizes to `https://discord.gg/{code}`.
Other Discord pages are plain websites: Discord has no platform code (SPEC §4).
"""

from __future__ import annotations

import re

from socialrec_pipeline.routing.normalize import ParsedUrl, generic_canonical
from socialrec_pipeline.routing.reserved import GITHUB_RESERVED, TELEGRAM_RESERVED
from socialrec_pipeline.routing.source_types import SourceType as ST

Classified = tuple[ST, str | None, str]

_GH_USER = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")
_GH_REPO = re.compile(r"^[A-Za-z0-9._-]{1,100}$")
_GIST_ID = re.compile(r"^[0-9a-fA-F]{1,64}$")
GH = "https://github.com"
_GIST_RESERVED = GITHUB_RESERVED | {"discover", "starred", "mine", "forked", "auth"}

_TG_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{3,31}$")
_TG_INVITE = re.compile(r"^[A-Za-z0-9_-]{5,64}$")
_TG_MSG = re.compile(r"^\d{1,12}$")
_TG_CHAT = re.compile(r"^\d{1,20}$")
TG = "https://t.me"

_DISCORD_CODE = re.compile(r"^[A-Za-z0-9-]{2,32}$")


def _gh_unknown(p: ParsedUrl, host: str = "github.com") -> Classified:
    url = generic_canonical(p, host)
    return ST.GITHUB_UNKNOWN, url, url


def _gh_user(login: str) -> Classified:
    return ST.GITHUB_USER, login.lower(), f"{GH}/{login.lower()}"


def _repo_name(segment: str) -> str | None:
    name = segment[:-4] if segment.lower().endswith(".git") else segment
    if name in (".", "..") or not _GH_REPO.match(name):
        return None
    return name.lower()


def classify_github(p: ParsedUrl) -> Classified:
    segs = p.segments
    n = len(segs)
    if n == 0:
        return _gh_unknown(p)
    first = segs[0].lower()
    if first in ("orgs", "sponsors") and n > 1 and _GH_USER.match(segs[1]):
        if n == 2 or (first == "orgs" and n == 3):  # /orgs/{org}/repositories, /people, ...
            return _gh_user(segs[1])
        return _gh_unknown(p)
    if first in GITHUB_RESERVED or not _GH_USER.match(segs[0]):
        return _gh_unknown(p)
    if n == 1:
        return _gh_user(segs[0])
    repo = _repo_name(segs[1])
    if repo is None:
        return _gh_unknown(p)
    key = f"{first}/{repo}"
    return ST.GITHUB_REPO, key, f"{GH}/{key}"


def _is_gist_id(segment: str) -> bool:
    # A lone segment is a gist id only when it looks like one: old numeric ids or 20+ hex digits.
    return bool(_GIST_ID.match(segment)) and (segment.isdigit() or len(segment) >= 20)


def classify_gist(p: ParsedUrl) -> Classified:
    segs = p.segments
    n = len(segs)
    if n == 1 and _is_gist_id(segs[0]):
        gist_id = segs[0].lower()
        return ST.GITHUB_GIST, gist_id, f"https://gist.github.com/{gist_id}"
    if n == 0 or segs[0].lower() in _GIST_RESERVED:
        return _gh_unknown(p, "gist.github.com")
    if n == 1 and _GH_USER.match(segs[0]):
        return _gh_user(segs[0])
    if n >= 2 and _GH_USER.match(segs[0]) and _GIST_ID.match(segs[1]):
        gist_id = segs[1].lower()
        return ST.GITHUB_GIST, gist_id, f"https://gist.github.com/{segs[0].lower()}/{gist_id}"
    return _gh_unknown(p, "gist.github.com")


def _tg_unknown(p: ParsedUrl, host: str = "t.me") -> Classified:
    url = generic_canonical(p, host)
    return ST.TELEGRAM_UNKNOWN, url, url


def _tg_channel(name: str) -> Classified:
    return ST.TELEGRAM_CHANNEL, name.lower(), f"{TG}/{name.lower()}"


def _tg_post(name: str, msg: str) -> Classified:
    key = f"{name.lower()}/{int(msg)}"
    return ST.TELEGRAM_POST, key, f"{TG}/{key}"


def _tg_invite(code: str) -> Classified:
    return ST.TELEGRAM_INVITE, code, f"{TG}/+{code}"


def classify_telegram(p: ParsedUrl) -> Classified:
    segs = p.segments
    n = len(segs)
    if p.host.endswith(".t.me"):
        # `{name}.t.me` is another spelling of `t.me/{name}`.
        sub = p.host[: -len(".t.me")]
        if _TG_NAME.match(sub) and sub not in TELEGRAM_RESERVED and n == 0:
            return _tg_channel(sub)
        return _tg_unknown(p, p.host)
    if n == 0:
        return _tg_unknown(p)
    s0 = segs[0]
    if s0.startswith("+"):
        code = s0[1:]
        # `t.me/+{digits}` is a phone-number contact link, never a chat.
        if n == 1 and _TG_INVITE.match(code) and not code.isdigit():
            return _tg_invite(code)
        return _tg_unknown(p)
    first = s0.lower()
    if first == "joinchat" and n == 2 and _TG_INVITE.match(segs[1]):
        return _tg_invite(segs[1])
    if first == "s" and n > 1 and _TG_NAME.match(segs[1]):
        if n == 2:
            return _tg_channel(segs[1])
        if n == 3 and _TG_MSG.match(segs[2]):
            return _tg_post(segs[1], segs[2])
        return _tg_unknown(p)
    if first == "c" and n in (3, 4) and all(_TG_CHAT.match(s) for s in segs[1:]):
        key = f"c/{int(segs[1])}/{int(segs[-1])}"
        return ST.TELEGRAM_POST, key, f"{TG}/{key}"
    if first in TELEGRAM_RESERVED or not _TG_NAME.match(s0):
        return _tg_unknown(p)
    if n == 1:
        return _tg_channel(s0)
    # `/{name}/{msgId}`, and `/{name}/{topicId}/{msgId}` in forum groups (the message id is enough).
    if n in (2, 3) and all(_TG_MSG.match(s) for s in segs[1:]):
        return _tg_post(s0, segs[-1])
    return _tg_unknown(p)


def classify_discord(p: ParsedUrl) -> Classified | None:
    """None when the page is not an invite: the caller routes it as a website."""
    segs = p.segments
    if p.host == "discord.gg":
        if len(segs) == 1 and _DISCORD_CODE.match(segs[0]):
            return ST.DISCORD_INVITE, segs[0], f"https://discord.gg/{segs[0]}"
        return None
    if len(segs) == 2 and segs[0].lower() == "invite" and _DISCORD_CODE.match(segs[1]):
        return ST.DISCORD_INVITE, segs[1], f"https://discord.gg/{segs[1]}"
    return None
