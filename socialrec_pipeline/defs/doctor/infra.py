"""Doctor checks of the infrastructure: MongoDB (reachable, indexes, the retry queue), Redis and
RabbitMQ (reachable, the exchange, the queue and its binding).
"""

from __future__ import annotations

import contextlib
import uuid
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import quote, unquote, urlsplit

from pika.exceptions import ChannelClosedByBroker

from socialrec_pipeline.defs.doctor.core import (
    INBOX_INDEXES,
    PROBE_COLLECTION,
    PROBE_PREFIX,
    ConfigMissing,
    DoctorContext,
    Finding,
    Status,
    first_line,
    http_client,
)
from socialrec_pipeline.domain.enums import RETRY_PARTITIONS
from socialrec_pipeline.providers.http import json_or_none, send
from socialrec_pipeline.recording.locks import TokenLocks
from socialrec_pipeline.store.client import open_client, open_database
from socialrec_pipeline.store.collections import TOKENS, collection
from socialrec_pipeline.store.indexes import INDEXES
from socialrec_pipeline.store.tokens import OLDEST_ATTEMPT
from socialrec_pipeline.stream.broker import EXCHANGE_TYPE, ROUTING_KEY, dead_letter_queue, open_connection
from socialrec_pipeline.stream.inbox import COLLECTION as INBOX_COLLECTION

# -- MongoDB -------------------------------------------------------------------------------------


class MongoCheck:
    """One MongoDB check's connection and its failing row, shared by the three MongoDB checks:

        with MongoCheck(ctx, name, action) as check:
            ...  # reads `check.db`, returns the check's Finding
        return check.failed

    The client opens on the first use of `check.db` (short server selection) and is closed when the
    block ends. An unset setting ends the block with a "not checked" row (`unconfigured`: the check's
    own wording and what to set); any other error with "<Type>: <first line>" and `action`."""

    def __init__(
        self,
        ctx: DoctorContext,
        name: str,
        action: str,
        unconfigured: tuple[str, str] = ("not checked", "set MONGODB_URI"),
    ) -> None:
        self._ctx, self.name, self.action, self.unconfigured = ctx, name, action, unconfigured
        self._client: Any = None
        self._db: Any = None
        self.failed = Finding(name, "fail", "the check ended without a finding", action)

    @property
    def db(self) -> Any:
        if self._db is None:
            mongo = self._ctx.resource("mongo")  # ConfigMissing when MONGODB_URI is unset
            self._client = open_client(mongo.uri, timeout_ms=int(min(self._ctx.timeout_s, 5.0) * 1000))
            self._db = open_database(self._client, mongo.database)
        return self._db

    def __enter__(self) -> MongoCheck:
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        if self._client is not None:
            self._client.close()
        if isinstance(exc, ConfigMissing):
            finding, todo = self.unconfigured
            self.failed = Finding(self.name, "fail", f"{finding}: {exc}", todo)
        elif isinstance(exc, Exception):
            self.failed = Finding(self.name, "fail", f"{type(exc).__name__}: {first_line(exc)}", self.action)
        else:
            return False  # no error (the block returned its row), or an interrupt: not ours to swallow
        return True


def check_mongodb(ctx: DoctorContext) -> Finding:
    """Reachable, and a document written and deleted with the database's write concern."""
    with MongoCheck(
        ctx,
        "mongodb",
        "check MONGODB_URI and that the server is up (scripts/run.sh starts a local one when it is unset)",
        unconfigured=("not configured", "set MONGODB_URI (and MONGODB_DATABASE)"),
    ) as check:
        db = check.db
        db.command("ping")
        probe = collection(db, PROBE_COLLECTION)
        doc_id = f"{PROBE_PREFIX}{uuid.uuid4().hex}"
        probe.insert_one({"_id": doc_id, "at": datetime.now(UTC)})
        probe.delete_one({"_id": doc_id})
        concern = db.write_concern.document or {"w": "server default"}
        return Finding(check.name, "ok", f"reachable, database {db.name!r} writable (write concern {concern})")
    return check.failed


def check_mongodb_indexes(ctx: DoctorContext) -> Finding:
    """Every index `ensure_indexes()` declares exists with the same keys (missing ones named)."""
    with MongoCheck(ctx, "mongodb.indexes", "check MONGODB_URI") as check:
        db = check.db
        expected: dict[str, dict[str, Any]] = {}
        for coll, models in INDEXES.items():
            for model in models:
                expected[f"{coll}.{model.document['name']}"] = dict(model.document["key"])
        present: dict[str, dict[str, Any]] = {}
        for coll in [*INDEXES, INBOX_COLLECTION]:
            for info in collection(db, coll).list_indexes():
                present[f"{coll}.{info['name']}"] = dict(info["key"])
        missing = [n for n in expected if n not in present]
        missing += [f"{INBOX_COLLECTION}.{n}" for n in INBOX_INDEXES if f"{INBOX_COLLECTION}.{n}" not in present]
        differ = [n for n, keys in expected.items() if n in present and list(present[n].items()) != list(keys.items())]
        total = len(expected) + len(INBOX_INDEXES)
        if differ:
            return Finding(
                check.name,
                "fail",
                f"{len(differ)} index(es) with other keys: {', '.join(differ)}",
                "drop those indexes (an older schema); the next run recreates them (ensure_indexes refuses to)",
            )
        if missing:
            return Finding(
                check.name,
                "fail",
                f"{len(missing)} of {total} missing: {', '.join(missing)}",
                "start the code location (its first run or sensor tick creates every index), or run "
                "`socialrec backfill-queues` (creates the graph collections' indexes)",
            )
        return Finding(check.name, "ok", f"all {total} present")
    return check.failed


def check_retry_queue(ctx: DoctorContext) -> Finding:
    """The derived retry queue (`tokens.oldest_attempt`) exists for every token with a retryable URL."""
    action = "run `socialrec backfill-queues` (creates the indexes) and check MONGODB_URI"
    with MongoCheck(ctx, "mongodb.retry_queue", action) as check:
        stale = collection(check.db, TOKENS).count_documents(
            {"social_urls.status": {"$in": [s.value for s in RETRY_PARTITIONS]}, OLDEST_ATTEMPT: {"$exists": False}},
            hint="idx_tokens_social_url_status",
            limit=1000,
        )
        if stale:
            more = "+" if stale >= 1000 else ""
            return Finding(
                check.name,
                "warn",
                f"{stale}{more} token(s) with retryable URLs are not in the retry queue",
                "run `socialrec backfill-queues` once (written before the queue existed)",
            )
        return Finding(check.name, "ok", "up to date")
    return check.failed


# -- Redis and RabbitMQ ----------------------------------------------------------------------------


def check_redis(ctx: DoctorContext) -> Finding:
    """Reachable, and a token lock taken, read back and released (the recording's own lock code)."""
    name = "redis"
    try:
        client = ctx.resource("redis").client()
    except ConfigMissing as exc:
        return Finding(name, "fail", f"not configured: {exc}", "set REDIS_URL")
    try:
        client.ping()
        locks = TokenLocks(client, ttl_s=30, prefix=PROBE_PREFIX)
        owner, address = uuid.uuid4().hex, uuid.uuid4().hex
        if not locks.try_acquire(address, owner):
            return Finding(name, "fail", "a fresh lock key was refused", "check REDIS_URL points at a writable Redis")
        held = locks.owner_of(address) == owner
        released = locks.release(address, owner)
        if not (held and released):
            return Finding(name, "fail", "lock round trip broken (not read back or not released)", "check REDIS_URL")
        return Finding(name, "ok", "reachable, lock acquire/read/release round trip")
    except Exception as exc:
        return Finding(
            name, "fail", f"{type(exc).__name__}: {first_line(exc)}", "check REDIS_URL and that Redis is up"
        )
    finally:
        client.close()


def check_rabbitmq(ctx: DoctorContext) -> Finding:
    """Reachable, the exchange exists, the queue and its dead-letter queue are declared (depths)."""
    name = "rabbitmq"
    try:
        rabbit = ctx.resource("rabbitmq")
        queue = rabbit.queue
    except (ConfigMissing, ValueError) as exc:
        return Finding(name, "fail", f"not configured: {exc}", "set RABBITMQ_URL and SOCIALREC_ENV")
    try:
        connection = open_connection(rabbit.url)
    except Exception as exc:
        return Finding(
            name,
            "fail",
            f"unreachable ({type(exc).__name__}: {first_line(exc)})",
            "check RABBITMQ_URL and that RabbitMQ is up",
        )
    try:
        if _passive(connection, "exchange", rabbit.exchange) is None:
            return Finding(
                name,
                "fail",
                f"exchange {rabbit.exchange!r} does not exist: no token.flow event reaches us",
                "check RABBITMQ_EXCHANGE (the producer declares it), or start the token_flow_sensor (declares it)",
            )
        depths: dict[str, Any] = {}
        for q in (queue, dead_letter_queue(queue)):
            depths[q] = _passive(connection, "queue", q)
            if depths[q] is None:
                return Finding(
                    name,
                    "fail",
                    f"queue {q!r} is not declared: events published now are dropped",
                    "start the token_flow_sensor (scripts/run.sh); its first tick declares and binds the queue "
                    "and its dead-letter queue",
                )
        ready, dead = (depths[q].method.message_count for q in (queue, dead_letter_queue(queue)))
        consumers = depths[queue].method.consumer_count
        status: Status = "warn" if dead else "ok"
        return Finding(
            name,
            status,
            f"exchange {rabbit.exchange!r}; queue {queue!r} {ready} ready, {consumers} consumer(s); dead-letter {dead}",
            "inspect the dead letters (reason in header x-socialrec-reason)" if dead else "",
        )
    finally:
        with contextlib.suppress(Exception):
            connection.close()


def management_endpoint(amqp_url: str, override: str | None) -> tuple[str, tuple[str, str], str]:
    """(management API base URL, its credentials, the vhost) for the broker of `amqp_url`: the same
    user as AMQP, port 15672 on the same host unless RABBITMQ_MANAGEMENT_URL says otherwise."""
    parts = urlsplit(amqp_url)
    user, password = unquote(parts.username or "guest"), unquote(parts.password or "guest")
    vhost = unquote(parts.path[1:]) if len(parts.path) > 1 else "/"
    return override or f"http://{parts.hostname or 'localhost'}:15672", (user, password), vhost


def check_rabbitmq_binding(ctx: DoctorContext) -> Finding:
    """The queue is bound to the exchange with `token.flow` (AMQP cannot list bindings: the
    management API can; without one the row says it could not look)."""
    name = "rabbitmq.binding"
    try:
        rabbit = ctx.resource("rabbitmq")
        queue = rabbit.queue
    except (ConfigMissing, ValueError) as exc:
        return Finding(name, "fail", f"not configured: {exc}", "set RABBITMQ_URL and SOCIALREC_ENV")
    base, auth, vhost = management_endpoint(rabbit.url, rabbit.management_url)
    path = f"/api/exchanges/{quote(vhost, safe='')}/{quote(rabbit.exchange, safe='')}/bindings/source"
    try:
        with http_client(base, ctx.timeout_s) as http:
            response = send(http, "GET", path, auth=auth)
    except Exception:
        return Finding(
            name,
            "ok",
            f"not verified: no management API at {base} (the token_flow_sensor re-binds the queue at every tick)",
            "set RABBITMQ_MANAGEMENT_URL to let the doctor see the binding",
        )
    if response.status_code == 404:
        return Finding(name, "fail", f"exchange {rabbit.exchange!r} does not exist", "check RABBITMQ_EXCHANGE")
    if response.status_code != 200:
        return Finding(
            name,
            "ok",
            f"not verified: the management API answered HTTP {response.status_code}",
            "give the RABBITMQ_URL user the management tag, or set RABBITMQ_MANAGEMENT_URL",
        )
    body = json_or_none(response)
    bindings = body if isinstance(body, list) else []
    bound = any(
        isinstance(b, dict)
        and b.get("destination") == queue
        and b.get("destination_type") == "queue"
        and b.get("routing_key") == ROUTING_KEY
        for b in bindings
    )
    if not bound:
        return Finding(
            name,
            "fail",
            f"queue {queue!r} is not bound to {rabbit.exchange!r} with {ROUTING_KEY!r}: events "
            "published now are dropped",
            "start the token_flow_sensor (each tick declares and binds the queue)",
        )
    return Finding(name, "ok", f"queue {queue!r} bound to {rabbit.exchange!r} with {ROUTING_KEY!r}")


def _passive(connection: Any, kind: Literal["exchange", "queue"], name: str) -> Any | None:
    """The broker's answer to a passive declaration (nothing is created), None when `name` does not exist."""
    channel = connection.channel()
    try:
        if kind == "exchange":
            answer = channel.exchange_declare(name, EXCHANGE_TYPE, passive=True)
        else:
            answer = channel.queue_declare(name, passive=True)
    except ChannelClosedByBroker as exc:
        if exc.reply_code == 404:
            return None
        raise
    with contextlib.suppress(Exception):
        channel.close()
    return answer
