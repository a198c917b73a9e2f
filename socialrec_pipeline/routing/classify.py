"""Classify a parsed URL by host and path only (SPEC §3.2): one dict lookup by host, then the
platform's path rules. The field a URL arrived in is never an input here."""

from __future__ import annotations

from collections.abc import Callable

from socialrec_pipeline.routing.normalize import ParsedUrl, generic_canonical
from socialrec_pipeline.routing.platform_gh_tg import (
    classify_discord,
    classify_gist,
    classify_github,
    classify_telegram,
)
from socialrec_pipeline.routing.platform_tt_ig import (
    classify_instagram,
    classify_tiktok,
    classify_tiktok_short,
)
from socialrec_pipeline.routing.platform_x import classify_tco, classify_x
from socialrec_pipeline.routing.platform_yt_rd import (
    classify_reddit,
    classify_reddit_short,
    classify_youtube,
)
from socialrec_pipeline.routing.source_types import SourceType

Classified = tuple[SourceType, str | None, str]
Classifier = Callable[[ParsedUrl], Classified | None]

#: Host (already lower-case, without www./m./mobile.) → classifier. Mirror hosts fold into their
#: platform here (fxtwitter → x, music.youtube → youtube, old.reddit → reddit, ...).
HOST_CLASSIFIERS: dict[str, Classifier] = {
    **dict.fromkeys(
        ("x.com", "twitter.com", "fxtwitter.com", "vxtwitter.com", "fixupx.com", "fixvx.com",
         "twittpr.com", "nitter.net"),
        classify_x,
    ),
    "t.co": classify_tco,
    "tiktok.com": classify_tiktok,
    **dict.fromkeys(("vm.tiktok.com", "vt.tiktok.com"), classify_tiktok_short),
    **dict.fromkeys(("instagram.com", "instagr.am", "ddinstagram.com"), classify_instagram),
    **dict.fromkeys(
        ("youtube.com", "music.youtube.com", "gaming.youtube.com", "youtube-nocookie.com", "youtu.be"),
        classify_youtube,
    ),
    **dict.fromkeys(
        ("reddit.com", "old.reddit.com", "new.reddit.com", "np.reddit.com", "amp.reddit.com",
         "sh.reddit.com"),
        classify_reddit,
    ),
    **dict.fromkeys(
        ("redd.it", "i.redd.it", "v.redd.it", "preview.redd.it", "external-preview.redd.it"),
        classify_reddit_short,
    ),
    "github.com": classify_github,
    "gist.github.com": classify_gist,
    **dict.fromkeys(("t.me", "telegram.me", "telegram.dog"), classify_telegram),
    **dict.fromkeys(("discord.gg", "discord.com", "discordapp.com"), classify_discord),
}


def _website(p: ParsedUrl) -> Classified:
    url = generic_canonical(p)
    return SourceType.WEBSITE, url, url


def classify(p: ParsedUrl) -> Classified:
    # A non-default port or an IP literal is never a platform: platforms serve on their names.
    if p.port is None and not p.is_ip:
        classifier = HOST_CLASSIFIERS.get(p.host)
        if classifier is None and p.host.endswith(".t.me"):
            classifier = classify_telegram
        if classifier is not None:
            result = classifier(p)
            if result is not None:
                return result
    return _website(p)
