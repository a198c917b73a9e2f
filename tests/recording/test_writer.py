"""The graph writer against a real Mongo wire server."""

from __future__ import annotations

import threading

import pytest
from pymongo import monitoring

from socialrec_pipeline.domain.enums import Platform
from socialrec_pipeline.domain.errors import GraphContractError
from socialrec_pipeline.domain.graph import AccountDraft, ContentDraft, GraphGroup, SocialObjectGraph, VenueDraft
from socialrec_pipeline.recording.writer import GraphWriter, validate_graph

from .graphs import chain, tweet, tweet_with_quote, x_account

ENTRY = "https://x.com/i/status/100"
TOKEN = "So1anaTokenAddre55xxxxxxxxxxxxxxxxxxxxxxxxx"


def _g(ref, **kw):
    return GraphGroup(ref=ref, **kw)


@pytest.mark.parametrize(
    "graph, reason",
    [
        (
            SocialObjectGraph(root_ref="a", groups=[_g("a", content=tweet("1")), _g("a", content=tweet("2"))]),
            "duplicate ref",
        ),
        (SocialObjectGraph(root_ref="a", groups=[_g("a", content=tweet("1")), _g("b")]), "is empty"),
        (SocialObjectGraph(root_ref="zz", groups=[_g("a", content=tweet("1"))]), "root_ref"),
        (
            SocialObjectGraph(root_ref="a", groups=[_g("a", content=tweet("1"), parent_ref="nope")]),
            "unresolved parent_ref",
        ),
        (
            SocialObjectGraph(
                root_ref="a",
                groups=[_g("a", content=tweet("1"), parent_ref="b"), _g("b", content=tweet("2"), parent_ref="a")],
            ),
            "cycle",
        ),
        (SocialObjectGraph(root_ref="a", groups=[_g("a", content=tweet("1"), parent_ref="a")]), "cycle"),
        (
            SocialObjectGraph(
                root_ref="a", groups=[_g("a", creator=AccountDraft(platform=Platform.X), content=tweet("1"))]
            ),
            "account",
        ),
        (
            SocialObjectGraph(
                root_ref="a", groups=[_g("a", creator=AccountDraft(platform=Platform.X, platform_key="  "))]
            ),
            "account",
        ),
        (
            SocialObjectGraph(
                root_ref="a", groups=[_g("a", venue=VenueDraft(platform=Platform.X, subtype="community"))]
            ),
            "venue",
        ),
        (SocialObjectGraph(root_ref="a", groups=[]), "no groups"),
        (
            SocialObjectGraph(
                root_ref="a",
                groups=[
                    _g("a", content=tweet("1"), parent_ref="b"),
                    _g("b", content=ContentDraft(platform=Platform.X, subtype="tweet", platform_key="2")),
                ],
            ),
            "no url of its own",
        ),
        (None, "expected a SocialObjectGraph"),
        ({"groups": [], "root_ref": "a"}, "expected a SocialObjectGraph"),
    ],
)
def test_every_contract_breach_raises_before_any_write(store, graph, reason):
    with pytest.raises(GraphContractError) as info:
        GraphWriter(store).write(graph, entry_url=ENTRY, token_address=TOKEN)
    assert reason in info.value.reason
    assert info.value.entry_url == ENTRY
    for name in ("contents", "accounts", "venues", "token_links", "metric_series"):
        assert store.db[name].count_documents({}) == 0, name


def test_valid_graph_orders_originals_first_and_measures_depth():
    plan = validate_graph(chain(4), ENTRY)
    assert [g.ref for g in plan.order] == ["g3", "g2", "g1", "g0"]
    assert plan.depth == {"g0": 0, "g1": 1, "g2": 2, "g3": 2}


def test_tweet_with_quoted_original(store):
    result = GraphWriter(store).write(tweet_with_quote(), entry_url=ENTRY, token_address=TOKEN)
    contents = {c["platform_key"]: c for c in store.db.contents.find()}
    assert set(contents) == {"100", "200"}
    quoting, original = contents["100"], contents["200"]
    assert quoting["parent_content_id"] == original["_id"]
    assert quoting["parent_relation"] == "quote"
    assert "parent_content_id" not in original
    accounts = {a["platform_key"]: a["_id"] for a in store.db.accounts.find()}
    assert quoting["creator_id"] == accounts["u1"] and original["creator_id"] == accounts["u2"]
    assert quoting["author"]["account_id"] == accounts["u1"] and quoting["author"]["handle"] == "hu1"
    # Only the root holds the entry URL; the original holds its own canonical URL.
    assert [e["url"] for e in quoting["source_urls"]] == [ENTRY]
    assert [e["url"] for e in original["source_urls"]] == ["https://x.com/i/status/200"]
    depths = {(link["object"], link["object_id"]): link["link_depth"] for link in store.db.token_links.find()}
    assert depths == {
        ("contents", quoting["_id"]): 0,
        ("accounts", accounts["u1"]): 0,
        ("contents", original["_id"]): 1,
        ("accounts", accounts["u2"]): 1,
    }
    assert {link["source_url"] for link in store.db.token_links.find()} == {ENTRY}
    # Metrics: one first point per object, whitelisted per platform x kind (followers survive).
    series = {s["object_id"]: s["points"][0]["metrics"] for s in store.db.metric_series.find()}
    assert series[quoting["_id"]] == {"viewCount": 10}
    assert series[accounts["u1"]] == {"followers": 100}
    assert result.contents_inserted == 2 and result.links_appended == 4


def test_rewrite_creates_no_rows_keeps_contents_and_refreshes_accounts(store):
    writer = GraphWriter(store)
    writer.write(tweet_with_quote(), entry_url=ENTRY, token_address=TOKEN)
    before = {c["_id"]: c for c in store.db.contents.find()}
    changed = tweet_with_quote()
    changed.groups[0].content.metrics = {"viewCount": 999}
    changed.groups[0].creator.bio = "new bio"
    result = writer.write(changed, entry_url=ENTRY, token_address="Another" + TOKEN[7:])
    assert result.contents_inserted == 0 and result.contents_existing == 2
    assert store.db.contents.count_documents({}) == 2 and store.db.accounts.count_documents({}) == 2
    after = {c["_id"]: c for c in store.db.contents.find()}
    assert after == before
    # Accounts are completed and refreshed by a newer observation (SPEC §5); contents are not.
    assert store.db.accounts.count_documents({"bio": "new bio"}) == 1
    assert all(len(s["points"]) == 1 for s in store.db.metric_series.find())


def test_existing_content_gains_a_new_entry_url_only(store):
    writer = GraphWriter(store)
    writer.write(tweet_with_quote(), entry_url=ENTRY, token_address=TOKEN)
    other_entry = "https://x.com/hu1/status/100"
    writer.write(tweet_with_quote(), entry_url=other_entry, token_address=TOKEN)
    root = store.db.contents.find_one({"platform_key": "100"})
    assert [e["url"] for e in root["source_urls"]] == [ENTRY, other_entry]
    original = store.db.contents.find_one({"platform_key": "200"})
    assert len(original["source_urls"]) == 1


def test_resolved_short_link_root_gets_entry_and_canonical_url(store):
    graph = SocialObjectGraph.single(_g("r", creator=x_account("u9"), content=tweet("900")))
    GraphWriter(store).write(graph, entry_url="https://t.co/abc", token_address=TOKEN)
    row = store.db.contents.find_one()
    assert [e["url"] for e in row["source_urls"]] == ["https://t.co/abc", "https://x.com/i/status/900"]


def test_same_object_twice_in_one_graph_yields_one_link(store):
    # Self-quote: the same author in both groups; the shallowest depth wins.
    graph = tweet_with_quote(author="same", quoted_author="same")
    GraphWriter(store).write(graph, entry_url=ENTRY, token_address=TOKEN)
    account_links = list(store.db.token_links.find({"object": "accounts"}))
    assert len(account_links) == 1 and account_links[0]["link_depth"] == 0
    assert store.db.token_links.count_documents({}) == 3


def test_venue_creator_only_when_group_has_no_content(store):
    graph = SocialObjectGraph(
        root_ref="v",
        groups=[
            _g(
                "v",
                creator=x_account("owner"),
                venue=VenueDraft(platform=Platform.X, subtype="community", platform_key="cm1"),
            ),
        ],
    )
    GraphWriter(store).write(graph, entry_url="https://x.com/i/communities/cm1", token_address=TOKEN)
    venue = store.db.venues.find_one()
    assert venue["creator_id"] == store.db.accounts.find_one()["_id"]
    GraphWriter(store).write(chain(2, prefix="k"), entry_url="https://x.com/i/status/k0", token_address=TOKEN)
    community = store.db.venues.find_one({"platform_key": "kv"})
    assert "creator_id" not in community
    root = store.db.contents.find_one({"platform_key": "k0"})
    assert root["venue_id"] == community["_id"]


def test_concurrent_writers_sharing_an_account_make_one_row(store):
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def work(i: int) -> None:
        graph = tweet_with_quote(tweet_id=f"30{i}", quoted_id="shared-original", author=f"w{i}", quoted_author="shared")
        try:
            barrier.wait()
            GraphWriter(store).write(graph, entry_url=f"https://x.com/i/status/30{i}", token_address=TOKEN)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert store.db.accounts.count_documents({"platform_key": "shared"}) == 1
    assert store.db.contents.count_documents({"platform_key": "shared-original"}) == 1
    original = store.db.contents.find_one({"platform_key": "shared-original"})
    assert store.db.contents.count_documents({"parent_content_id": original["_id"]}) == 4


class _Counter(monitoring.CommandListener):
    WRITES = {"insert", "update", "delete"}

    def __init__(self) -> None:
        self.commands: list[str] = []

    def started(self, event):
        self.commands.append(event.command_name)

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


def test_three_group_graph_takes_at_most_six_write_round_trips(mongo_uri):
    from pymongo import MongoClient

    from socialrec_pipeline.store import Store
    from socialrec_pipeline.store.client import open_database

    counter = _Counter()
    client = MongoClient(mongo_uri, event_listeners=[counter], tz_aware=True)
    db = open_database(client, "t_rt_" + TOKEN[:6].lower())
    try:
        s = Store(db)
        s.ensure_indexes()
        counter.commands.clear()
        GraphWriter(s).write(chain(3), entry_url="https://x.com/i/status/c0", token_address=TOKEN)
        writes = [c for c in counter.commands if c in _Counter.WRITES]
        assert len(writes) <= 6, counter.commands
        assert writes == ["update", "update", "insert", "update", "insert"], counter.commands
    finally:
        client.drop_database(db.name)
        client.close()


class _PausingContents:
    """`store.contents` for one writer whose ordered bulk insert is interrupted after its first row:
    the first row goes in, then the other writer runs to completion, then the rest is inserted.
    That is one legal interleaving of two ordered `insert_many` calls on a real server."""

    def __init__(self, inner, paused: threading.Event, resume: threading.Event) -> None:
        self._inner = inner
        self._paused, self._resume = paused, resume
        self._first = True

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def insert_many(self, contents):
        if not self._first or len(contents) < 2:
            return self._inner.insert_many(contents)
        self._first = False
        ids = self._inner.insert_many(contents[:1])
        self._paused.set()
        assert self._resume.wait(10), "the other writer never finished"
        return ids + self._inner.insert_many(contents[1:])


class _StoreWith:
    def __init__(self, store, contents) -> None:
        self._store, self.contents = store, contents

    def __getattr__(self, name):
        return getattr(self._store, name)


def test_two_writers_racing_on_one_graph_count_every_inserted_row_once(store):
    """Writer A inserts the original, writer B then inserts the quoting tweet, A's insert of that
    tweet loses to B's. Rows are right either way; the counts must add up to the rows too."""
    paused, resume = threading.Event(), threading.Event()
    results: dict[str, object] = {}
    errors: list[BaseException] = []

    def writer_a() -> None:
        try:
            pausing = _StoreWith(store, _PausingContents(store.contents, paused, resume))
            results["a"] = GraphWriter(pausing).write(tweet_with_quote(), entry_url=ENTRY, token_address=TOKEN)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
            paused.set()

    def writer_b() -> None:
        try:
            assert paused.wait(10)
            results["b"] = GraphWriter(store).write(tweet_with_quote(), entry_url=ENTRY, token_address=TOKEN)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            resume.set()

    threads = [threading.Thread(target=writer_a), threading.Thread(target=writer_b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    a, b = results["a"], results["b"]
    assert store.db.contents.count_documents({}) == 2
    assert (b.contents_inserted, b.contents_existing) == (1, 1)  # B found A's original, inserted the tweet
    assert a.contents_inserted + b.contents_inserted == 2
    assert (a.contents_inserted, a.contents_existing) == (1, 1)  # A's original is A's, the tweet B's
    assert a.ids["t"].content_id == b.ids["t"].content_id and a.ids["q"].content_id == b.ids["q"].content_id


def test_many_writers_racing_on_one_graph_insert_counts_sum_to_the_rows(store):
    for round_ in range(10):
        graph_args = dict(
            tweet_id=f"r{round_}", quoted_id=f"o{round_}", author=f"ra{round_}", quoted_author=f"rq{round_}"
        )
        barrier = threading.Barrier(4)
        inserted: list[int] = []
        errors: list[BaseException] = []

        def work() -> None:
            try:
                barrier.wait()
                written = GraphWriter(store).write(
                    tweet_with_quote(**graph_args), entry_url=f"https://x.com/i/status/r{round_}", token_address=TOKEN
                )
                inserted.append(written.contents_inserted)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert not errors
        rows = store.db.contents.count_documents({"platform_key": {"$in": [f"r{round_}", f"o{round_}"]}})
        assert rows == 2 and sum(inserted) == rows, (round_, inserted)


def test_telegram_bot_page_is_written_as_an_account_with_its_link(store, server_for_telegram):
    """A `telegram_channel` URL that turns out to be a bot: an `accounts` row, linked, with its
    monthly users as the first metric point; no venue (issue 13)."""
    from socialrec_pipeline.domain.enums import ObjectKind
    from socialrec_pipeline.providers.base import GenerateOptions
    from socialrec_pipeline.providers.telegram import TelegramGenerator, TelegramPreviewClient
    from socialrec_pipeline.routing import route

    routed = route("https://t.me/PumpBuyBot")
    client = TelegramPreviewClient(server_for_telegram.url, timeout=2.0)
    graph = TelegramGenerator(client).generate(routed, GenerateOptions(), None)
    client.close()
    GraphWriter(store).write(graph, entry_url=routed.canonical_url, token_address=TOKEN)
    row = store.accounts.find_by_platform_key(Platform.TELEGRAM, "pumpbuybot")
    assert row is not None and store.db["venues"].count_documents({}) == 0
    (link,) = store.links.find_by_token(TOKEN)
    assert (link.object, link.object_id, link.source_url) == (ObjectKind.ACCOUNTS, row.id, "https://t.me/pumpbuybot")
    assert store.metrics.find_latest_point(ObjectKind.ACCOUNTS, row.id).metrics == {"monthly_users": 48_210}


@pytest.fixture
def server_for_telegram():
    from socialrec_pipeline.sandbox.fixture_server import FixtureServer
    from socialrec_pipeline.sandbox.platforms import telegram as tgfix

    with FixtureServer() as srv:
        tgfix.register(srv)
        yield srv
