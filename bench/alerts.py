"""Alerts delivered: the four events an operator must hear about reach a webhook receiver.

Run: `.venv/bin/python bench/alerts.py [--self-test]` (Redis from REDIS_URL, MongoDB from MONGODB_URI
or an embedded server). Events, each on a fresh ephemeral Dagster instance and database:
- failed_run:   a run fails → `alert_on_run_failure` posts job, token, step, message and link;
- check_warn:   a check turns WARN → `alert_on_check_and_stuck_token` posts it;
- token_gave_up: an inbox entry is `stuck` → the same sensor posts it;
- keeping_up_red: the real `recording_health` asset is materialized while the inbox holds work and
  no token was ever recorded → its `keeping_up` check fails (ERROR) → the sensor posts it.
Prints one row per event and `alerts_delivered: N/N`; exits 1 unless every event was delivered.

`--self-test` runs the same events against a receiver that answers 503 to every post (the breach:
an alert that does not reach anyone) and exits 0 only when every row reports it as not delivered;
its last line is `bench_self_test: N/N rows detect their breach`.
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dagster as dg  # noqa: E402
import redis as redis_lib  # noqa: E402

from socialrec_pipeline.defs.alerts import alert_on_check_and_stuck_token, alert_on_run_failure  # noqa: E402
from socialrec_pipeline.defs.health import recording_health  # noqa: E402
from socialrec_pipeline.defs.resources import (  # noqa: E402
    MongoResource,
    RabbitMQResource,
    RecordingSettingsResource,
    RedisResource,
)
from socialrec_pipeline.defs.tags import TOKEN_TAG  # noqa: E402
from socialrec_pipeline.recording.alerts import WEBHOOK_ENV, AlertSender, AlertSettings  # noqa: E402
from socialrec_pipeline.sandbox.fixture_server import FixtureServer, Reply, Request  # noqa: E402
from socialrec_pipeline.store.client import open_client  # noqa: E402
from socialrec_pipeline.store.embedded import configured_or_embedded_mongo  # noqa: E402
from socialrec_pipeline.stream.inbox import COLLECTION as INBOX  # noqa: E402
from socialrec_pipeline.stream.inbox import PENDING, STUCK

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")


class Bench:
    def __init__(self, mongo_uri: str, accepted: list[str]) -> None:
        self.mongo_uri = mongo_uri
        #: Texts the receiver accepted (answered 2xx): what a person would have read.
        self.accepted = accepted
        self.redis = redis_lib.Redis.from_url(REDIS_URL)
        self.subjects: list[str] = []
        self.databases: list[str] = []

    def delivered(self, needle: str) -> bool:
        return any(needle in text for text in self.accepted)

    def resources(self) -> dict:
        database = f"bench_alerts_{uuid.uuid4().hex[:10]}"
        self.databases.append(database)
        return {
            "redis": RedisResource(url=REDIS_URL),
            "mongo": MongoResource(uri=self.mongo_uri, database=database),
        }

    def evaluate(self, defs: dg.Definitions, instance: dg.DagsterInstance, resources: dict) -> None:
        context = dg.build_sensor_context(
            instance=instance, repository_def=defs.get_repository_def(), resources=resources
        )
        alert_on_check_and_stuck_token(context)

    # -- the events -----------------------------------------------------------------------------
    def failed_run(self) -> bool:
        token = f"BenchToken{uuid.uuid4().hex[:20]}"

        @dg.op(name="explode")
        def explode() -> None:
            raise RuntimeError("upstream answered 500")

        @dg.job(name="bench_failing_job")
        def failing() -> None:
            explode()

        self.subjects.append(f"run-failed:bench_failing_job:{token}")
        with dg.DagsterInstance.ephemeral() as instance:
            result = failing.execute_in_process(instance=instance, raise_on_error=False, tags={TOKEN_TAG: token})
            failure = next(e for e in result.all_events if e.event_type == dg.DagsterEventType.RUN_FAILURE)
            context = dg.build_run_status_sensor_context(
                sensor_name="alert_on_run_failure",
                dagster_instance=instance,
                dagster_run=instance.get_run_by_id(result.run_id),
                dagster_event=failure,
                resources={"redis": RedisResource(url=REDIS_URL)},
            ).for_run_failure()
            alert_on_run_failure(context)
        return self.delivered(token)

    def check_warn(self) -> bool:
        name = f"bench_probe_{uuid.uuid4().hex[:8]}"

        @dg.asset(name=name)
        def probe() -> None:
            return None

        @dg.asset_check(asset=probe, name="rows_agree")
        def rows_agree() -> dg.AssetCheckResult:
            return dg.AssetCheckResult(passed=False, severity=dg.AssetCheckSeverity.WARN, description="3 rows disagree")

        defs = dg.Definitions(assets=[probe], asset_checks=[rows_agree], sensors=[alert_on_check_and_stuck_token])
        self.subjects.append(f"check:{name}:rows_agree")
        with dg.DagsterInstance.ephemeral() as instance:
            defs.resolve_implicit_global_asset_job_def().execute_in_process(instance=instance, raise_on_error=False)
            self.evaluate(defs, instance, self.resources())
        return self.delivered(name)

    def token_gave_up(self) -> bool:
        address = f"BenchStuck{uuid.uuid4().hex[:20]}"
        resources = self.resources()
        resources["mongo"].db()[INBOX].insert_one(
            {
                "token_address": address,
                "state": STUCK,
                "generation": 6,
                "failures": 6,
                "last_failed_run_id": "bench-run",
                "check_at": datetime.now(UTC),
            }
        )
        self.subjects.append(f"stuck:{address}:bench-run")
        with dg.DagsterInstance.ephemeral() as instance:
            self.evaluate(dg.Definitions(sensors=[alert_on_check_and_stuck_token]), instance, resources)
        return self.delivered(address)

    def keeping_up_red(self) -> bool:
        resources = self.resources()
        # Work waits (an open inbox entry) and no token was ever recorded: keeping_up must fail.
        resources["mongo"].db()[INBOX].insert_one(
            {"token_address": f"BenchWaiting{uuid.uuid4().hex[:20]}", "state": PENDING, "generation": 0}
        )
        resources["rabbitmq"] = RabbitMQResource(env=f"bench-alerts-{uuid.uuid4().hex[:8]}")
        resources["recording"] = RecordingSettingsResource()
        defs = dg.Definitions(assets=[recording_health], sensors=[alert_on_check_and_stuck_token], resources=resources)
        self.subjects.append("check:recording_health:keeping_up")
        with dg.DagsterInstance.ephemeral() as instance:
            dg.materialize([recording_health], instance=instance, resources=resources, raise_on_error=False)
            self.evaluate(defs, instance, resources)
        return self.delivered("`keeping_up`")

    def close(self) -> None:
        forget = AlertSender(AlertSettings(None, ""), self.redis)
        for subject in self.subjects:
            self.redis.delete(forget.throttle_key(subject))
        client = open_client(self.mongo_uri)
        for database in self.databases:
            client.drop_database(database)
        client.close()
        self.redis.close()


EVENTS: dict[str, Callable[[Bench], bool]] = {
    "failed_run": Bench.failed_run,
    "check_warn": Bench.check_warn,
    "token_gave_up": Bench.token_gave_up,
    "keeping_up_red": Bench.keeping_up_red,
}


def run(self_test: bool) -> int:
    with configured_or_embedded_mongo(os.environ.get("MONGODB_URI")) as mongo_uri, FixtureServer() as receiver:
        accepted: list[str] = []

        def hook(request: Request) -> Reply:
            # The breach on purpose: a webhook that refuses every post. Nothing may count as delivered.
            if self_test:
                return Reply.json({"error": "down"}, status=503)
            accepted.append(request.json()["text"])
            return Reply.json({"ok": True})

        receiver.route("POST", "/hook", hook)
        os.environ[WEBHOOK_ENV] = f"{receiver.url}/hook"
        bench = Bench(mongo_uri, accepted)
        results: dict[str, bool] = {}
        try:
            for name, event in EVENTS.items():
                results[name] = event(bench)
                print(f"{name:<16} {'delivered' if results[name] else 'NOT delivered'}")
        finally:
            bench.close()
    delivered = sum(results.values())
    if self_test:
        detected = sum(not ok for ok in results.values())
        print(f"bench_self_test: {detected}/{len(results)} rows detect their breach")
        return 0 if detected == len(results) else 1
    print(f"alerts_delivered: {delivered}/{len(results)}")
    return 0 if delivered == len(results) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--self-test", action="store_true", help="webhook refuses every post: each row must see it")
    return run(parser.parse_args().self_test)


if __name__ == "__main__":
    raise SystemExit(main())
