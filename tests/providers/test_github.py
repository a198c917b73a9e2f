"""GitHubGenerator against a loopback GitHub REST v3 stand-in answering in the documented shapes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from socialrec_pipeline.domain.enums import ObjectKind, ParentRelation, Platform
from socialrec_pipeline.domain.errors import ProviderError, TargetBlocked, TargetNotFound, TransientProviderError
from socialrec_pipeline.domain.graph import (
    AccountDraft,
    ContentDraft,
    ContentText,
    DeclaredHandle,
    GraphGroup,
    SocialObjectGraph,
)
from socialrec_pipeline.providers.base import GenerateOptions, Generator
from socialrec_pipeline.providers.github import REPO_METRICS, USER_METRICS, GitHubClient, GitHubGenerator
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.sandbox.fixture_server import Reply
from socialrec_pipeline.sandbox.platforms import github as ghfix
from tests.providers import NOW, OPTS, make_routed, mutilations, sampled, slow
from tests.providers.fidelity import Carried, add, assert_faithful, key_of, pick

TOKEN = "ghp_sekrit"
REPO, USER, GIST = SourceType.GITHUB_REPO, SourceType.GITHUB_USER, SourceType.GITHUB_GIST


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.fixture
def fx(server):
    server.clear()
    return ghfix.demo_fixtures().register(server)


@pytest.fixture
def gen(server):
    client = GitHubClient(server.url, TOKEN, timeout=2.0)
    yield GitHubGenerator(client)
    client.close()


#: The stored owner rows are fresh: the graph keeps the embedded owners (no profile calls).
FRESH = GenerateOptions(profile_is_fresh=lambda kind, platform, key: True)


def repo_group(full_name: str, repo_id: int, description: str, owner_id: int | None = None,
               owner_type: str = "User", **data) -> GraphGroup:
    login = full_name.split("/")[0]
    return GraphGroup(
        ref=f"repo:{full_name}",
        creator=AccountDraft(platform=Platform.GITHUB, platform_key=login, handle=login,
                             data={"source_ref": "repo", "id": owner_id or repo_id + 1, "account_type": owner_type}),
        content=ContentDraft(
            platform=Platform.GITHUB, subtype="repo", platform_key=full_name,
            url=f"https://github.com/{full_name}", published_at=utc(2024, 11, 2, 10, 15),
            text=ContentText(primary=description), links=["https://pump.example"], tags=["solana", "memecoin"],
            metrics={"stargazers_count": 42, "forks_count": 5, "watchers_count": 42, "subscribers_count": 3,
                     "open_issues_count": 1},
            data={"id": repo_id, "pushed_at": utc(2024, 12, 3, 9, 30), "updated_at": utc(2024, 12, 1, 8),
                  "archived": False, "language": "TypeScript", "default_branch": "main", "full_name": full_name,
                  **data},
        ),
    )


def test_protocol(gen):
    assert isinstance(gen, Generator) and gen.makes_external_calls
    assert gen.source_types == {REPO, USER, GIST}


def test_fork_graph_is_exact(fx, gen, server):
    graph = gen.generate(make_routed(REPO, "pumpdev/pump-sdk"), FRESH, NOW)
    root = repo_group("pumpdev/pump-sdk", 700_001, "SDK for the PUMP token", fork=True,
                      source="solana-labs/token-kit")
    root.parent_ref, root.parent_relation = "repo:solana-labs/token-kit", ParentRelation.FORK
    parent = repo_group("solana-labs/token-kit", 500_000, "token kit", 9_000_001, "Organization", fork=False)
    assert graph == SocialObjectGraph(groups=[root, parent], root_ref="repo:pumpdev/pump-sdk")
    call = server.calls("/repos/")[-1]
    assert call.path == "/repos/pumpdev/pump-sdk"
    assert call.headers["authorization"] == f"Bearer {TOKEN}"
    assert call.headers["accept"] == "application/vnd.github+json"


def test_plain_repo_has_no_parent(fx, gen):
    graph = gen.generate(make_routed(REPO, "solana-labs/token-kit"), FRESH, NOW)
    expected = repo_group("solana-labs/token-kit", 500_000, "token kit", 9_000_001, "Organization", fork=False)
    assert graph == SocialObjectGraph.single(expected)


def full_pumpdev() -> AccountDraft:
    """`/users/pumpdev` as an account draft."""
    return AccountDraft(
        platform=Platform.GITHUB, platform_key="pumpdev", handle="pumpdev", display_name="Pump Dev",
        bio="building on solana", links=["https://pump.example"],
        declared_handles=[DeclaredHandle(platform=Platform.X, value="pumpdev_x")], followers=77,
        account_created_at=utc(2021, 3, 4, 5, 6, 7),
        metrics={"followers": 77, "following": 4, "public_repos": 12, "public_gists": 1},
        unavailable=False,
        data={"id": 583231, "account_type": "User"},
    )


def test_user_graph_is_exact(fx, gen):
    graph = gen.generate(make_routed(USER, "pumpdev"), OPTS, NOW)
    assert graph == SocialObjectGraph.single(GraphGroup(ref="account:pumpdev", creator=full_pumpdev()))


def test_repo_and_gist_owners_get_their_full_profile_once(fx, gen, server):
    full = full_pumpdev()
    before = len(server.calls("/users/"))
    graph = gen.generate(make_routed(REPO, "pumpdev/pump-sdk"), OPTS, NOW)
    root, parent = graph.groups
    assert root.creator == full  # /users/pumpdev, in the same step
    org = parent.creator  # an Organization owner: /orgs/{org}, whose text is `description`
    assert (org.platform_key, org.display_name, org.bio) == (
        "solana-labs",
        "Solana Labs",
        "Tools for the Solana ecosystem",
    )
    assert [(d.platform, d.value) for d in org.declared_handles] == [(Platform.X, "solanalabs")]
    assert (org.followers, org.account_created_at, org.data) == (
        5200,
        utc(2018, 2, 20, 17, 11, 40),
        {"id": 9_000_001, "account_type": "Organization"},
    )
    assert len(server.calls("/users/")) == before + 1 and server.calls("/orgs/")[-1].path == "/orgs/solana-labs"
    gist = gen.generate(make_routed(GIST, "pumpdev/aa5a315d61ae9438b18d"), OPTS, NOW).groups[0]
    assert gist.creator == full


def test_owner_profile_is_skipped_when_the_stored_one_is_fresh(fx, gen, server):
    asked = []
    options = GenerateOptions(
        profile_is_fresh=lambda kind, platform, key: asked.append((kind, platform, key)) or key == "pumpdev"
    )
    before_users, before_orgs = len(server.calls("/users/")), len(server.calls("/orgs/"))
    graph = gen.generate(make_routed(REPO, "pumpdev/pump-sdk"), options, NOW)
    assert asked == [("accounts", "gh", "pumpdev"), ("accounts", "gh", "solana-labs")]
    assert len(server.calls("/users/")) == before_users  # fresh: not fetched, stays the embedded copy
    assert graph.groups[0].creator.data["source_ref"] == "repo"
    assert len(server.calls("/orgs/")) == before_orgs + 1 and graph.groups[1].creator.display_name == "Solana Labs"


def test_a_failed_owner_profile_keeps_the_embedded_owner(fx, gen, server):
    del fx.users["pumpdev"]  # 404
    fx.orgs["solana-labs"] = None  # 404 too: both owners stay as the repo answer embedded them
    graph = gen.generate(make_routed(REPO, "pumpdev/pump-sdk"), OPTS, NOW)
    assert [g.creator.data["source_ref"] for g in graph.groups] == ["repo", "repo"]
    assert graph.groups[0].content.platform_key == "pumpdev/pump-sdk"


def test_gist_graph_is_exact(fx, gen, server):
    graph = gen.generate(make_routed(GIST, "pumpdev/aa5a315d61ae9438b18d"), FRESH, NOW)
    expected = GraphGroup(
        ref="gist:aa5a315d61ae9438b18d",
        creator=AccountDraft(
            platform=Platform.GITHUB,
            platform_key="pumpdev",
            handle="pumpdev",
            data={"source_ref": "gist", "id": 583231, "account_type": "User"},
        ),
        content=ContentDraft(
            platform=Platform.GITHUB,
            subtype="gist",
            platform_key="aa5a315d61ae9438b18d",
            url="https://gist.github.com/pumpdev/aa5a315d61ae9438b18d",
            published_at=utc(2024, 12, 5, 12),
            text=ContentText(primary="airdrop checker"),
            metrics={"comments": 2},
            data={
                "public": True,
                "updated_at": utc(2024, 12, 6, 12),
                "files": [{"filename": "check.py", "language": "Python", "size": 321}],
            },
        ),
    )
    assert graph == SocialObjectGraph.single(expected)
    assert server.calls("/gists/")[-1].path == "/gists/aa5a315d61ae9438b18d"


def test_anonymous_gist_has_no_creator(fx, gen):
    fx.gists["anon1"] = ghfix.gist("anon1", with_owner=False)
    graph = gen.generate(make_routed(GIST, "anon1"), OPTS, NOW)
    assert graph.groups[0].creator is None
    # `gist.github.com/anon1` would route to the user `anon1`; the placeholder keeps it a gist URL.
    assert graph.groups[0].content.url == "https://gist.github.com/anonymous/anon1"


def test_renamed_repo_redirect_is_followed_inside_the_api_only(fx, gen, server):
    fx.repos["pumpdev/new-name"] = ghfix.repo("pumpdev/new-name")
    server.route("GET", "/repos/pumpdev/old-name", Reply.redirect(server.url + "/repos/pumpdev/new-name", 301))
    assert gen.generate(make_routed(REPO, "pumpdev/old-name"), OPTS, NOW).root_ref == "repo:pumpdev/new-name"
    server.route("GET", "/repos/pumpdev/evil", Reply.redirect("http://169.254.169.254/latest", 301))
    with pytest.raises(TransientProviderError, match="redirect"):
        gen.generate(make_routed(REPO, "pumpdev/evil"), OPTS, NOW)


RATE_LIMITED = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1764500000"}


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (Reply.json({"message": "Not Found"}, status=404), TargetNotFound),
        (Reply.json({"message": "Repository access blocked", "block": {"reason": "dmca"}}, status=451), TargetBlocked),
        (Reply.json({"message": "Repository access blocked", "block": {"reason": "tos"}}, status=403), TargetBlocked),
        (Reply.json({"message": "API rate limit exceeded"}, status=403, headers=RATE_LIMITED), TransientProviderError),
        (Reply.json({"message": "API rate limit exceeded"}, status=429, headers=RATE_LIMITED), TransientProviderError),
        (Reply.json({"message": "Bad credentials"}, status=401), TransientProviderError),
        (Reply.json({"message": "Forbidden"}, status=403), TransientProviderError),
        (Reply.html("<h1>forbidden</h1>", status=403), TransientProviderError),
        (Reply.json({"message": "boom"}, status=500), TransientProviderError),
        (Reply.json({"message": "unicorn"}, status=503), TransientProviderError),
        (Reply(status=200, body=b'{"id": 1,', headers={"Content-Type": "application/json"}), TransientProviderError),
        (Reply.html("<html>GitHub is down</html>"), TransientProviderError),
        (Reply.json(["not", "an", "object"]), TransientProviderError),
        (Reply.json({}), TransientProviderError),
    ],
)
@pytest.mark.parametrize(
    ("source_type", "key", "path"),
    [
        (REPO, "a/b", "/repos/a/b"),
        (USER, "a", "/users/a"),
        (GIST, "a/123", "/gists/123"),
    ],
)
def test_error_shapes(server, gen, source_type, key, path, reply, error):
    server.clear()
    server.route("GET", path, reply)
    with pytest.raises(error):
        gen.generate(make_routed(source_type, key), OPTS, NOW)


def test_timeout_is_transient(server):
    server.clear()
    server.route("GET", "/users/slow", slow(Reply.json(ghfix.user("slow")), 0.6))
    client = GitHubClient(server.url, None, timeout=0.15)
    with pytest.raises(TransientProviderError, match="timed out"):
        GitHubGenerator(client).generate(make_routed(USER, "slow"), OPTS, NOW)
    client.close()
    assert "authorization" not in server.calls("/users/slow")[-1].headers


def test_bad_keys_make_no_call(server, gen):
    server.clear()
    for source_type, key in ((REPO, "justone"), (USER, ""), (GIST, None)):
        with pytest.raises(TargetNotFound) as info:
            gen.generate(make_routed(source_type, key), OPTS, NOW)
        assert info.value.external_call_made is False
    assert server.calls() == []


@pytest.mark.parametrize(
    ("source_type", "key", "path", "payload"),
    [
        (REPO, "pumpdev/pump-sdk", "/repos/pumpdev/pump-sdk", ghfix.repo(parent=ghfix.repo("a/b", 1))),
        (USER, "pumpdev", "/users/pumpdev", ghfix.user()),
        (GIST, "g1", "/gists/g1", ghfix.gist("g1")),
    ],
)
def test_mutilated_payloads_never_crash(server, gen, source_type, key, path, payload):
    server.clear()
    seen = 0
    for body in sampled(mutilations(payload)):
        server.route("GET", path, Reply.json(body))
        try:
            graph = gen.generate(make_routed(source_type, key), OPTS, NOW)
        except ProviderError:
            continue
        seen += 1
        for group in graph.groups:
            assert group.creator is None or group.creator.platform_key
        expected: Carried = {}
        if source_type is REPO:
            name = key_of(body.get("full_name"))
            add(expected, ObjectKind.CONTENTS, name and name.lower(), pick(body, REPO_METRICS))
        elif source_type is USER:
            login = key_of(body.get("login"))
            add(expected, ObjectKind.ACCOUNTS, login and login.lower(), pick(body, USER_METRICS))
        else:
            gist_id = key_of(body.get("id"))
            add(expected, ObjectKind.CONTENTS, gist_id and gist_id.lower(), pick(body, ("comments",)))
        assert_faithful(graph, "https://github.com/", expected)
    assert seen > 20


def test_keys_and_urls_are_lower_cased_like_the_router(fx, gen):
    fx.repos["pumpdev/mixed"] = ghfix.repo("PumpDev/Mixed-Case")
    fx.users["pumpdev2"] = ghfix.user("PumpDev2")
    group = gen.generate(make_routed(REPO, "pumpdev/mixed"), OPTS, NOW).groups[0]
    assert (group.content.platform_key, group.content.url) == (
        "pumpdev/mixed-case",
        "https://github.com/pumpdev/mixed-case",
    )
    assert group.content.data["full_name"] == "PumpDev/Mixed-Case"
    assert (group.creator.platform_key, group.creator.handle) == ("pumpdev", "PumpDev")
    account = gen.generate(make_routed(USER, "pumpdev2"), OPTS, NOW).groups[0].creator
    assert (account.platform_key, account.handle) == ("pumpdev2", "PumpDev2")


@pytest.mark.parametrize("source_type, key", [(REPO, "pumpdev/pump-sdk"), (GIST, "pumpdev/aa5a315d61ae9438b18d")])
def test_times_in_data_are_aware_utc_datetimes_not_strings(fx, gen, source_type, key):
    """SPEC §4: every timestamp is a timezone-aware UTC datetime, `data` included (GitHub's
    `pushed_at` / `updated_at` keep their names); an unparseable time is left out, not stored raw."""
    graph = gen.generate(make_routed(source_type, key), OPTS, NOW)
    for group in graph.groups:
        for name in ("pushed_at", "updated_at"):
            if name in group.content.data:
                value = group.content.data[name]
                assert isinstance(value, datetime) and value.utcoffset().total_seconds() == 0, (name, value)
    fx.repos["pumpdev/pump-sdk"]["pushed_at"] = "not a time"
    root = gen.generate(make_routed(REPO, "pumpdev/pump-sdk"), OPTS, NOW).groups[0]
    assert "pushed_at" not in root.content.data and isinstance(root.content.data["updated_at"], datetime)
