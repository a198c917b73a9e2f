"""Issue 13: generators against answers shaped like the providers' real ones (contracts/platform-apis.md).

Each fixture is written from the documented shape; each test pins one rule:
floats where counts and durations are read, `""` for absent optional strings, no links back at
the object being recorded, and old gist answers naming the author `user`.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from socialrec_pipeline.providers.apify import ApifyClient
from socialrec_pipeline.providers.github import GitHubClient, GitHubGenerator
from socialrec_pipeline.providers.instagram import InstagramGenerator
from socialrec_pipeline.providers.payload import as_count, as_number, outbound_links, scalars
from socialrec_pipeline.providers.reddit import RedditClient, RedditGenerator
from socialrec_pipeline.providers.tiktok import TikTokGenerator
from socialrec_pipeline.providers.x import TwitterApiClient, XGenerator
from socialrec_pipeline.providers.youtube import YouTubeClient, YouTubeGenerator
from socialrec_pipeline.routing import route
from socialrec_pipeline.sandbox.fixture_server import Reply
from socialrec_pipeline.sandbox.platforms import apify as apifix
from socialrec_pipeline.sandbox.platforms import github as ghfix
from socialrec_pipeline.sandbox.platforms import reddit as rdfix
from socialrec_pipeline.sandbox.platforms import x as xfix
from socialrec_pipeline.sandbox.platforms import youtube as ytfix
from tests.providers import NOW, OPTS

TT_VIDEO = "https://tiktok.com/@moonkol/video/7350000000000000001"


def _routed(url: str):
    r = route(url)
    assert r is not None
    return r


# -- shared readers ------------------------------------------------------------------------------

def test_readers_take_floats_and_treat_blank_strings_as_absent():
    assert as_number(26.981) == 26.981 and as_number("26.981") == 26.981 and as_number(14) == 14
    assert as_number(True) is None and as_number(float("nan")) is None and as_number("1e999") is None
    assert as_count(1234.6) == 1235 and as_count("15234") == 15234 and as_count(12.0) == 12
    assert scalars({"a": "", "b": "  ", "c": "x", "d": 0, "e": False, "f": None}, tuple("abcdef")) == {
        "c": "x", "d": 0, "e": False}


def test_outbound_links_drop_every_spelling_of_the_object_itself():
    own = "https://reddit.com/r/solana/comments/1abcde"
    links = ["https://www.reddit.com/gallery/1abcde", "https://redd.it/1abcde", "https://old.reddit.com/r/solana/comments/1abcde/t/",
             "https://www.reddit.com/poll/1abcde", "https://www.reddit.com/comments/2other", "https://moon.example"]
    assert outbound_links(links, own) == ["https://www.reddit.com/comments/2other", "https://moon.example"]


# -- 7. TikTok (and every count): floats are read, never dropped -----------------------------------

@pytest.fixture
def tiktok(server):
    server.clear()
    client = ApifyClient(server.url, apifix.DEMO_TOKEN, timeout=2.0)
    yield TikTokGenerator(client)
    client.close()


def test_tiktok_float_duration_is_kept_and_float_counts_are_rounded(server, tiktok):
    meta = {**apifix.tiktok_video_item()["authorMeta"], "fans": 12000.0, "heart": 340000.4}
    item = apifix.tiktok_video_item(videoMeta={"duration": 26.981, "subtitleLinks": []}, playCount=50210.0,
                                    diggCount=3100.7, authorMeta=meta, createTimeISO=None, createTime=1733814030.5)
    apifix.register_actor(server, apifix.TIKTOK_ACTOR, [item])
    group = tiktok.generate(_routed(TT_VIDEO), OPTS, NOW).groups[0]
    assert group.content.data["duration"] == 26.981
    assert group.content.metrics["playCount"] == 50210 and group.content.metrics["diggCount"] == 3101
    assert group.content.published_at == datetime(2024, 12, 10, 7, 0, 30, 500000, tzinfo=UTC)
    assert group.creator.followers == 12000 and group.creator.metrics["heart"] == 340000


def test_reddit_float_karma_and_subscribers_are_kept(server):
    server.clear()
    rdfix.register_reddit(server)
    server.route("GET", "/user/moon_dev/about.json", Reply.json(rdfix.user_about(total_karma=1520.0, link_karma=900.0)))
    server.route("GET", "/r/solana/about.json", Reply.json(rdfix.subreddit_about(subscribers=250000.0)))
    client = RedditClient(server.url, timeout=2.0)
    gen = RedditGenerator(client)
    account = gen.generate(_routed("https://reddit.com/user/moon_dev"), OPTS, NOW).groups[0].creator
    venue = gen.generate(_routed("https://reddit.com/r/solana"), OPTS, NOW).groups[0].venue
    client.close()
    assert account.metrics == {"total_karma": 1520, "link_karma": 900, "comment_karma": 620}
    assert venue.members == 250000 and venue.metrics == {"subscribers": 250000}


def test_x_and_github_float_followers_are_kept(server):
    server.clear()
    fixtures = xfix.demo_fixtures()
    fixtures.users["kolguy"] = xfix.user(followers=120499.6)
    fixtures.register(server)
    gh = ghfix.demo_fixtures()
    gh.users["pumpdev"] = ghfix.user(followers=76.6)
    gh.register(server)
    x = TwitterApiClient(server.url, "k", timeout=2.0)
    g = GitHubClient(server.url, None, timeout=2.0)
    x_account = XGenerator(x).generate(_routed("https://x.com/kolguy"), OPTS, NOW).groups[0].creator
    gh_account = GitHubGenerator(g).generate(_routed("https://github.com/pumpdev"), OPTS, NOW).groups[0].creator
    x.close()
    g.close()
    assert x_account.followers == 120500 and x_account.metrics["followers"] == 120500
    assert gh_account.followers == 77 and gh_account.metrics["followers"] == 77


# -- 8. "" is absent, for every provider ----------------------------------------------------------

def test_x_empty_reply_strings_store_nothing(server):
    server.clear()
    fixtures = xfix.demo_fixtures()
    tweet = xfix.tweet("1866000000000000009", inReplyToId="", inReplyToUserId="", inReplyToUsername="", lang="")
    fixtures.tweets[tweet["id"]] = tweet
    fixtures.users["kolguy"] = xfix.user(verifiedType="", unavailableReason="")
    fixtures.register(server)
    client = TwitterApiClient(server.url, "k", timeout=2.0)
    gen = XGenerator(client)
    content = gen.generate(_routed("https://x.com/kolguy/status/1866000000000000009"), OPTS, NOW).groups[0].content
    account = gen.generate(_routed("https://x.com/kolguy"), OPTS, NOW).groups[0].creator
    client.close()
    assert content.data == {"conversationId": "1866000000000000009", "isReply": False}
    assert "verifiedType" not in account.data and "unavailableReason" not in account.data


def test_empty_strings_are_absent_in_reddit_youtube_and_github(server):
    server.clear()
    rdfix.register_reddit(server)
    server.route("GET", "/comments/1abcde.json", Reply.json(rdfix.post_listing(removed_by_category="", name="")))
    server.route("GET", "/r/solana/about.json", Reply.json(rdfix.subreddit_about(subreddit_type="")))
    yt = ytfix.demo_fixtures()
    yt.videos["dQw4w9WgXcQ"] = ytfix.video(defaultAudioLanguage="", liveBroadcastContent="")
    yt.register(server)
    gh = ghfix.demo_fixtures()
    gh.repos["pumpdev/pump-sdk"] = ghfix.repo(language="", default_branch="")
    gh.register(server)
    rd, ytc, ghc = (
        RedditClient(server.url, timeout=2.0),
        YouTubeClient(server.url, "k", timeout=2.0),
        GitHubClient(server.url, None, timeout=2.0),
    )
    post = (
        RedditGenerator(rd)
        .generate(_routed("https://reddit.com/r/solana/comments/1abcde"), OPTS, NOW)
        .groups[0]
        .content
    )
    sub = RedditGenerator(rd).generate(_routed("https://reddit.com/r/solana"), OPTS, NOW).groups[0].venue
    video = (
        YouTubeGenerator(ytc).generate(_routed("https://youtube.com/watch?v=dQw4w9WgXcQ"), OPTS, NOW).groups[0].content
    )
    repo = GitHubGenerator(ghc).generate(_routed("https://github.com/pumpdev/pump-sdk"), OPTS, NOW).groups[0].content
    for c in (rd, ytc, ghc):
        c.close()
    assert "removed_by_category" not in post.data and "name" not in post.data
    assert "subreddit_type" not in sub.data
    assert video.data == {"categoryId": "22"}
    assert "language" not in repo.data and "default_branch" not in repo.data


# -- 9. a post's own gallery / poll URL is not an outbound link -----------------------------------


@pytest.mark.parametrize(
    "own", ["https://www.reddit.com/gallery/1abcde", "https://www.reddit.com/poll/1abcde", "https://redd.it/1abcde"]
)
def test_reddit_gallery_and_poll_urls_are_the_post_itself(server, own):
    server.clear()
    rdfix.register_reddit(server)
    server.route(
        "GET",
        "/comments/1abcde.json",
        Reply.json(rdfix.post_listing(url=own, selftext=f"see {own} and https://moon.example/ca")),
    )
    client = RedditClient(server.url, timeout=2.0)
    content = (
        RedditGenerator(client)
        .generate(_routed("https://reddit.com/r/solana/comments/1abcde"), OPTS, NOW)
        .groups[0]
        .content
    )
    client.close()
    assert content.links == ["https://moon.example/ca"]


def test_no_provider_links_back_at_the_recorded_object(server):
    server.clear()
    gh = ghfix.demo_fixtures()
    gh.repos["pumpdev/pump-sdk"] = ghfix.repo(homepage="https://github.com/PumpDev/pump-sdk")
    gh.users["pumpdev"] = ghfix.user(blog="https://github.com/pumpdev")
    gh.register(server)
    yt = ytfix.demo_fixtures()
    yt.videos["dQw4w9WgXcQ"] = ytfix.video(description="rewatch https://youtu.be/dQw4w9WgXcQ then https://pump.fun/abc")
    yt.register(server)
    fixtures = xfix.demo_fixtures()
    fixtures.users["kolguy"] = xfix.user(
        profile_bio={"entities": {"url": {"urls": [{"expanded_url": "https://twitter.com/KolGuy"}]}}}
    )
    fixtures.register(server)
    meta = {**apifix.tiktok_video_item()["authorMeta"], "bioLink": "https://www.tiktok.com/@MoonKol"}
    apifix.register_actor(server, apifix.TIKTOK_ACTOR, [apifix.tiktok_video_item(authorMeta=meta)])
    apifix.register_actor(
        server,
        apifix.INSTAGRAM_ACTOR,
        [
            apifix.instagram_profile_item(
                externalUrls=[{"url": "https://www.instagram.com/moonproject/"}, {"url": "https://moon.example"}]
            )
        ],
    )
    clients = [
        GitHubClient(server.url, None, timeout=2.0),
        YouTubeClient(server.url, "k", timeout=2.0),
        TwitterApiClient(server.url, "k", timeout=2.0),
        ApifyClient(server.url, apifix.DEMO_TOKEN, timeout=2.0),
    ]
    ghg, ytg, xg = GitHubGenerator(clients[0]), YouTubeGenerator(clients[1]), XGenerator(clients[2])
    ttg, igg = TikTokGenerator(clients[3]), InstagramGenerator(clients[3])
    repo = ghg.generate(_routed("https://github.com/pumpdev/pump-sdk"), OPTS, NOW).groups[0].content
    user = ghg.generate(_routed("https://github.com/pumpdev"), OPTS, NOW).groups[0].creator
    video = ytg.generate(_routed("https://youtube.com/watch?v=dQw4w9WgXcQ"), OPTS, NOW).groups[0].content
    x_user = xg.generate(_routed("https://x.com/kolguy"), OPTS, NOW).groups[0].creator
    tt_author = ttg.generate(_routed(TT_VIDEO), OPTS, NOW).groups[0].creator
    ig_profile = igg.generate(_routed("https://instagram.com/moonproject"), OPTS, NOW).groups[0].creator
    for c in clients:
        c.close()
    assert repo.links == [] and user.links == []
    assert video.links == ["https://pump.fun/abc"]
    assert x_user.links == [] and tt_author.links == []
    assert ig_profile.links == ["https://moon.example"]


# -- 10. gists: `user` in old answers, `owner` in new ones ------------------------------------------


def test_gist_author_named_user_is_read(server):
    server.clear()
    gh = ghfix.GitHubFixtures()
    old = ghfix.gist("b1c2d3e4", with_owner=False)
    del old["owner"]
    old["user"] = ghfix.owner("oldtimer", 42)
    gh.gists["b1c2d3e4"] = old
    gh.register(server)
    client = GitHubClient(server.url, None, timeout=2.0)
    group = GitHubGenerator(client).generate(_routed("https://gist.github.com/oldtimer/b1c2d3e4"), OPTS, NOW).groups[0]
    client.close()
    assert group.creator is not None and (group.creator.platform_key, group.creator.handle) == ("oldtimer", "oldtimer")
    assert group.content.url == "https://gist.github.com/oldtimer/b1c2d3e4"
