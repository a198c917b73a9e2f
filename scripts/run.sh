#!/usr/bin/env bash
# Installs the project into .venv (first run) and starts the Dagster UI (webserver + daemon) with
# the socialrec_pipeline code location loaded, bound to 127.0.0.1 only.
#
#   scripts/run.sh             # real providers, configured through the environment (README table)
#   scripts/run.sh --sandbox   # offline demo: local stand-ins for SolTracker and every platform API
#
# MongoDB: MONGODB_URI when set; otherwise a local SecantusDB server (MongoDB wire protocol) is
# started on 127.0.0.1:${SOCIALREC_LOCAL_MONGO_PORT:-27018} with its data in .local/mongo.
# Redis and RabbitMQ: REDIS_URL / RABBITMQ_URL, defaulting to the local servers.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash "$ROOT/scripts/bootstrap.sh"

SANDBOX=0
for arg in "$@"; do
  case "$arg" in
    --sandbox) SANDBOX=1 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "unknown argument: $arg" >&2; exit 2 ;;
  esac
done

LOCAL="$ROOT/.local"
mkdir -p "$LOCAL/logs"
export DAGSTER_HOME="${DAGSTER_HOME:-$LOCAL/dagster_home}"
mkdir -p "$DAGSTER_HOME"
[ -f "$DAGSTER_HOME/dagster.yaml" ] || cp "$ROOT/dagster.yaml" "$DAGSTER_HOME/dagster.yaml"

# Every child runs in a process group of its own (setsid), so stopping this script stops
# everything it started: dagster dev's webserver, daemon and code servers included.
children=()
start() { setsid "$@" & children+=($!); }
cleanup() {
  trap - EXIT INT TERM
  for pid in "${children[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  for _ in $(seq 1 50); do
    alive=0
    for pid in "${children[@]}"; do kill -0 -- "-$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && return 0
    sleep 0.2
  done
  for pid in "${children[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

if [ -z "${MONGODB_URI:-}" ]; then
  port="${SOCIALREC_LOCAL_MONGO_PORT:-27018}"
  if ! port_open "$port"; then
    echo "==> MONGODB_URI is unset: starting a local SecantusDB server on 127.0.0.1:$port (data: .local/mongo)"
    mkdir -p "$LOCAL/mongo"
    start .venv/bin/secantusd-py --host 127.0.0.1 --port "$port" --storage-path "$LOCAL/mongo" \
      --log-level WARNING >"$LOCAL/logs/mongo.log" 2>&1
    for _ in $(seq 1 50); do port_open "$port" && break; sleep 0.2; done
  fi
  export MONGODB_URI="mongodb://127.0.0.1:$port/?directConnection=true"
fi
export MONGODB_DATABASE="${MONGODB_DATABASE:-socialrec}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"
export RABBITMQ_URL="${RABBITMQ_URL:-amqp://guest:guest@127.0.0.1:5672/%2F}"

if [ "$SANDBOX" = 1 ]; then
  export SOCIALREC_ENV=sandbox
  echo "==> starting the sandbox stand-ins (SolTracker and platform APIs on loopback)"
  rm -f "$LOCAL/sandbox.env"  # a stale file from an earlier run must not satisfy the wait below
  start .venv/bin/socialrec sandbox serve --port-base "${SOCIALREC_SANDBOX_PORT_BASE:-18080}" --env-file "$LOCAL/sandbox.env" >"$LOCAL/logs/sandbox.log" 2>&1
  for _ in $(seq 1 100); do [ -s "$LOCAL/sandbox.env" ] && break; sleep 0.2; done
  if [ ! -s "$LOCAL/sandbox.env" ]; then
    echo "the sandbox did not start; see $LOCAL/logs/sandbox.log" >&2
    exit 1
  fi
  set -a; . "$LOCAL/sandbox.env"; set +a
  echo "==> publish sample events with:  .venv/bin/socialrec sandbox publish"
fi
export SOCIALREC_ENV="${SOCIALREC_ENV:-dev}"

echo "==> Dagster UI on http://127.0.0.1:${DAGSTER_PORT:-3000} (DAGSTER_HOME=$DAGSTER_HOME)"
start .venv/bin/dagster dev -h 127.0.0.1 -p "${DAGSTER_PORT:-3000}" -w "$ROOT/workspace.yaml"
wait "${children[-1]}"
