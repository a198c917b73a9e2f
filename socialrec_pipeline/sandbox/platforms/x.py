"""twitterapi.io stand-in: tweets, users and communities in the documented shapes."""

from __future__ import annotations

import copy
from typing import Any

from socialrec_pipeline.sandbox.fixture_server import FixtureServer, Reply, Request


def user(
    user_id: str = "44196397",
    user_name: str = "kolguy",
    *,
    name: str = "Kol Guy",
    description: str = "calls only. BNB: 0x0Ae024D3C20",
    followers: int = 120_500,
    created_at: str = "Tue Dec 10 07:00:30 +0000 2024",
    **extra: Any,
) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "type": "user",
        "id": user_id,
        "userName": user_name,
        "name": name,
        "url": f"https://x.com/{user_name}",
        "description": description,
        "profile_bio": {
            "description": description,
            "entities": {
                "description": {"urls": [{"display_url": "t.me/kolchat", "expanded_url": "https://t.me/kolchat",
                                          "url": "https://t.co/abc", "indices": [0, 23]}]},
                "url": {"urls": [{"display_url": "kol.guy", "expanded_url": "https://kol.guy/",
                                  "url": "https://t.co/def", "indices": [0, 23]}]},
            },
        },
        "followers": followers,
        "following": 321,
        "statusesCount": 9_876,
        "favouritesCount": 4_321,
        "mediaCount": 210,
        "createdAt": created_at,
        "isBlueVerified": True,
        "verifiedType": None,
        "unavailable": False,
    }
    payload.update(extra)
    return payload


def suspended_user(user_name: str = "rugger") -> dict[str, Any]:
    return {"userName": user_name, "unavailable": True, "unavailableReason": "Suspended",
            "message": "This account is suspended"}


def tweet(
    tweet_id: str = "1866000000000000001",
    author: dict[str, Any] | None = None,
    *,
    text: str = "gm $PUMP is live https://t.co/xyz #solana @friend",
    created_at: str = "Wed Dec 11 15:30:00 +0000 2024",
    quoted: dict[str, Any] | None = None,
    retweeted: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    author = author if author is not None else user()
    payload: dict[str, Any] = {
        "type": "tweet",
        "id": tweet_id,
        "url": f"https://x.com/{author.get('userName')}/status/{tweet_id}",
        "text": text,
        "source": "Twitter Web App",
        "retweetCount": 12,
        "replyCount": 3,
        "likeCount": 150,
        "quoteCount": 2,
        "viewCount": 20_000,
        "bookmarkCount": 7,
        "createdAt": created_at,
        "lang": "en",
        "isReply": False,
        # Absent optional strings arrive as "" (contracts: X), not null and not left out.
        "inReplyToId": "",
        "inReplyToUserId": "",
        "inReplyToUsername": "",
        "conversationId": tweet_id,
        "author": author,
        "entities": {
            "hashtags": [{"indices": [30, 37], "text": "solana"}],
            "urls": [{"display_url": "pump.fun/abc", "expanded_url": "https://pump.fun/abc",
                      "url": "https://t.co/xyz", "indices": [17, 40]}],
            "user_mentions": [{"id_str": "1001", "name": "Friend", "screen_name": "friend"}],
        },
        "quoted_tweet": quoted,
        "retweeted_tweet": retweeted,
    }
    payload.update(extra)
    return payload


def community(community_id: str = "1790000000000000042", *, creator: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "id": community_id,
        "name": "PUMP holders",
        "description": "official community",
        "member_count": 1_234,
        "moderator_count": 3,
        "created_at": "Tue Dec 10 07:00:30 +0000 2024",
        "join_policy": "Open",
        "creator": creator if creator is not None else user(),
        "admin": user("555", "pumpadmin", name="Admin"),
        "rules": [{"id": "1", "name": "No spam", "description": "none"}],
    }


class XFixtures:
    """Route table state: edit `tweets`/`users`/`communities` between calls."""

    def __init__(self) -> None:
        self.tweets: dict[str, dict[str, Any]] = {}
        self.users: dict[str, dict[str, Any]] = {}
        self.communities: dict[str, dict[str, Any]] = {}

    def register(self, server: FixtureServer, prefix: str = "") -> XFixtures:
        server.route("GET", f"{prefix}/twitter/tweets", self._tweets)
        server.route("GET", f"{prefix}/twitter/user/info", self._user)
        server.route("GET", f"{prefix}/twitter/community/info", self._community)
        return self

    def _tweets(self, request: Request) -> Reply:
        ids = (request.param("tweet_ids") or "").split(",")
        found = [copy.deepcopy(self.tweets[i]) for i in ids if i in self.tweets]
        return Reply.json({"tweets": found, "status": "success", "message": "success"})

    def _user(self, request: Request) -> Reply:
        found = self.users.get(request.param("userName") or "")
        if found is None:
            return Reply.json({"status": "error", "msg": "User not found"})
        return Reply.json({"data": copy.deepcopy(found), "status": "success", "msg": "success"})

    def _community(self, request: Request) -> Reply:
        found = self.communities.get(request.param("community_id") or "")
        if found is None:
            return Reply.json({"status": "error", "msg": "Community not found"})
        return Reply.json({"community_info": copy.deepcopy(found), "status": "success", "msg": "success"})


def demo_fixtures() -> XFixtures:
    """A quote tweet of an original, its authors, a suspended user and one community."""
    fixtures = XFixtures()
    original_author = user("2002", "dev_anon", name="Dev Anon", followers=900)
    original = tweet("1865000000000000000", original_author, text="launching soon", quoted=None)
    fixtures.tweets[original["id"]] = original
    quote = tweet(quoted=original)
    fixtures.tweets[quote["id"]] = quote
    fixtures.users["kolguy"] = user()
    fixtures.users["dev_anon"] = original_author
    fixtures.users["rugger"] = suspended_user()
    c = community()
    fixtures.communities[c["id"]] = c
    return fixtures
