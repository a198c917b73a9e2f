"""Source types and the one constant table `source_type -> {object, platform, subtype}` (SPEC §3.3).

The table lets a URL be recorded in `tokens.social_urls[]` with its platform and subtype even when
nothing was fetched, so the recording path needs no social knowledge.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from socialrec_pipeline.domain.enums import ContentSubtype, ObjectKind, Platform, VenueSubtype


class SourceType(StrEnum):
    X_TWEET = "x_tweet"
    X_PROFILE = "x_profile"
    X_COMMUNITY = "x_community"
    X_SEARCH = "x_search"
    X_INTENT = "x_intent"
    X_SHORTLINK = "x_shortlink"
    X_UNKNOWN = "x_unknown"
    TIKTOK_VIDEO = "tiktok_video"
    TIKTOK_PHOTO = "tiktok_photo"
    TIKTOK_PROFILE = "tiktok_profile"
    TIKTOK_SEARCH = "tiktok_search"
    TIKTOK_SHORTLINK = "tiktok_shortlink"
    TIKTOK_UNKNOWN = "tiktok_unknown"
    INSTAGRAM_POST = "instagram_post"
    INSTAGRAM_REEL = "instagram_reel"
    INSTAGRAM_TV = "instagram_tv"
    INSTAGRAM_STORY = "instagram_story"
    INSTAGRAM_PROFILE = "instagram_profile"
    INSTAGRAM_UNKNOWN = "instagram_unknown"
    YOUTUBE_VIDEO = "youtube_video"
    YOUTUBE_SHORT = "youtube_short"
    YOUTUBE_CHANNEL = "youtube_channel"
    YOUTUBE_UNKNOWN = "youtube_unknown"
    REDDIT_POST = "reddit_post"
    REDDIT_SUBREDDIT = "reddit_subreddit"
    REDDIT_USER = "reddit_user"
    REDDIT_SEARCH = "reddit_search"
    REDDIT_SHARE = "reddit_share"
    REDDIT_UNKNOWN = "reddit_unknown"
    GITHUB_REPO = "github_repo"
    GITHUB_GIST = "github_gist"
    GITHUB_USER = "github_user"
    GITHUB_UNKNOWN = "github_unknown"
    TELEGRAM_CHANNEL = "telegram_channel"
    TELEGRAM_INVITE = "telegram_invite"
    TELEGRAM_POST = "telegram_post"
    TELEGRAM_UNKNOWN = "telegram_unknown"
    DISCORD_INVITE = "discord_invite"
    WEBSITE = "website"


@dataclass(frozen=True, slots=True)
class SourceTypeInfo:
    object: ObjectKind
    platform: Platform
    #: ContentSubtype for contents, VenueSubtype for venues, None for accounts (they have no subtype).
    subtype: str | None


_C, _A, _V = ObjectKind.CONTENTS, ObjectKind.ACCOUNTS, ObjectKind.VENUES
_CS, _VS = ContentSubtype, VenueSubtype
_P = Platform

SOURCE_TYPE_TABLE: dict[SourceType, SourceTypeInfo] = {
    SourceType.X_TWEET: SourceTypeInfo(_C, _P.X, _CS.TWEET),
    SourceType.X_PROFILE: SourceTypeInfo(_A, _P.X, None),
    SourceType.X_COMMUNITY: SourceTypeInfo(_V, _P.X, _VS.COMMUNITY),
    SourceType.X_SEARCH: SourceTypeInfo(_C, _P.X, _CS.SEARCH),
    SourceType.X_INTENT: SourceTypeInfo(_C, _P.X, _CS.INTENT),
    SourceType.X_SHORTLINK: SourceTypeInfo(_C, _P.X, _CS.SHORTLINK),
    SourceType.X_UNKNOWN: SourceTypeInfo(_C, _P.X, _CS.UNKNOWN),
    SourceType.TIKTOK_VIDEO: SourceTypeInfo(_C, _P.TIKTOK, _CS.VIDEO),
    SourceType.TIKTOK_PHOTO: SourceTypeInfo(_C, _P.TIKTOK, _CS.PHOTO),
    SourceType.TIKTOK_PROFILE: SourceTypeInfo(_A, _P.TIKTOK, None),
    SourceType.TIKTOK_SEARCH: SourceTypeInfo(_C, _P.TIKTOK, _CS.SEARCH),
    SourceType.TIKTOK_SHORTLINK: SourceTypeInfo(_C, _P.TIKTOK, _CS.SHORTLINK),
    SourceType.TIKTOK_UNKNOWN: SourceTypeInfo(_C, _P.TIKTOK, _CS.UNKNOWN),
    SourceType.INSTAGRAM_POST: SourceTypeInfo(_C, _P.INSTAGRAM, _CS.POST),
    SourceType.INSTAGRAM_REEL: SourceTypeInfo(_C, _P.INSTAGRAM, _CS.REEL),
    SourceType.INSTAGRAM_TV: SourceTypeInfo(_C, _P.INSTAGRAM, _CS.TV),
    SourceType.INSTAGRAM_STORY: SourceTypeInfo(_C, _P.INSTAGRAM, _CS.STORY),
    SourceType.INSTAGRAM_PROFILE: SourceTypeInfo(_A, _P.INSTAGRAM, None),
    SourceType.INSTAGRAM_UNKNOWN: SourceTypeInfo(_C, _P.INSTAGRAM, _CS.UNKNOWN),
    SourceType.YOUTUBE_VIDEO: SourceTypeInfo(_C, _P.YOUTUBE, _CS.VIDEO),
    # A short is a video on the same API; the distinction is kept in source_type only.
    SourceType.YOUTUBE_SHORT: SourceTypeInfo(_C, _P.YOUTUBE, _CS.VIDEO),
    SourceType.YOUTUBE_CHANNEL: SourceTypeInfo(_A, _P.YOUTUBE, None),
    SourceType.YOUTUBE_UNKNOWN: SourceTypeInfo(_C, _P.YOUTUBE, _CS.UNKNOWN),
    SourceType.REDDIT_POST: SourceTypeInfo(_C, _P.REDDIT, _CS.POST),
    SourceType.REDDIT_SUBREDDIT: SourceTypeInfo(_V, _P.REDDIT, _VS.SUBREDDIT),
    SourceType.REDDIT_USER: SourceTypeInfo(_A, _P.REDDIT, None),
    SourceType.REDDIT_SEARCH: SourceTypeInfo(_C, _P.REDDIT, _CS.SEARCH),
    SourceType.REDDIT_SHARE: SourceTypeInfo(_C, _P.REDDIT, _CS.SHORTLINK),
    SourceType.REDDIT_UNKNOWN: SourceTypeInfo(_C, _P.REDDIT, _CS.UNKNOWN),
    SourceType.GITHUB_REPO: SourceTypeInfo(_C, _P.GITHUB, _CS.REPO),
    SourceType.GITHUB_GIST: SourceTypeInfo(_C, _P.GITHUB, _CS.GIST),
    SourceType.GITHUB_USER: SourceTypeInfo(_A, _P.GITHUB, None),
    SourceType.GITHUB_UNKNOWN: SourceTypeInfo(_C, _P.GITHUB, _CS.UNKNOWN),
    SourceType.TELEGRAM_CHANNEL: SourceTypeInfo(_V, _P.TELEGRAM, _VS.CHANNEL),
    # The page decides channel / group / shell; the table gives the routing-time default.
    SourceType.TELEGRAM_INVITE: SourceTypeInfo(_V, _P.TELEGRAM, _VS.CHANNEL),
    SourceType.TELEGRAM_POST: SourceTypeInfo(_C, _P.TELEGRAM, _CS.POST),
    SourceType.TELEGRAM_UNKNOWN: SourceTypeInfo(_C, _P.TELEGRAM, _CS.UNKNOWN),
    # Discord has no platform code of its own (SPEC §4); invites are kept as web/unknown and stay
    # `unsupported` until a Discord provider exists.
    SourceType.DISCORD_INVITE: SourceTypeInfo(_C, _P.WEB, _CS.UNKNOWN),
    SourceType.WEBSITE: SourceTypeInfo(_C, _P.WEB, _CS.SITE),
}


def source_type_info(source_type: SourceType) -> SourceTypeInfo:
    return SOURCE_TYPE_TABLE[source_type]
