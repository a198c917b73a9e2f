#!/usr/bin/env bash
# Browser check of the operator path: starts the sandbox (scripts/run.sh --sandbox) on ports and
# storage of its own, publishes demo events, runs a reconcile hour, the integrity checks and
# recording_health, then drives the Dagster UI in headless Chromium (scripts/ui_check.py) and
# asserts on what a person sees. Screenshots: .local/ui-check/*.png. Stops everything it started.
#
#   scripts/ui_check.sh        # UI_CHECK_PORT_BASE=N picks the ports (N..N+29), default: a free range
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/bootstrap.sh

# The browser: Debian's chromium, driven by the Python playwright package of the `ui` extra (bootstrap
# installs it from the lock; never `playwright install`).
if [ ! -x /usr/bin/chromium ]; then
  echo "==> installing Debian chromium"
  apt-get install -y -qq chromium >/dev/null 2>&1 || { apt-get update -qq >/dev/null && apt-get install -y -qq chromium >/dev/null; }
fi

OUT="$ROOT/.local/ui-check"
rm -rf "$OUT"
mkdir -p "$OUT/logs"

if [ -z "${UI_CHECK_PORT_BASE:-}" ]; then
  UI_CHECK_PORT_BASE="$(.venv/bin/python - <<'PY'
import random, socket
for _ in range(200):
    base = random.randint(31000, 59000)
    socks = []
    try:
        for port in range(base, base + 30):
            s = socket.socket(); socks.append(s); s.bind(("127.0.0.1", port))
        print(base); break
    except OSError:
        pass
    finally:
        for s in socks: s.close()
PY
)"
fi
UI_PORT="$UI_CHECK_PORT_BASE"

RUN_PID=""
stop_all() {
  [ -n "$RUN_PID" ] || return 0
  # run.sh stops its children (each in a process group of its own) on TERM; its own group is ours.
  kill -TERM "$RUN_PID" 2>/dev/null || true
  # On 2 loaded cores Dagster can take more than 15 s to stop; killing run.sh before it is done
  # leaves its children (each in a group of its own) running: give it up to 2 minutes.
  for _ in $(seq 1 600); do kill -0 "$RUN_PID" 2>/dev/null || break; sleep 0.2; done
  kill -KILL -- "-$RUN_PID" 2>/dev/null || true
  RUN_PID=""
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "==> starting the sandbox on 127.0.0.1:$UI_PORT (stand-ins from $((UI_PORT + 10)), Mongo $((UI_PORT + 20)))"
export DAGSTER_HOME="$OUT/dagster_home"
export DAGSTER_PORT="$UI_PORT"
export SOCIALREC_SANDBOX_PORT_BASE="$((UI_PORT + 10))"
export SOCIALREC_LOCAL_MONGO_PORT="$((UI_PORT + 20))"
export SOCIALREC_LOCAL_MONGO_DIR="$OUT/mongo"
export MONGODB_DATABASE="ui_check"
unset MONGODB_URI SOCIALREC_RECONCILE_START
setsid bash scripts/run.sh --sandbox-name "uicheck-$UI_PORT" >"$OUT/logs/run.log" 2>&1 &
RUN_PID=$!

set +e
.venv/bin/python scripts/ui_check.py --port "$UI_PORT" --out "$OUT" --dagster-home "$DAGSTER_HOME" 2>&1 \
  | tee "$OUT/logs/ui_check.log"
status=${PIPESTATUS[0]}
set -e
if [ "$status" != 0 ]; then
  echo "ui_check failed; the sandbox's output is in $OUT/logs/run.log, its last lines:" >&2
  tail -n 30 "$OUT/logs/run.log" >&2 || true
  # Why it failed comes last: a CI log keeps the head and the tail of the output, not the middle.
  echo "==> ui_check failed (exit $status) at:" >&2
  tail -n 25 "$OUT/logs/ui_check.log" >&2 || true
fi
stop_all
# run.sh released the sandbox's queues and exchanges if they were unused and empty; whatever is left
# (a sample event not consumed yet) goes too: they are this run's only.
.venv/bin/python - "uicheck-$UI_PORT" <<'PY' || true
import os, sys
import pika
from socialrec_pipeline.sandbox.demo import sandbox_exchange
from socialrec_pipeline.stream.broker import dead_letter_queue, queue_name_for
env = f"sandbox-{sys.argv[1]}"
connection = pika.BlockingConnection(pika.URLParameters(os.environ.get("RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/%2F")))
channel = connection.channel()
for queue in (queue_name_for(env), dead_letter_queue(queue_name_for(env))):
    channel.queue_delete(queue)
channel.exchange_delete(sandbox_exchange(env))
connection.close()
PY
exit "$status"
