#!/usr/bin/env bash
# Installs the project into .venv (first run) and starts the Dagster UI (webserver + daemon) with
# the socialrec_pipeline code location loaded, bound to 127.0.0.1 only.
#
#   scripts/run.sh             # real providers, configured through the environment (docs/configuration.md)
#   scripts/run.sh --sandbox   # offline demo: local stand-ins for SolTracker and every platform API
#                              # and a queue of its own (SOCIALREC_ENV=sandbox-<name>)
#   --sandbox-name NAME        # that queue's name (default: derived from DAGSTER_HOME)
#   --verbose                  # the daemon's INFO lines too (default: warnings and errors only)
#
# MongoDB: MONGODB_URI when set; otherwise a local SecantusDB server (MongoDB wire protocol) is
# started on 127.0.0.1:${SOCIALREC_LOCAL_MONGO_PORT:-27018} with its data in .local/mongo.
# Redis and RabbitMQ: REDIS_URL / RABBITMQ_URL, defaulting to the local servers.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash "$ROOT/scripts/bootstrap.sh"

SANDBOX=0
SANDBOX_NAME="${SOCIALREC_SANDBOX_NAME:-}"
LOG_LEVEL=warning
while [ $# -gt 0 ]; do
  case "$1" in
    --sandbox) SANDBOX=1 ;;
    --sandbox-name) SANDBOX=1; SANDBOX_NAME="${2:?--sandbox-name needs a value}"; shift ;;
    --verbose) LOG_LEVEL=info ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done

LOCAL="$ROOT/.local"
mkdir -p "$LOCAL/logs"
export DAGSTER_HOME="${DAGSTER_HOME:-$LOCAL/dagster_home}"
mkdir -p "$DAGSTER_HOME"
# The instance file is the project's dagster.yaml plus deploy/local-storage.yaml (edit those): an
# older copy is replaced and kept as dagster.yaml.bak, so an existing DAGSTER_HOME gets the current
# run workers and storage.
instance_file="$(mktemp)"
cat "$ROOT/dagster.yaml" "$ROOT/deploy/local-storage.yaml" >"$instance_file"
if ! cmp -s "$instance_file" "$DAGSTER_HOME/dagster.yaml"; then
  if [ -f "$DAGSTER_HOME/dagster.yaml" ]; then
    cp "$DAGSTER_HOME/dagster.yaml" "$DAGSTER_HOME/dagster.yaml.bak"
    echo "==> $DAGSTER_HOME/dagster.yaml differed from the project's: replaced (the old one is dagster.yaml.bak)"
  fi
  cp "$instance_file" "$DAGSTER_HOME/dagster.yaml"
fi
rm -f "$instance_file"

# The first hour reconcile_job covers is pinned per instance on its first start (the hour before
# it), so the coverage bar shows the hours since this instance exists, not hundreds nothing will
# fill. Set SOCIALREC_RECONCILE_START (or edit the file) to cover older hours on purpose.
# The sandbox starts 4 hours back: its SolTracker stand-in holds tokens in the 3 closed hours before
# the start that no sample event announces, so a reconcile backfill of those hours records them.
if [ -z "${SOCIALREC_RECONCILE_START:-}" ]; then
  back='1 hour ago'; [ "$SANDBOX" = 1 ] && back='4 hours ago'
  [ -s "$DAGSTER_HOME/reconcile_start" ] || date -u -d "$back" +%Y-%m-%d-%H:00 >"$DAGSTER_HOME/reconcile_start"
  SOCIALREC_RECONCILE_START="$(cat "$DAGSTER_HOME/reconcile_start")"
fi
export SOCIALREC_RECONCILE_START

# Every child runs in a process group of its own (setsid), so stopping this script stops
# everything it started: the webserver, the daemon, the code server and the run workers included.
# A background job of a script starts with SIGINT ignored, and Dagster's code server answers SIGTERM
# the way it answers SIGINT (it stayed up until killed, 15 s into every stop): `env
# --default-signal` gives each child the dispositions it would have had from a terminal.
children=()
start() { setsid env --default-signal=INT,QUIT "$@" & children+=($!); }
# Stopping: Dagster's processes (code server, daemon, webserver) together, then the rest in the
# reverse order of start (run workers, stand-ins, database), so no sensor tick fails on a database
# that is already down. Together, because the daemon's shutdown waits for its sensor thread, which
# may be in a tick listening on the queue inside the code server (up to SOCIALREC_SENSOR_LISTEN_SECONDS,
# 20 s), and so does the code server's: both get up to 35 s before SIGKILL, every other group 15 s.
# (SIGKILL loses nothing: a tick acknowledges its messages only after they are stored.)
stop_groups() {
  local patience="$1"; shift
  local pgid what=()
  for pgid in "$@"; do
    what+=("$( (tr '\0' ' ' <"/proc/$pgid/cmdline") 2>/dev/null | cut -c1-80 || true)")
    kill -TERM -- "-$pgid" 2>/dev/null || true
  done
  for _ in $(seq 1 $((patience * 5))); do
    local alive=0
    for pgid in "$@"; do kill -0 -- "-$pgid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && return 0
    sleep 0.2
  done
  local i=0
  for pgid in "$@"; do
    if kill -0 -- "-$pgid" 2>/dev/null; then
      echo "==> still running $patience s after SIGTERM, killed: ${what[$i]:-process group $pgid}" >&2
      kill -KILL -- "-$pgid" 2>/dev/null || true
    fi
    i=$((i + 1))
  done
}
release_sandbox=0
cleanup() {
  trap - EXIT INT TERM
  # dagster_from: the index in `children` of the first Dagster process, set when it starts.
  local first="${dagster_from:-${#children[@]}}"
  if [ "${#children[@]}" -gt "$first" ]; then stop_groups 35 "${children[@]:$first}"; fi
  for (( i=first-1; i>=0; i-- )); do stop_groups 15 "${children[$i]}"; done
  # A sandbox's queues and exchanges go with it (each only if unused and empty): a shared broker
  # keeps no litter of stopped sandboxes. Another deployment's state stays for its next start.
  if [ "$release_sandbox" = 1 ]; then
    "$ROOT/.venv/bin/socialrec" sandbox release --env "$SOCIALREC_ENV" --env-file "$ENV_FILE" || true
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

if [ -z "${MONGODB_URI:-}" ]; then
  port="${SOCIALREC_LOCAL_MONGO_PORT:-27018}"
  if ! port_open "$port"; then
    mongo_dir="${SOCIALREC_LOCAL_MONGO_DIR:-$LOCAL/mongo}"
    echo "==> MONGODB_URI is unset: starting a local SecantusDB server on 127.0.0.1:$port (data: $mongo_dir)"
    mkdir -p "$mongo_dir"
    start .venv/bin/secantusd-py --host 127.0.0.1 --port "$port" --storage-path "$mongo_dir" \
      --log-level WARNING >"$LOCAL/logs/mongo.log" 2>&1
    for _ in $(seq 1 50); do port_open "$port" && break; sleep 0.2; done
  fi
  export MONGODB_URI="mongodb://127.0.0.1:$port/?directConnection=true"
fi
export MONGODB_DATABASE="${MONGODB_DATABASE:-socialrec}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"
export RABBITMQ_URL="${RABBITMQ_URL:-amqp://guest:guest@127.0.0.1:5672/%2F}"

if [ "$SANDBOX" = 1 ]; then
  # A queue of its own per instance: two sandboxes on one broker never take each other's events.
  if [ -z "$SANDBOX_NAME" ]; then
    SANDBOX_NAME="$(printf %s "$(cd "$DAGSTER_HOME" && pwd)" | sha1sum | cut -c1-8)"
  fi
  case "$SANDBOX_NAME" in
    *[!A-Za-z0-9_-]*) echo "--sandbox-name may hold letters, digits, - and _ only: $SANDBOX_NAME" >&2; exit 2 ;;
  esac
  export SOCIALREC_ENV="sandbox-$SANDBOX_NAME"
  ENV_FILE="$DAGSTER_HOME/sandbox.env"
  echo "==> starting the sandbox stand-ins (SolTracker and platform APIs on loopback), queue suffix $SOCIALREC_ENV"
  rm -f "$ENV_FILE"  # a stale file from an earlier run must not satisfy the wait below
  start .venv/bin/socialrec sandbox serve --port-base "${SOCIALREC_SANDBOX_PORT_BASE:-18080}" --env "$SOCIALREC_ENV" \
    --env-file "$ENV_FILE" >"$LOCAL/logs/sandbox.log" 2>&1
  for _ in $(seq 1 100); do [ -s "$ENV_FILE" ] && break; sleep 0.2; done
  if [ ! -s "$ENV_FILE" ]; then
    echo "the sandbox did not start; see $LOCAL/logs/sandbox.log" >&2
    exit 1
  fi
  set -a; . "$ENV_FILE"; set +a
  release_sandbox=1
  echo "==> publish sample events (fresh addresses, this sandbox's queue) with:"
  echo "      DAGSTER_HOME=$DAGSTER_HOME .venv/bin/socialrec sandbox publish"
fi
export SOCIALREC_ENV="${SOCIALREC_ENV:-dev}"

# Warm run workers (dagster.yaml's run launcher): tasks over the same RabbitMQ, task state in the same
# Redis, a queue per SOCIALREC_ENV so two instances on one broker never run each other's runs.
export SOCIALREC_CELERY_BROKER_URL="${SOCIALREC_CELERY_BROKER_URL:-$RABBITMQ_URL}"
export SOCIALREC_CELERY_BACKEND_URL="${SOCIALREC_CELERY_BACKEND_URL:-$REDIS_URL}"
export SOCIALREC_CELERY_RUN_QUEUE="${SOCIALREC_CELERY_RUN_QUEUE:-socialrec-runs-$SOCIALREC_ENV}"
# The pools' limits set explicitly in the instance, so Deployment → Concurrency shows them. This is
# also the one process that opens a fresh instance first, before any other starts: two processes
# creating its SQLite databases at once both stamp Alembic's version table, and every later start of
# that DAGSTER_HOME then fails ("more than one head present").
"$ROOT/.venv/bin/socialrec" pool-limits || echo "==> warning: could not set the pool limits (default_limit still applies)"

echo "==> starting the run workers (${SOCIALREC_RUN_WORKER_CONCURRENCY:-2} at once, queue $SOCIALREC_CELERY_RUN_QUEUE; log: $LOCAL/logs/run_workers.log)"
start bash "$ROOT/scripts/run_workers.sh" >"$LOCAL/logs/run_workers.log" 2>&1
echo "==> Dagster UI on http://127.0.0.1:${DAGSTER_PORT:-3000} (DAGSTER_HOME=$DAGSTER_HOME; daemon log level $LOG_LEVEL)"
# The webserver and the daemon share one code server (what `dagster dev` starts, without its
# supervisor and proxy processes: ~220 MiB less at rest). Code changes take a restart of this script
# (the run workers import the code once too).
cd "$DAGSTER_HOME"
socket="${TMPDIR:-/tmp}/socialrec-code-$(printf %s "$(pwd)" | sha1sum | cut -c1-12).sock"
rm -f "$socket"
dagster_from=${#children[@]}
start "$ROOT/.venv/bin/dagster" api grpc -m socialrec_pipeline.defs.definitions --location-name socialrec_pipeline \
  --socket "$socket" --log-level "$LOG_LEVEL"
for _ in $(seq 1 300); do [ -S "$socket" ] && break; sleep 0.2; done
cat >"$DAGSTER_HOME/workspace.yaml" <<YAML
# Written by scripts/run.sh: the code server it started.
load_from:
  - grpc_server:
      socket: $socket
      location_name: socialrec_pipeline
YAML
start "$ROOT/.venv/bin/dagster-daemon" run -w "$DAGSTER_HOME/workspace.yaml" --log-level "$LOG_LEVEL"
start "$ROOT/.venv/bin/dagster-webserver" -h 127.0.0.1 -p "${DAGSTER_PORT:-3000}" -w "$DAGSTER_HOME/workspace.yaml" \
  --dagster-log-level "$LOG_LEVEL" --log-level "$LOG_LEVEL"
dagster_pid="${children[-1]}"
# What is missing, on the first screen: the doctor's verdict and its non-ok rows, once the UI answers
# and the daemon had time for its first heartbeat. In the background: start-up never waits for it.
start bash -c 'for _ in $(seq 1 120); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && break; sleep 1; done
  sleep "${SOCIALREC_DOCTOR_DELAY_S:-20}"
  echo "==> socialrec doctor --summary (the full table: .venv/bin/socialrec doctor; docs/doctor.md)"
  "$2" doctor --summary || true' doctor "${DAGSTER_PORT:-3000}" "$ROOT/.venv/bin/socialrec"
wait "$dagster_pid"
