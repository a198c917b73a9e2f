"""`socialrec doctor`: every dependency of a deployment checked for real, one row per check.

Each check is one function `(DoctorContext) -> Finding`: `ok`, `warn` (records, but something is
missing or degraded) or `fail` (runs will fail or record nothing). `run_checks` runs them in
parallel threads, each bounded by its own timeout, and never raises: a check that crashes or hangs
is a `fail` row saying so.

Configuration is read only through the code location's own readers: the resource map of
`bound_resources_from_env()` (every endpoint and key, with their defaults) and the recording settings of
`RecordingSettingsResource` (the strict `SOCIALREC_*` parser). So the doctor sees exactly what a
run would see. Secret values never reach a row: keys show as "set"/"unset", and every known secret
is masked in the text of a finding (an error message quoting a URL, say).

Calls made, each the cheapest the contracts allow (docs/doctor.md):
- SolTracker: `GET /api/v1/tokens/{address}` for one well-known mint (a 404 still proves the key).
- GitHub (with a token): `GET /users/{login}`; urlscan (with a key): one domain search. The
  contract documents no GitHub `/rate_limit` nor urlscan quota endpoint, so the doctor uses these
  documented free calls instead.
- Apify: no call (the contract documents no free Apify call; every actor run is billed). X: no
  call (every twitterapi.io call is billed). YouTube: one `channels` call, only with `spend_quota`.
- Telegram and Reddit: one public page.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import quote, unquote, urlsplit

import dagster as dg
from pika.exceptions import ChannelClosedByBroker

from socialrec_pipeline.defs.paid_pool import PAID_POOL
from socialrec_pipeline.defs.resources import RecordingSettingsResource, bound_resources_from_env, paid_account_scope
from socialrec_pipeline.domain.enums import RETRY_PARTITIONS
from socialrec_pipeline.domain.errors import ProviderKeyRejected, ProviderQuotaExceeded, TargetBlocked, TargetNotFound
from socialrec_pipeline.providers.http import build_client, json_or_none, send
from socialrec_pipeline.recording.locks import PaidCreditGuard, TokenLocks
from socialrec_pipeline.recording.settings import RecordingSettings, SettingError
from socialrec_pipeline.recording.soltracker import UpstreamConfigError, UpstreamUnavailable
from socialrec_pipeline.store.client import open_client, open_database
from socialrec_pipeline.store.collections import TOKENS, collection
from socialrec_pipeline.store.indexes import INDEXES
from socialrec_pipeline.store.tokens import OLDEST_ATTEMPT
from socialrec_pipeline.stream.broker import EXCHANGE_TYPE, ROUTING_KEY, dead_letter_queue, open_connection
from socialrec_pipeline.stream.inbox import COLLECTION as INBOX_COLLECTION

Status = Literal["ok", "warn", "fail"]
STATUSES: tuple[Status, ...] = ("ok", "warn", "fail")

#: Seconds each check may take before its row says it timed out.
DEFAULT_TIMEOUT_S = 10.0
#: The daemon beats every ~20 s; older than this and it is considered stopped.
HEARTBEAT_FRESH_S = 120.0
#: The daemons the code location needs: the sensor and the schedules.
REQUIRED_DAEMONS = ("SENSOR", "SCHEDULER", "QUEUED_RUN_COORDINATOR")
#: A mint every SolTracker deployment may or may not know (wrapped SOL): 200 and 404 both prove the key.
PROBE_ADDRESS = "So11111111111111111111111111111111111111112"
#: A GitHub login that exists; the answer's status is all the doctor reads.
PROBE_GITHUB_LOGIN = "github"
#: A YouTube channel id (YouTube's own); one `channels` call costs 1 quota unit.
PROBE_YOUTUBE_CHANNEL = "UCBR8-60-B28hp2BmDPdntcQ"
PROBE_DOMAIN = "example.com"
#: Index names RecordInbox.ensure_indexes creates (stream/inbox.py).
INBOX_INDEXES = ("uniq_inbox_token_address", "idx_inbox_state", "idx_inbox_check_at")
#: The doctor's own keys and documents; nothing of the product is touched.
PROBE_PREFIX = "socialrec-doctor:"
PROBE_COLLECTION = "_socialrec_doctor"


@dataclass(frozen=True)
class Finding:
    """One row: the check's name, its verdict, what was found and what to do about it."""

    check: str
    status: Status
    finding: str
    action: str = ""

    def masked(self, secrets: Sequence[str]) -> Finding:
        text, todo = self.finding, self.action
        for secret in secrets:
            if secret and len(secret) >= 4:
                text, todo = text.replace(secret, "***"), todo.replace(secret, "***")
        return Finding(self.check, self.status, text, todo)


class ConfigMissing(Exception):
    """A resource could not be built from the environment (a required variable unset)."""


@dataclass
class DoctorContext:
    """What the checks read. `resources` is the code location's resource map (bound_resources_from_env()
    by default); `instance` opens the Dagster instance (DagsterInstance.get by default)."""

    resources: Mapping[str, Any] = field(default_factory=bound_resources_from_env)
    instance: Callable[[], dg.DagsterInstance] | None = dg.DagsterInstance.get
    definitions: Callable[[], dg.Definitions] | None = None
    spend_quota: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_S
    heartbeat_fresh_s: float = HEARTBEAT_FRESH_S
    _built: dict[str, Any] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def resource(self, name: str) -> Any:
        """The resource `name` with its `EnvVar`s resolved, as a run would get it."""
        with self._lock:
            if name not in self._built:
                try:
                    with dg.build_resources({name: self.resources[name]}) as built:
                        self._built[name] = getattr(built, name)
                except Exception as exc:  # an unset required variable, a malformed value
                    self._built[name] = ConfigMissing(_config_error(exc))
            value = self._built[name]
        if isinstance(value, ConfigMissing):
            raise value
        return value

    def dagster_instance(self) -> dg.DagsterInstance:
        with self._lock:
            if "__instance__" not in self._built:
                try:
                    if self.instance is None:
                        raise ConfigMissing("no Dagster instance")
                    self._built["__instance__"] = self.instance()
                except Exception as exc:
                    self._built["__instance__"] = exc
            value = self._built["__instance__"]
        if isinstance(value, Exception):
            raise value
        return value

    def secrets(self) -> list[str]:
        """Every secret value the resources hold (masked in every row)."""
        found: list[str] = []
        for name in ("mongo", "soltracker", "generators", "redis", "rabbitmq"):
            with contextlib.suppress(Exception):
                found += _secret_values(self.resource(name))
        return found

    def settings(self) -> RecordingSettings:
        recording = self.resources.get("recording") or RecordingSettingsResource.from_environment()
        return recording.settings()


def _config_error(exc: Exception) -> str:
    text = str(exc)
    unset = re.search(r'environment variable "([A-Za-z_][A-Za-z0-9_]*)" which is not set', text)
    if unset:
        return f"{unset.group(1)} is unset"
    return _first_line(exc)


def _secret_values(resource: Any) -> list[str]:
    values: list[str] = []
    for name, value in vars(resource).items() if hasattr(resource, "__dict__") else ():
        if isinstance(value, str) and name in ("api_key", "token", "client_secret"):
            values.append(value)
        elif isinstance(value, str) and name in ("uri", "url"):
            password = urlsplit(value).password
            if password:
                values.append(password)
        elif isinstance(value, dg.ConfigurableResource):
            values += _secret_values(value)
    return values


def _set(value: Any) -> str:
    return "set" if value else "unset"


@contextlib.contextmanager
def _http(base_url: str, timeout_s: float, **kw: Any) -> Iterator[Any]:
    client = build_client(base_url, timeout=min(timeout_s, 5.0), **kw)
    try:
        yield client
    finally:
        client.close()


# -- MongoDB -------------------------------------------------------------------------------------


def _mongo(ctx: DoctorContext) -> Any:
    mongo = ctx.resource("mongo")
    client = open_client(mongo.uri, timeout_ms=int(min(ctx.timeout_s, 5.0) * 1000))
    return client, open_database(client, mongo.database)


def check_mongodb(ctx: DoctorContext) -> Finding:
    """Reachable, and a document written and deleted with the database's write concern."""
    name = "mongodb"
    try:
        client, db = _mongo(ctx)
    except ConfigMissing as exc:
        return Finding(name, "fail", f"not configured: {exc}", "set MONGODB_URI (and MONGODB_DATABASE)")
    try:
        db.command("ping")
        probe = collection(db, PROBE_COLLECTION)
        doc_id = f"{PROBE_PREFIX}{uuid.uuid4().hex}"
        probe.insert_one({"_id": doc_id, "at": datetime.now(UTC)})
        probe.delete_one({"_id": doc_id})
        concern = db.write_concern.document or {"w": "server default"}
        return Finding(name, "ok", f"reachable, database {db.name!r} writable (write concern {concern})")
    except Exception as exc:
        return Finding(
            name,
            "fail",
            f"{type(exc).__name__}: {_first_line(exc)}",
            "check MONGODB_URI and that the server is up (scripts/run.sh starts a local one when it is unset)",
        )
    finally:
        client.close()


def check_mongodb_indexes(ctx: DoctorContext) -> Finding:
    """Every index `ensure_indexes()` declares exists with the same keys (missing ones named)."""
    name = "mongodb.indexes"
    try:
        client, db = _mongo(ctx)
    except ConfigMissing as exc:
        return Finding(name, "fail", f"not checked: {exc}", "set MONGODB_URI")
    try:
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
                name,
                "fail",
                f"{len(differ)} index(es) with other keys: {', '.join(differ)}",
                "drop those indexes (an older schema); the next run recreates them (ensure_indexes refuses to)",
            )
        if missing:
            return Finding(
                name,
                "fail",
                f"{len(missing)} of {total} missing: {', '.join(missing)}",
                "start the code location (its first run or sensor tick creates every index), or run "
                "`socialrec backfill-queues` (creates the graph collections' indexes)",
            )
        return Finding(name, "ok", f"all {total} present")
    except Exception as exc:
        return Finding(name, "fail", f"{type(exc).__name__}: {_first_line(exc)}", "check MONGODB_URI")
    finally:
        client.close()


def check_retry_queue(ctx: DoctorContext) -> Finding:
    """The derived retry queue (`tokens.oldest_attempt`) exists for every token with a retryable URL."""
    name = "mongodb.retry_queue"
    try:
        client, db = _mongo(ctx)
    except ConfigMissing as exc:
        return Finding(name, "fail", f"not checked: {exc}", "set MONGODB_URI")
    try:
        stale = collection(db, TOKENS).count_documents(
            {"social_urls.status": {"$in": [s.value for s in RETRY_PARTITIONS]}, OLDEST_ATTEMPT: {"$exists": False}},
            hint="idx_tokens_social_url_status",
            limit=1000,
        )
        if stale:
            more = "+" if stale >= 1000 else ""
            return Finding(
                name,
                "warn",
                f"{stale}{more} token(s) with retryable URLs are not in the retry queue",
                "run `socialrec backfill-queues` once (written before the queue existed)",
            )
        return Finding(name, "ok", "up to date")
    except Exception as exc:
        return Finding(
            name,
            "fail",
            f"{type(exc).__name__}: {_first_line(exc)}",
            "run `socialrec backfill-queues` (creates the indexes) and check MONGODB_URI",
        )
    finally:
        client.close()


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
            name, "fail", f"{type(exc).__name__}: {_first_line(exc)}", "check REDIS_URL and that Redis is up"
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
            f"unreachable ({type(exc).__name__}: {_first_line(exc)})",
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
        with _http(base, ctx.timeout_s) as http:
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


# -- upstream and providers ------------------------------------------------------------------------


def check_soltracker(ctx: DoctorContext) -> Finding:
    """The base URL answers and the key is accepted (one token lookup: the cheapest call)."""
    name = "soltracker"
    try:
        resource = ctx.resource("soltracker")
    except ConfigMissing as exc:
        return Finding(name, "fail", f"not configured: {exc}", "set SOL_TRACKER_BASE_URL and SOL_TRACKER_API_KEY")
    key = f"key {_set(resource.api_key)}"
    try:
        with resource.client() as client:
            client.get_token(PROBE_ADDRESS)
    except UpstreamConfigError as exc:
        refused = "refused" in str(exc)
        return Finding(
            name,
            "fail",
            f"{key}; key refused" if refused else f"{key}; {_first_line(exc)}",
            "set SOL_TRACKER_API_KEY to a valid key" if refused else "check SOL_TRACKER_BASE_URL",
        )
    except UpstreamUnavailable as exc:
        return Finding(name, "fail", f"{key}; unreachable ({_first_line(exc)})", "check SOL_TRACKER_BASE_URL")
    except Exception as exc:
        return Finding(name, "warn", f"{key}; unexpected answer ({_first_line(exc)})", "check SOL_TRACKER_BASE_URL")
    return Finding(name, "ok", f"{key}; reachable, key accepted (GET /api/v1/tokens/{{address}})")


def _generators(ctx: DoctorContext) -> Any:
    return ctx.resource("generators")


def check_x(ctx: DoctorContext) -> Finding:
    name = "provider.x"
    x = _generators(ctx).x
    if not x.api_key:
        return Finding(
            name,
            "warn",
            "key unset: X URLs are recorded `unsupported` (retried once a key is set)",
            "set TWITTERAPI_API_KEY",
        )
    return Finding(name, "ok", "key set; not verified (every twitterapi.io call is billed)")


def check_github(ctx: DoctorContext) -> Finding:
    name = "provider.github"
    gh = _generators(ctx).github
    if not gh.token:
        return Finding(
            name,
            "warn",
            "token unset: unauthenticated, 60 requests/hour (GitHub URLs fail with `error` past it)",
            "set GITHUB_TOKEN",
        )
    headers = {"Accept": "application/vnd.github+json", "Authorization": f"Bearer {gh.token}"}
    try:
        with _http(gh.base_url, ctx.timeout_s, headers=headers) as http:
            response = send(http, "GET", f"/users/{PROBE_GITHUB_LOGIN}")
    except Exception as exc:
        return Finding(name, "warn", f"token set; unreachable ({_first_line(exc)})", "check GITHUB_API_BASE_URL")
    remaining = response.headers.get("x-ratelimit-remaining")
    if response.status_code == 401:
        return Finding(name, "fail", "token set; token refused (HTTP 401)", "set GITHUB_TOKEN to a valid token")
    if remaining == "0":
        return Finding(name, "warn", "token set; rate limit exhausted", "wait for the reset, or another GITHUB_TOKEN")
    if response.status_code >= 500 or response.status_code == 429:
        return Finding(name, "warn", f"token set; HTTP {response.status_code}", "check GITHUB_API_BASE_URL")
    rate = f", {remaining} requests left this hour" if remaining else ""
    return Finding(name, "ok", f"token set; accepted{rate}")


def check_youtube(ctx: DoctorContext) -> Finding:
    name = "provider.youtube"
    yt = _generators(ctx).youtube
    if not yt.api_key:
        return Finding(
            name,
            "warn",
            "key unset: YouTube URLs are recorded `unsupported` (retried once a key is set)",
            "set YOUTUBE_API_KEY",
        )
    if not ctx.spend_quota:
        return Finding(name, "ok", "key set; not verified (a call costs quota: `socialrec doctor --spend-quota`)")
    client = yt.client()
    try:
        client.channels(id=PROBE_YOUTUBE_CHANNEL)
    except ProviderKeyRejected:
        return Finding(name, "fail", "key set; key refused", "set YOUTUBE_API_KEY to a valid key")
    except ProviderQuotaExceeded:
        return Finding(name, "warn", "key set; daily quota exhausted", "wait for the quota reset (midnight Pacific)")
    except Exception as exc:
        return Finding(name, "warn", f"key set; {_first_line(exc)}", "check YOUTUBE_API_BASE_URL")
    finally:
        client.close()
    return Finding(name, "ok", "key set; accepted (1 quota unit spent)")


def check_telegram(ctx: DoctorContext) -> Finding:
    name = "provider.telegram"
    tg = _generators(ctx).telegram
    try:
        with _http(tg.base_url, ctx.timeout_s) as http:
            response = send(http, "GET", "/telegram")
    except Exception as exc:
        return Finding(
            name,
            "warn",
            f"public pages unreachable ({_first_line(exc)}): Telegram URLs are recorded `error`",
            "check TELEGRAM_BASE_URL and outbound HTTPS",
        )
    if response.status_code >= 500 or response.status_code == 429:
        return Finding(name, "warn", f"public pages answer HTTP {response.status_code}", "check TELEGRAM_BASE_URL")
    return Finding(name, "ok", "no key needed; public pages reachable")


def check_reddit(ctx: DoctorContext) -> Finding:
    name = "provider.reddit"
    rd = _generators(ctx).reddit
    credentials = f"client credentials {_set(rd.client_id and rd.client_secret)}"
    client = rd.client()
    try:
        client.get_json("/r/reddit/about.json")
    except (TargetNotFound, TargetBlocked):
        pass  # an answer about the page: the endpoint is reachable, and any credentials were taken
    except Exception as exc:
        message = _first_line(exc)
        if "token endpoint answered HTTP 401" in message:
            return Finding(
                name,
                "fail",
                f"{credentials}; credentials refused",
                "set REDDIT_CLIENT_ID and REDDIT_CLIENT_SECRET to a valid app's, or unset both (public JSON)",
            )
        return Finding(
            name,
            "warn",
            f"{credentials}; unreachable ({message}): Reddit URLs are recorded `error`",
            "check REDDIT_BASE_URL and outbound HTTPS",
        )
    finally:
        client.close()
    return Finding(name, "ok", f"{credentials}; {'OAuth API' if rd.client_id else 'public JSON'} reachable")


def check_apify(ctx: DoctorContext) -> Finding:
    name = "provider.apify"
    apify = _generators(ctx).apify
    try:
        paid = ctx.settings().enable_paid
    except SettingError:
        paid = False
    if not apify.token:
        if paid:
            return Finding(
                name,
                "warn",
                "token unset while SOCIALREC_ENABLE_PAID is on: TikTok/Instagram URLs are recorded `unsupported`",
                "set APIFY_TOKEN",
            )
        return Finding(name, "ok", "token unset; TikTok/Instagram are `skipped_paid` while the paid gate is off")
    guard = ""
    with contextlib.suppress(Exception):
        state = PaidCreditGuard(ctx.resource("redis").client(), scope=paid_account_scope(apify.base_url, apify.token))
        described = state.state()
        if described:
            return Finding(
                name,
                "warn",
                f"token set; paid credit guard {described.describe()}: no paid call runs",
                "top up the Apify account, then `socialrec paid-credit reset`",
            )
        guard = "; credit guard clear"
    return Finding(
        name,
        "ok",
        f"token set{guard}; not verified (the contract documents no free Apify call; every actor run is billed)",
    )


def check_urlscan(ctx: DoctorContext) -> Finding:
    name = "provider.urlscan"
    us = _generators(ctx).urlscan
    if not us.api_key:
        return Finding(name, "ok", "key unset; websites are recorded from the URL alone (enrichment is optional)")
    try:
        with _http(us.base_url, ctx.timeout_s, headers={"API-Key": us.api_key}) as http:
            response = send(http, "GET", "/api/v1/search/", params={"q": f"page.domain:{PROBE_DOMAIN}"})
    except Exception as exc:
        return Finding(name, "warn", f"key set; unreachable ({_first_line(exc)})", "check URLSCAN_BASE_URL")
    if response.status_code in (401, 403):
        return Finding(
            name, "fail", f"key set; key refused (HTTP {response.status_code})", "set URLSCAN_API_KEY to a valid key"
        )
    if response.status_code == 429:
        return Finding(name, "warn", "key set; search quota spent (HTTP 429)", "wait for urlscan's quota reset")
    if response.status_code != 200:
        return Finding(name, "warn", f"key set; HTTP {response.status_code}", "check URLSCAN_BASE_URL")
    return Finding(name, "ok", "key set; accepted (one domain search)")


# -- the Dagster instance --------------------------------------------------------------------------


def _instance(ctx: DoctorContext) -> dg.DagsterInstance:
    """One instance for every Dagster check (opened once: a fresh SQLite instance opened by four
    threads at once races on creating its storage)."""
    return ctx.dagster_instance()


def check_dagster_storage(ctx: DoctorContext) -> Finding:
    name = "dagster.storage"
    try:
        instance = _instance(ctx)
        kind = type(instance.run_storage).__name__
        runs = instance.get_run_records(limit=1)
    except Exception as exc:
        return Finding(
            name,
            "fail",
            f"{type(exc).__name__}: {_first_line(exc)}",
            "set DAGSTER_HOME to a directory holding dagster.yaml (scripts/run.sh does), and check its storage",
        )
    kind = "PostgreSQL" if "Postgres" in kind else "SQLite" if "Sqlite" in kind or "SqlRun" in kind else kind
    return Finding(name, "ok", f"{kind} storage reachable ({'has runs' if runs else 'no runs yet'})")


def check_dagster_daemon(ctx: DoctorContext) -> Finding:
    name = "dagster.daemon"
    try:
        instance = _instance(ctx)
        beats = instance.get_daemon_heartbeats()
        # The run-queue daemon only with the queued run coordinator (this project's dagster.yaml).
        daemons = [d for d in REQUIRED_DAEMONS if d in instance.get_required_daemon_types()]
    except Exception as exc:
        return Finding(name, "fail", f"not checked: {_first_line(exc)}", "set DAGSTER_HOME")
    now = time.time()
    stale = []
    for daemon in daemons:
        beat = beats.get(daemon)
        if beat is None:
            stale.append(f"{daemon} never beat")
        elif now - beat.timestamp > ctx.heartbeat_fresh_s:
            stale.append(f"{daemon} last beat {now - beat.timestamp:.0f} s ago")
    if stale:
        return Finding(
            name,
            "fail",
            "daemon not running: " + "; ".join(stale) + " (no sensor tick, schedule or queued run)",
            "start it: scripts/run.sh (dagster dev), or `dagster-daemon run` with this DAGSTER_HOME",
        )
    return Finding(name, "ok", f"heartbeats fresh ({', '.join(daemons)})")


def check_dagster_instigators(ctx: DoctorContext) -> Finding:
    """The sensor and every schedule of the code location running (stored state, else code default)."""
    name = "dagster.sensor_schedules"
    try:
        instance = _instance(ctx)
        states = {state.name: state.status for state in instance.all_instigator_state()}
        defs = ctx.definitions() if ctx.definitions else _code_location()
        declared = [
            *(("sensor", s.name, s.default_status == dg.DefaultSensorStatus.RUNNING) for s in defs.sensors or []),
            *(("schedule", s.name, s.default_status == dg.DefaultScheduleStatus.RUNNING) for s in defs.schedules or []),
        ]
    except Exception as exc:
        return Finding(name, "fail", f"not checked: {_first_line(exc)}", "set DAGSTER_HOME")
    stopped: list[tuple[str, str]] = []
    for kind, instigator, default_running in declared:
        status = states.get(instigator)
        running = default_running if status is None or status.value == "DECLARED_IN_CODE" else status.value == "RUNNING"
        if not running:
            stopped.append((kind, instigator))
    if stopped:
        # A stopped sensor records nothing (token_flow_sensor) or checks nothing; a schedule is catch-up work.
        return Finding(
            name,
            "fail" if any(kind == "sensor" for kind, _ in stopped) else "warn",
            "stopped: " + ", ".join(f"{kind} {n}" for kind, n in stopped),
            "turn them on in the UI (Automation) or `dagster sensor start` / `dagster schedule start`",
        )
    return Finding(name, "ok", f"{len(declared)} running")


def _code_location() -> dg.Definitions:
    from socialrec_pipeline.defs.definitions import defs

    return defs


def check_paid_pool(ctx: DoctorContext) -> Finding:
    name = "dagster.paid_pool"
    try:
        instance = _instance(ctx)
        info = instance.event_log_storage.get_concurrency_info(PAID_POOL)
        limit = info.limit
    except Exception as exc:
        return Finding(
            name,
            "warn",
            f"limit not readable ({_first_line(exc)})",
            "set concurrency.pools.default_limit in dagster.yaml (DAGSTER_HOME)",
        )
    if not limit:
        return Finding(
            name,
            "warn",
            f"pool {PAID_POOL!r} has no limit: paid calls are not capped",
            "set concurrency.pools.default_limit in $DAGSTER_HOME/dagster.yaml, or "
            f"`dagster instance concurrency set {PAID_POOL} 2`",
        )
    source = "concurrency.pools.default_limit" if info.using_default_limit else "set on the pool"
    return Finding(name, "ok", f"pool {PAID_POOL!r} limit {limit} ({source})")


# -- the gates -------------------------------------------------------------------------------------


def check_gates(ctx: DoctorContext) -> Finding:
    name = "gates"
    try:
        settings = ctx.settings()
    except SettingError as exc:
        return Finding(name, "fail", f"a setting would fail every run: {exc}".split(". Fix")[0], "fix that variable")
    paid = "on" if settings.enable_paid else "off"
    platforms = ",".join(sorted(p.value for p in settings.paid_platforms))
    return Finding(
        name,
        "ok",
        f"paid {paid} ({platforms}), community {'on' if settings.enable_community else 'off'}, AF threshold "
        f"{settings.af_threshold}; every SOCIALREC_* value valid",
        "" if settings.enable_paid else "SOCIALREC_ENABLE_PAID=true records TikTok/Instagram (billed)",
    )


CHECKS: tuple[Callable[[DoctorContext], Finding], ...] = (
    check_mongodb,
    check_mongodb_indexes,
    check_retry_queue,
    check_redis,
    check_rabbitmq,
    check_rabbitmq_binding,
    check_soltracker,
    check_x,
    check_github,
    check_youtube,
    check_telegram,
    check_reddit,
    check_apify,
    check_urlscan,
    check_dagster_storage,
    check_dagster_daemon,
    check_dagster_instigators,
    check_paid_pool,
    check_gates,
)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:300]


def _row_name(check: Callable[..., Finding]) -> str:
    return check.__name__.removeprefix("check_").replace("_", ".", 1) if check.__name__ else "?"


def run_checks(
    ctx: DoctorContext | None = None, checks: Sequence[Callable[[DoctorContext], Finding]] = CHECKS
) -> list[Finding]:
    """Every check in its own thread, each bounded by `ctx.timeout_s`; rows in `checks` order."""
    ctx = ctx or DoctorContext()
    results: list[Finding | None] = [None] * len(checks)

    def run(i: int, check: Callable[[DoctorContext], Finding]) -> None:
        try:
            results[i] = check(ctx)
        except Exception as exc:
            results[i] = Finding(_row_name(check), "fail", f"check crashed: {type(exc).__name__}: {_first_line(exc)}")

    threads = [threading.Thread(target=run, args=(i, c), daemon=True, name=f"doctor-{i}") for i, c in enumerate(checks)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + ctx.timeout_s
    for thread in threads:
        thread.join(max(deadline - time.monotonic(), 0))
    secrets = ctx.secrets()
    rows = []
    for check, result in zip(checks, results, strict=True):
        if result is None:
            result = Finding(_row_name(check), "fail", f"timed out after {ctx.timeout_s:.0f} s")
        rows.append(result.masked(secrets))
    return rows


# -- verdict and rendering -------------------------------------------------------------------------


def exit_code(rows: Sequence[Finding]) -> int:
    """0 when nothing fails, 1 on a failure."""
    return 1 if any(r.status == "fail" for r in rows) else 0


def first_blocker(rows: Sequence[Finding]) -> Finding | None:
    """The first failing row, else the first warning, else None."""
    for status in ("fail", "warn"):
        for row in rows:
            if row.status == status:
                return row
    return None


def headline(rows: Sequence[Finding]) -> str:
    """One line: `down: soltracker — key refused, set SOL_TRACKER_API_KEY to a valid key`."""
    counts = {s: sum(r.status == s for r in rows) for s in STATUSES}
    blocker = first_blocker(rows)
    tally = f"{counts['ok']} ok, {counts['warn']} warn, {counts['fail']} fail"
    if blocker is None:
        return f"ready: {tally}"
    verdict = "down" if blocker.status == "fail" else "degraded"
    todo = f", {blocker.action}" if blocker.action else ""
    return f"{verdict}: {blocker.check} — {blocker.finding}{todo} ({tally})"


def render_table(rows: Sequence[Finding], *, problems_only: bool = False) -> str:
    """The table (one row per check, then the one-line verdict); `problems_only` leaves ok rows out."""
    shown = [r for r in rows if r.status != "ok"] if problems_only else list(rows)
    widths = (max((len(r.check) for r in rows), default=5), 4)
    lines = [f"{'check':<{widths[0]}}  {'':<{widths[1]}}  finding (→ what to do)"] if shown else []
    for r in shown:
        lines.append(f"{r.check:<{widths[0]}}  {r.status:<{widths[1]}}  {r.finding}")
        if r.action and r.status != "ok":
            lines.append(f"{'':<{widths[0]}}  {'':<{widths[1]}}  → {r.action}")
    if shown:
        lines.append("")
    lines.append(headline(rows))
    return "\n".join(lines)


def render_json(rows: Sequence[Finding]) -> str:
    return json.dumps(
        {"exit_code": exit_code(rows), "headline": headline(rows), "checks": [asdict(r) for r in rows]}, indent=2
    )
