"""Property: for every generator, an `ok` graph over any contract-shaped answer is faithful
(tests/providers/fidelity.py): valid, aware UTC, numeric whitelisted metrics, every metric the
payload carries kept, `""` stored as nothing, no link back at the object itself.

Answers are built from the sandbox stand-ins (the documented shapes) with the values real answers
vary in: counts as ints, floats and (YouTube) digit strings, durations as floats, optional strings
as `""`, absent or text. The fields filled in the same step (GitHub owners' /users|/orgs
profiles, Reddit authors' and subreddits' about.json, URLs in TikTok text and Instagram captions,
TikTok `musicId` / `musicName`, a Telegram post's text, time and links from `t.me/s/`) are varied
the same way.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from socialrec_pipeline.domain.enums import ObjectKind
from socialrec_pipeline.providers import github, instagram, reddit, tiktok, x, youtube
from socialrec_pipeline.providers.apify import ApifyClient
from socialrec_pipeline.providers.telegram import TelegramGenerator, TelegramPreviewClient
from socialrec_pipeline.providers.url_only import UrlOnlyGenerator
from socialrec_pipeline.providers.web import UrlscanClient, WebGenerator
from socialrec_pipeline.routing import route
from socialrec_pipeline.sandbox.fixture_server import Reply
from socialrec_pipeline.sandbox.platforms import apify as apifix
from socialrec_pipeline.sandbox.platforms import github as ghfix
from socialrec_pipeline.sandbox.platforms import reddit as rdfix
from socialrec_pipeline.sandbox.platforms import telegram as tgfix
from socialrec_pipeline.sandbox.platforms import urlscan as usfix
from socialrec_pipeline.sandbox.platforms import x as xfix
from socialrec_pipeline.sandbox.platforms import youtube as ytfix
from tests.providers import NOW, OPTS
from tests.providers.fidelity import Carried, add, assert_faithful, key_of, pick

_C, _A, _V = ObjectKind.CONTENTS, ObjectKind.ACCOUNTS, ObjectKind.VENUES
PROPERTY = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

whole = st.integers(min_value=0, max_value=10**12)
fractional = st.floats(min_value=0, max_value=1e12, allow_nan=False, allow_infinity=False)
count = st.one_of(whole, fractional)
digits = st.one_of(whole, whole.map(str))
optional_text = st.one_of(st.just(""), st.none(), st.text(min_size=1, max_size=12))


def metrics_of(names: tuple[str, ...], values=count):
    return st.fixed_dictionaries({}, optional={n: values for n in names})


def _generate(generator, url: str):
    routed = route(url)
    assert routed is not None and routed.source_type in generator.source_types, url
    return generator.generate(routed, OPTS, NOW), routed.canonical_url


@PROPERTY
@given(tm=metrics_of(x.TWEET_METRICS), um=metrics_of(x.USER_METRICS), cm=metrics_of(x.COMMUNITY_METRICS),
       reply=optional_text, verified=optional_text, lang=optional_text)
def test_x(server, tm, um, cm, reply, verified, lang):
    server.clear()
    author = xfix.user(verifiedType=verified, **um)
    tweet = xfix.tweet("1866000000000000077", author, inReplyToId=reply, inReplyToUserId=reply,
                       inReplyToUsername=reply, lang=lang, **tm)
    community = {**xfix.community("1790000000000000042", creator=author), **cm}
    fixtures = xfix.XFixtures()
    fixtures.tweets[tweet["id"]], fixtures.users["kolguy"] = tweet, author
    fixtures.communities[community["id"]] = community
    fixtures.register(server)
    client = x.TwitterApiClient(server.url, "k", timeout=2.0)
    gen = x.XGenerator(client)
    try:
        for url in ("https://x.com/kolguy/status/1866000000000000077", "https://x.com/kolguy",
                    "https://x.com/i/communities/1790000000000000042"):
            graph, entry = _generate(gen, url)
            carried: Carried = {}
            add(carried, _A, key_of(author["id"]), pick(author, x.USER_METRICS))
            if "status" in url:
                add(carried, _C, tweet["id"], pick(tweet, x.TWEET_METRICS))
            if "communities" in url:
                add(carried, _V, community["id"], pick(community, x.COMMUNITY_METRICS))
            assert_faithful(graph, entry, carried)
    finally:
        client.close()


@PROPERTY
@given(rm=metrics_of(github.REPO_METRICS), um=metrics_of(github.USER_METRICS), comments=count,
       language=optional_text, blog=optional_text, homepage=st.sampled_from(["", None, "https://pump.example",
                                                                             "https://github.com/PumpDev/pump-sdk"]),
       owner_type=st.sampled_from(["User", "Organization"]), about=optional_text)
def test_github(server, rm, um, comments, language, blog, homepage, owner_type, about):
    server.clear()
    fixtures = ghfix.GitHubFixtures()
    owner = ghfix.owner("pumpdev", 583231, owner_type)
    fixtures.repos["pumpdev/pump-sdk"] = {**ghfix.repo(language=language, homepage=homepage, **rm), "owner": owner}
    # The owner's profile is fetched in the same step: /users/{login}, or /orgs/{login} (text in `description`).
    if owner_type == "User":
        fixtures.users["pumpdev"] = ghfix.user(blog=blog, bio=about, **um)
    else:
        fixtures.orgs["pumpdev"] = fixtures.users["pumpdev"] = ghfix.org(
            "pumpdev", blog=blog, description=about, **{**{n: None for n in github.USER_METRICS}, **um}
        )
    gist = {**ghfix.gist("aa5a315d61ae9438b18d"), "comments": comments, "owner": owner}
    fixtures.gists[gist["id"]] = gist
    fixtures.register(server)
    client = github.GitHubClient(server.url, None, timeout=2.0)
    gen = github.GitHubGenerator(client)
    owner_metrics: Carried = {(_A, "pumpdev"): pick(um, github.USER_METRICS)} if um else {}
    try:
        graph, entry = _generate(gen, "https://github.com/pumpdev/pump-sdk")
        assert_faithful(
            graph, entry, {**owner_metrics, **({(_C, "pumpdev/pump-sdk"): pick(rm, github.REPO_METRICS)} if rm else {})}
        )
        assert graph.groups[0].creator.unavailable is False  # the full profile, not the embedded owner
        assert graph.groups[0].creator.bio == (about.strip() if about and about.strip() else None)
        graph, entry = _generate(gen, "https://github.com/pumpdev")
        assert_faithful(graph, entry, owner_metrics)
        graph, entry = _generate(gen, "https://gist.github.com/pumpdev/aa5a315d61ae9438b18d")
        assert_faithful(graph, entry, {**owner_metrics, (_C, gist["id"]): {"comments": comments}})
        assert graph.groups[0].creator.unavailable is False
    finally:
        client.close()


@PROPERTY
@given(
    vm=metrics_of(youtube.VIDEO_METRICS, digits),
    chm=metrics_of(youtube.CHANNEL_METRICS, digits),
    audio=optional_text,
    short=st.booleans(),
)
def test_youtube(server, vm, chm, audio, short):
    server.clear()
    fixtures = ytfix.YouTubeFixtures()
    video = ytfix.video(defaultAudioLanguage=audio)
    video["statistics"] = dict(vm)
    channel = ytfix.channel()
    channel["statistics"] = {**chm, "hiddenSubscriberCount": False}
    fixtures.videos[video["id"]], fixtures.channels[channel["id"]] = video, channel
    fixtures.register(server)
    client = youtube.YouTubeClient(server.url, "k", timeout=2.0)
    gen = youtube.YouTubeGenerator(client)
    try:
        carried: Carried = {}
        add(carried, _A, channel["id"], pick(chm, youtube.CHANNEL_METRICS))
        url = "https://youtube.com/shorts/dQw4w9WgXcQ" if short else "https://youtube.com/watch?v=dQw4w9WgXcQ"
        graph, entry = _generate(gen, url)
        add(carried, _C, video["id"], pick(vm, youtube.VIDEO_METRICS))
        assert_faithful(graph, entry, carried)
        graph, entry = _generate(gen, "https://youtube.com/@pumpchannel")
        assert_faithful(graph, entry, {k: v for k, v in carried.items() if k[0] is _A})
    finally:
        client.close()


@PROPERTY
@given(
    score=whole,
    ratio=st.floats(0, 1),
    comments=whole,
    subscribers=count,
    karma=metrics_of(("total_karma", "link_karma", "comment_karma")),
    removed=optional_text,
    url=st.sampled_from(
        [
            "https://www.reddit.com/gallery/1abcde",
            "https://www.reddit.com/poll/1abcde",
            "https://moon.example/ca",
            "https://www.reddit.com/r/solana/comments/1abcde/slug/",
        ]
    ),
    suspended=st.booleans(),
    about=optional_text,
)
def test_reddit(server, score, ratio, comments, subscribers, karma, removed, url, suspended, about):
    server.clear()
    post = {"score": score, "upvote_ratio": ratio, "num_comments": comments}
    server.route(
        "GET", "/comments/1abcde.json", Reply.json(rdfix.post_listing(removed_by_category=removed, url=url, **post))
    )
    server.route(
        "GET",
        "/r/solana/about.json",
        Reply.json(rdfix.subreddit_about(subscribers=subscribers, public_description=about)),
    )
    user = rdfix.user_about(**{**{"total_karma": None, "link_karma": None, "comment_karma": None}, **karma})
    server.route("GET", "/user/moon_dev/about.json", Reply.json(user))
    client = reddit.RedditClient(server.url, timeout=2.0)
    gen = reddit.RedditGenerator(client)
    try:
        # The post's author and subreddit are completed in the same step from their about.json.
        if suspended:
            server.route("GET", "/user/moon_dev/about.json", Reply.json(rdfix.suspended_user("moon_dev")))
        graph, entry = _generate(gen, "https://reddit.com/r/solana/comments/1abcde")
        carried: Carried = {
            (_C, "1abcde"): pick(post, ("score", "upvote_ratio", "num_comments"), strings=False),
            (_V, "solana"): {"subscribers": subscribers},
        }
        if karma and not suspended:
            carried[(_A, "moon_dev")] = pick(karma, tuple(karma))
        assert_faithful(graph, entry, carried)
        assert graph.groups[0].creator.unavailable is suspended
        server.route("GET", "/user/moon_dev/about.json", Reply.json(user))
        graph, entry = _generate(gen, "https://reddit.com/r/solana")
        assert_faithful(graph, entry, {(_V, "solana"): {"subscribers": subscribers}})
        graph, entry = _generate(gen, "https://reddit.com/user/moon_dev")
        assert_faithful(graph, entry, {(_A, "moon_dev"): pick(karma, tuple(karma))} if karma else {})
    finally:
        client.close()


@PROPERTY
@given(
    im=metrics_of(tiktok.CONTENT_METRICS),
    am=metrics_of(tiktok.ACCOUNT_METRICS),
    duration=fractional,
    create_time=st.one_of(whole.map(lambda n: 1_600_000_000 + n % 10**8), fractional.map(lambda f: 1.6e9 + f % 1e8)),
    iso=st.sampled_from([None, "", "2024-12-10T07:00:30.000Z"]),
    bio=st.sampled_from(["", "https://moon.example", "https://www.tiktok.com/@MoonKol"]),
    text=st.sampled_from(
        [
            "",
            None,
            "gm https://moon.example/ca.",
            "https://www.tiktok.com/@moonkol/video/7350000000000000001?lang=en chart https://dex.example/x",
        ]
    ),
    music_id=st.one_of(optional_text, whole),
    music_name=optional_text,
)
def test_tiktok(server, im, am, duration, create_time, iso, bio, text, music_id, music_name):
    server.clear()
    meta = {k: v for k, v in apifix.tiktok_video_item()["authorMeta"].items() if k not in tiktok.ACCOUNT_METRICS}
    meta.update(bioLink=bio, **am)
    item = apifix.tiktok_video_item(
        authorMeta=meta,
        videoMeta={"duration": duration, "subtitleLinks": []},
        createTime=create_time,
        createTimeISO=iso,
        text=text,
        musicMeta={"musicId": music_id, "musicName": music_name},
    )
    for name in tiktok.CONTENT_METRICS:
        item.pop(name, None)
    item.update(im)
    apifix.register_actor(server, apifix.TIKTOK_ACTOR, [item])
    client = ApifyClient(server.url, apifix.DEMO_TOKEN, timeout=2.0)
    gen = tiktok.TikTokGenerator(client)
    try:
        carried: Carried = {}
        add(carried, _A, meta["id"], pick(meta, tiktok.ACCOUNT_METRICS, strings=False))
        graph, entry = _generate(gen, "https://tiktok.com/@moonkol/video/7350000000000000001")
        content = graph.groups[0].content
        assert content.data["duration"] == duration  # a float is kept as sent
        assert content.published_at is not None
        # Every other URL of the text is an outbound link (the video's own link is dropped by assert_faithful's check).
        assert [u for u in ("https://moon.example/ca", "https://dex.example/x") if u in (text or "")] == content.links
        for name, value in (("musicId", music_id), ("musicName", music_name)):
            assert (name in content.data) == (value not in ("", None) and str(value).strip() != ""), (name, value)
        add(carried, _C, item["id"], pick(item, tiktok.CONTENT_METRICS, strings=False))
        assert_faithful(graph, entry, carried)
        graph, entry = _generate(gen, "https://tiktok.com/@moonkol")
        assert_faithful(graph, entry, {k: v for k, v in carried.items() if k[0] is _A})
    finally:
        client.close()


@PROPERTY
@given(
    pm=metrics_of(instagram.CONTENT_METRICS),
    am=metrics_of(instagram.ACCOUNT_METRICS),
    alt=optional_text,
    external=st.sampled_from([[], [{"url": "https://www.instagram.com/moonproject/"}], ["https://moon.example"]]),
    caption=st.sampled_from(
        [
            "",
            None,
            "site: https://moon.example/!",
            "repost https://instagram.com/p/C1aBcDeFgHi?igsh=1 and https://t.me/moonportal",
        ]
    ),
)
def test_instagram(server, pm, am, alt, external, caption):
    server.clear()
    post = apifix.instagram_post_item(alt=alt, caption=caption)
    for name in instagram.CONTENT_METRICS:
        post.pop(name, None)
    post.update(pm)
    profile = apifix.instagram_profile_item(externalUrls=external)
    for name in instagram.ACCOUNT_METRICS:
        profile.pop(name, None)
    profile.update(am)

    def answer(request):
        return [profile] if (request.json() or {}).get("resultsType") == "details" else [post]

    apifix.register_actor(server, apifix.INSTAGRAM_ACTOR, answer)
    client = ApifyClient(server.url, apifix.DEMO_TOKEN, timeout=2.0)
    gen = instagram.InstagramGenerator(client)
    try:
        graph, entry = _generate(gen, "https://instagram.com/p/C1aBcDeFgHi")
        assert_faithful(graph, entry, {(_C, post["id"]): pick(pm, tuple(pm), strings=False)} if pm else {})
        expected = [u for u in ("https://moon.example/", "https://t.me/moonportal") if u in (caption or "")]
        assert graph.groups[0].content.links == expected
        graph, entry = _generate(gen, "https://instagram.com/moonproject")
        assert_faithful(graph, entry, {(_A, profile["id"]): pick(am, tuple(am), strings=False)} if am else {})
    finally:
        client.close()


def _grouped(n: int) -> str:
    return f"{n:,}".replace(",", " ")


@PROPERTY
@given(
    kind=st.sampled_from(["channel", "group", "bot", "user", "restricted", "invite"]),
    n=st.integers(0, 10**9),
    online=st.integers(0, 10**6),
    description=st.sampled_from(["", "CA: abc", None]),
)
def test_telegram(server, kind, n, online, description):
    server.clear()
    desc = description or ""
    pages = {
        "channel": (
            "/abc_chan",
            tgfix.page(
                "T",
                desc,
                extra=f"{_grouped(n)} subscribers",
                buttons=("View in Telegram",),
                context_link="Preview channel",
                name="abc_chan",
            ),
            {(_V, "abc_chan"): {"subscribers": n}},
        ),
        "group": (
            "/abc_chan",
            tgfix.page(
                "T", desc, extra=f"{_grouped(n)} members, {_grouped(online)} online", buttons=("View in Telegram",)
            ),
            {(_V, "abc_chan"): {"members": n, "online": online}},
        ),
        "bot": (
            "/abc_chan",
            tgfix.page("T", desc, extra=f"{_grouped(n)} monthly users", buttons=("Start Bot",)),
            {(_A, "abc_chan"): {"monthly_users": n}},
        ),
        "user": ("/abc_chan", tgfix.page("T", desc, extra="@abc_chan", buttons=("Send Message",)), {}),
        "restricted": ("/abc_chan", tgfix.page("T", desc, buttons=("View in Telegram",)), {}),
        "invite": (
            "/+AbCdEf123",
            tgfix.page(
                "Join group chat on Telegram",
                "You are invited to a group chat on Telegram.",
                extra=f"{_grouped(n)} members",
                buttons=("Join Group",),
                page_title="Chat",
            ),
            {(_V, "invite:AbCdEf123"): {"members": n}},
        ),
    }
    path, html, carried = pages[kind]
    server.route("GET", path, Reply.html(html))
    client = TelegramPreviewClient(server.url, timeout=2.0)
    try:
        graph, entry = _generate(
            TelegramGenerator(client), "https://t.me/+AbCdEf123" if kind == "invite" else "https://t.me/abc_chan"
        )
        assert_faithful(graph, entry, carried)
    finally:
        client.close()


@PROPERTY
@given(
    n=st.integers(0, 10**9),
    kind=st.sampled_from(["channel", "group"]),
    text=st.sampled_from(
        [
            "",
            "   ",
            "gm",
            'CA <a href="https://dex.example/x">chart</a> <a href="https://t.me/abc_chan">chan</a>',
            '<a href="https://t.me/s/abc_chan/5">me</a> <a href="https://telegram.me/Abc_Chan/5?single">again</a>',
            '<a href="https://t.me/abc_chan/5">self</a> <a href="https://dex.example/x">chart</a>',
        ]
    ),
    at=st.sampled_from(["2024-12-10T07:00:30+00:00", "2024-12-10T10:00:30+03:00", "", "junk"]),
)
def test_telegram_post(server, n, kind, text, at):
    """A public post's text, time and links from t.me/s/{name}/{id}: never a link to the post itself,
    an aware UTC time or none, no "" text."""
    server.clear()
    extra = f"{_grouped(n)} subscribers" if kind == "channel" else f"{_grouped(n)} members"
    server.route(
        "GET", "/abc_chan", Reply.html(tgfix.page("T", "", extra=extra, buttons=("View in Telegram",), name="abc_chan"))
    )
    server.route("GET", "/s/abc_chan/5", Reply.html(tgfix.channel_feed_page("abc_chan", ((5, text, at),))))
    client = TelegramPreviewClient(server.url, timeout=2.0)
    try:
        graph, entry = _generate(TelegramGenerator(client), "https://t.me/abc_chan/5")
        assert_faithful(graph, entry, {(_V, "abc_chan"): {"subscribers" if kind == "channel" else "members": n}})
        content = graph.groups[0].content
        outbound = [u for u in ("https://dex.example/x", "https://t.me/abc_chan") if f'"{u}"' in text]
        assert content.links == outbound
        assert (content.published_at is None) == (at in ("", "junk"))
        assert (content.text.primary is None) == (not text.strip())
    finally:
        client.close()


@PROPERTY
@given(
    query=st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp")), min_size=1, max_size=20),
    title=optional_text,
    task_time=st.sampled_from(["2024-12-01T10:00:00.000Z", "", None, "junk"]),
)
def test_url_only_and_web(server, query, title, task_time):
    from urllib.parse import quote

    server.clear()
    graph, entry = _generate(UrlOnlyGenerator(), f"https://x.com/search?q={quote(query, safe='')}")
    assert_faithful(graph, entry)
    result = usfix.search_result(title=title)
    result["task"] = {**result.get("task", {}), "time": task_time}
    server.route("GET", "/api/v1/search/", usfix.search_reply([result]))
    client = UrlscanClient(server.url, usfix.DEMO_API_KEY, timeout=2.0)
    try:
        graph, entry = _generate(WebGenerator(client), "https://moon.example/path")
        assert_faithful(graph, entry)
    finally:
        client.close()
