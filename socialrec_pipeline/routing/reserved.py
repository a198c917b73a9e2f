"""First path segments that are application pages, not handles (SPEC §3.4).

The earlier router minted a profile or subreddit key from `x.com/settings` and `reddit.com/settings`,
and on Reddit that one wrong key cost a paid call. A path whose first segment is listed here is never
read as a handle; it becomes `{platform}_unknown`. Compare lower-case.
"""

from __future__ import annotations

X_RESERVED: frozenset[str] = frozenset(
    {
        "home", "explore", "settings", "i", "search", "search-advanced", "intent", "messages",
        "notifications", "hashtag", "compose", "login", "logout", "signup", "signin", "tos",
        "privacy", "rules", "about", "account", "download", "jobs", "help", "share", "oauth",
        "oauth2", "bookmarks", "lists", "topics", "communities", "premium", "premium_sign_up",
        "verified-choose", "who_to_follow", "connect_people", "following", "followers",
        "keyboard_shortcuts", "display", "personalization", "sessions", "welcome", "statuses",
        "status", "safety", "media", "grok", "articles", "spaces", "tweetdeck",
        "account_access", "user_spam_reports", "places", "trends", "your_twitter_data",
    }
)

#: TikTok profiles always start with `@`, so any other first segment is already not a handle;
#: the list documents the application pages and guards `@`-less fallbacks.
TIKTOK_RESERVED: frozenset[str] = frozenset(
    {
        "foryou", "following", "explore", "friends", "live", "upload", "login", "signup",
        "logout", "setting", "settings", "messages", "inbox", "legal", "about", "business",
        "creators", "discover", "music", "tag", "search", "t", "embed", "v", "share", "video",
        "privacy", "community-guidelines", "coin", "feedback", "channel", "safety",
    }
)

INSTAGRAM_RESERVED: frozenset[str] = frozenset(
    {
        "explore", "accounts", "direct", "about", "legal", "p", "reel", "reels", "tv", "stories",
        "developer", "privacy", "terms", "web", "challenge", "emails", "session", "oauth",
        "press", "api", "static", "graphql", "ar", "topics", "directory", "lite", "nametag",
        "qr", "help", "sitemap", "locations", "create", "your_activity", "threads", "invites",
        "download", "business", "blog", "ads", "login", "signup", "logout",
    }
)

#: YouTube's own top-level pages. A bare `youtube.com/{name}` outside this list is a legacy vanity
#: channel URL (`/c/{name}`). Where each entry comes from: routing/README.md "YouTube reserved paths".
YOUTUBE_RESERVED: frozenset[str] = frozenset(
    {
        # pages and player endpoints
        "watch", "w", "watch_popup", "watch_videos", "shorts", "embed", "e", "v", "live", "clip",
        "channel", "c", "user", "playlist", "results", "search", "feed", "feeds", "browse",
        "hashtag", "post", "shared", "source", "oembed", "get_video_info", "iframe_api",
        "attribution_link", "redirect", "img", "s", "yts", "youtubei", "api", "live_chat",
        "live_chat_replay", "player_api", "timedtext_editor", "comment", "opensearch",
        "generate_204", "gen_204", "pagead", "ptracking", "error", "oops", "index", "sw.js",
        "favicon.ico", "robots.txt", "manifest.webmanifest",
        # product and destination pages
        "news", "course", "courses", "learning", "gaming", "premium", "music", "kids", "movies",
        "storefront", "podcasts", "trending", "explore", "originals", "new", "tv", "activate",
        "pair", "mobile", "testtube", "intl", "html5",
        # accounts, creators, company and policy pages
        "account", "account_advanced", "account_billing", "account_notifications",
        "account_playback", "account_privacy", "account_sharing", "signin", "signup", "login",
        "logout", "verify", "handle", "upload", "my_videos", "subscription_manager",
        "paid_memberships", "reporthistory", "dashboard", "studio", "create_channel",
        "channel_switcher", "select_site", "view_all_playlists", "about", "t", "ads", "creators",
        "howyoutubeworks", "jobs", "store", "yt", "supported_browsers", "copyright", "policies",
        "privacy", "terms",
    }
)

REDDIT_RESERVED: frozenset[str] = frozenset(
    {
        "settings", "login", "logout", "register", "prefs", "message", "messages", "submit",
        "subreddits", "premium", "coins", "wiki", "policies", "password", "account", "chat",
        "notifications", "explore", "best", "hot", "new", "top", "rising", "controversial",
        "mod", "media", "poll", "report", "help", "verification", "avatar", "answers",
        "topics", "t", "original", "rpan", "live", "gold", "dev", "api",
    }
)

#: `/r/{sub}` pseudo-subreddits: listings, not venues.
REDDIT_PSEUDO_SUBS: frozenset[str] = frozenset(
    {"all", "popular", "friends", "mod", "random", "randnsfw", "myrandom", "home", "dashboard"}
)

GITHUB_RESERVED: frozenset[str] = frozenset(
    {
        "features", "pricing", "login", "logout", "join", "signup", "session", "sessions",
        "settings", "orgs", "organizations", "marketplace", "topics", "explore", "trending",
        "collections", "sponsors", "about", "contact", "security", "site", "enterprise", "team",
        "customer-stories", "readme", "notifications", "new", "search", "pulls", "issues",
        "codespaces", "dashboard", "apps", "watching", "stars", "events", "blog", "nonprofit",
        "education", "mobile", "git-guides", "resources", "solutions", "premium-support",
        "account", "password_reset", "copilot", "models", "home", "discussions", "users",
        "github-copilot", "partners", "shop", "status", "support", "terms", "privacy",
        "open-source", "mcp", "gist", "raw", "assets", "favicon.ico", "robots.txt",
    }
)

TELEGRAM_RESERVED: frozenset[str] = frozenset(
    {
        "share", "addstickers", "addemoji", "addtheme", "addlist", "proxy", "socks", "joinchat",
        "setlanguage", "login", "iv", "bg", "confirmphone", "invoice", "c", "s", "boost",
        "contact", "giftcode", "nft", "m", "k", "a", "z", "premium", "blog", "faq", "apps",
        "api", "dl", "desktop", "privacy", "tos", "auth", "passport", "stickers",
    }
)
