"""A stopped sandbox leaves nothing on the shared broker: `socialrec sandbox release` (run.sh's stop)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pika
import pytest
from pika.exceptions import ChannelClosedByBroker

from socialrec_pipeline.sandbox.demo import release, sandbox_exchange
from socialrec_pipeline.stream.broker import (
    EXCHANGE,
    EXCHANGE_TYPE,
    ROUTING_KEY,
    dead_letter_queue,
    declare_topology,
    open_connection,
    queue_name_for,
    release_unused,
)

ROOT = Path(__file__).resolve().parents[2]


def _exists(url: str, kind: str, name: str) -> bool:
    connection = open_connection(url)
    try:
        channel = connection.channel()
        try:
            if kind == "queue":
                channel.queue_declare(name, passive=True)
            else:
                channel.exchange_declare(name, passive=True)
        except ChannelClosedByBroker as exc:
            assert exc.reply_code == 404
            return False
        return True
    finally:
        connection.close()


@pytest.fixture
def producers_exchange(rabbitmq_url) -> str:
    """The producer's exchange as the producer declares it: on a fresh broker nothing else has yet,
    and "never touched" means nothing unless it is there to be touched."""
    connection = open_connection(rabbitmq_url)
    try:
        connection.channel().exchange_declare(EXCHANGE, exchange_type=EXCHANGE_TYPE, durable=True)
    finally:
        connection.close()
    return EXCHANGE


def _sandbox_on_the_broker(url: str, env: str, run_queue: str) -> pika.BlockingConnection:
    """What a sandbox declares: its token.flow queue pair on its own exchange, and a Celery run queue
    with the same-named direct exchange Celery creates for it."""
    connection = open_connection(url)
    channel = declare_topology(connection, queue_name_for(env), sandbox_exchange(env))
    channel.exchange_declare(run_queue, exchange_type="direct", durable=True)
    channel.queue_declare(run_queue, durable=True)
    channel.queue_bind(run_queue, run_queue, routing_key=run_queue)
    return connection


def test_release_removes_every_object_of_a_stopped_sandbox(rabbitmq_url, unique_suffix, producers_exchange):
    env, run_queue = f"sandbox-t{unique_suffix}", f"socialrec-runs-sandbox-t{unique_suffix}"
    _sandbox_on_the_broker(rabbitmq_url, env, run_queue).close()
    out = io.StringIO()
    assert release(out, rabbitmq_url=rabbitmq_url, env=env, run_queue=run_queue) == 0
    queue = queue_name_for(env)
    for kind, name in [("queue", queue), ("queue", dead_letter_queue(queue)), ("queue", run_queue),
                       ("exchange", sandbox_exchange(env)), ("exchange", run_queue)]:  # fmt: skip
        assert not _exists(rabbitmq_url, kind, name), (kind, name)
    assert "removed 5 broker object(s)" in out.getvalue()
    assert _exists(rabbitmq_url, "exchange", producers_exchange)  # the producer's is never touched


def test_a_queue_holding_a_message_or_a_consumer_is_kept_with_its_exchange(rabbitmq_url, unique_suffix):
    env, run_queue = f"sandbox-t{unique_suffix}", f"socialrec-runs-sandbox-t{unique_suffix}"
    connection = _sandbox_on_the_broker(rabbitmq_url, env, run_queue)
    queue = queue_name_for(env)
    try:
        channel = connection.channel()
        channel.basic_publish(sandbox_exchange(env), ROUTING_KEY, b'{"not": "consumed yet"}')
        channel.basic_consume(run_queue, lambda *a: None)  # a run worker still attached
        deleted = release_unused(rabbitmq_url, [queue, dead_letter_queue(queue), run_queue],
                                 [sandbox_exchange(env), run_queue])  # fmt: skip
        assert deleted == [dead_letter_queue(queue)]  # bound exchanges stay with their queues
        assert channel.queue_declare(queue, passive=True).method.message_count == 1  # nothing dropped
    finally:
        cleanup = connection.channel()
        for name in (queue, run_queue):
            cleanup.queue_delete(name)
        for name in (sandbox_exchange(env), run_queue):
            cleanup.exchange_delete(name)
        connection.close()


def test_only_a_sandbox_is_released_and_never_the_producers_exchange(rabbitmq_url, producers_exchange):
    with pytest.raises(SystemExit, match="not a sandbox"):
        release(io.StringIO(), rabbitmq_url=rabbitmq_url, env="prod")
    with pytest.raises(ValueError, match="producer"):
        release_unused(rabbitmq_url, [], [producers_exchange])
    assert _exists(rabbitmq_url, "exchange", producers_exchange)


def test_the_cli_releases_the_sandbox_of_its_env_file_and_run_sh_calls_it(rabbitmq_url, unique_suffix, tmp_path):
    env, run_queue = f"sandbox-t{unique_suffix}", f"socialrec-runs-sandbox-t{unique_suffix}"
    _sandbox_on_the_broker(rabbitmq_url, env, run_queue).close()
    env_file = tmp_path / "sandbox.env"
    env_file.write_text(f"export SOCIALREC_ENV={env}\nexport RABBITMQ_EXCHANGE={sandbox_exchange(env)}\n")
    cli = Path(sys.executable).with_name("socialrec")
    done = subprocess.run(
        [str(cli), "sandbox", "release", "--env-file", str(env_file), "--rabbitmq-url", rabbitmq_url],
        env={**os.environ, "SOCIALREC_CELERY_RUN_QUEUE": run_queue}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "removed 5 broker object(s)" in done.stdout
    assert not _exists(rabbitmq_url, "queue", run_queue)
    assert "socialrec\" sandbox release" in (ROOT / "scripts" / "run.sh").read_text()
