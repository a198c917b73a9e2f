#!/usr/bin/env bash
# PgBouncer in front of Dagster's PostgreSQL, in session mode.
#
#   scripts/pgbouncer.sh serve   # write the config from the environment, run pgbouncer in the foreground
#
# Why: dagster-postgres opens a new database connection for every storage call (SQLAlchemy NullPool;
# only the webserver keeps one open) and a run makes ~150 of them. Each costs PostgreSQL a backend
# process: measured here 4.3 ms and ~6 ms of server CPU per connection, 0.55 ms through PgBouncer,
# which hands the closed connection's server backend to the next client. Session mode keeps every
# PostgreSQL feature Dagster uses (LISTEN for the webserver's live logs, session settings); a
# connection is only shared after its client closed it. docs/scaling.md has the burst figures.
#
# docker-compose's `pgbouncer` service runs this (deploy/pgbouncer.Dockerfile); the topology tests
# and bench/burst.py start it natively the same way (bench/own_services.py: OwnPgBouncer).
#
# The environment (defaults in brackets):
#   DAGSTER_POSTGRES_HOST / _PORT [5432] / _USER / _PASSWORD   the PostgreSQL it pools for
#   PGBOUNCER_LISTEN_ADDR [0.0.0.0]  PGBOUNCER_LISTEN_PORT [6432]
#   PGBOUNCER_AUTH_TYPE [scram-sha-256] (clients log in with the same user and password; `trust`
#     only for a loopback development server such as scripts/postgres.sh's)
#   PGBOUNCER_POOL_SIZE [20] server connections per database; PGBOUNCER_MAX_CLIENTS [500]
#   PGBOUNCER_DIR [a new temporary directory]  where the config and the user list are written
set -euo pipefail

: "${DAGSTER_POSTGRES_HOST:?set DAGSTER_POSTGRES_HOST}"
: "${DAGSTER_POSTGRES_USER:?set DAGSTER_POSTGRES_USER}"
case "${1:-}" in
  serve) ;;
  *) echo "usage: $0 serve" >&2; exit 2 ;;
esac
BIN="$(command -v pgbouncer || true)"
if [ -z "$BIN" ] && [ -x /usr/sbin/pgbouncer ]; then BIN=/usr/sbin/pgbouncer; fi
if [ -z "$BIN" ]; then
  echo "pgbouncer not found (Debian: apt-get install pgbouncer)" >&2
  exit 3
fi
DIR="${PGBOUNCER_DIR:-$(mktemp -d -t socialrec-pgbouncer-XXXXXX)}"
mkdir -p "$DIR"
umask 077
# The user list holds the password in clear: PgBouncer needs it to log in to PostgreSQL (SCRAM).
quote() { printf '"%s"' "${1//\"/\"\"}"; }
printf '%s %s\n' "$(quote "$DAGSTER_POSTGRES_USER")" "$(quote "${DAGSTER_POSTGRES_PASSWORD:-}")" >"$DIR/userlist.txt"
cat >"$DIR/pgbouncer.ini" <<INI
[databases]
* = host=${DAGSTER_POSTGRES_HOST} port=${DAGSTER_POSTGRES_PORT:-5432}

[pgbouncer]
listen_addr = ${PGBOUNCER_LISTEN_ADDR:-0.0.0.0}
listen_port = ${PGBOUNCER_LISTEN_PORT:-6432}
unix_socket_dir =
auth_type = ${PGBOUNCER_AUTH_TYPE:-scram-sha-256}
auth_file = $DIR/userlist.txt
pool_mode = session
; The same user may read the pooler's counters (SHOW STATS / POOLS on the `pgbouncer` database).
stats_users = ${DAGSTER_POSTGRES_USER}
default_pool_size = ${PGBOUNCER_POOL_SIZE:-20}
max_client_conn = ${PGBOUNCER_MAX_CLIENTS:-500}
; Dagster's connections are short: a server connection idle this long is closed.
server_idle_timeout = 60
; Connects that find every server connection busy wait this long, then fail with a clear error.
query_wait_timeout = 60
log_connections = 0
log_disconnections = 0
INI
# PgBouncer refuses to run as root: started by root (the native tests here), it runs as `postgres`.
if [ "$(id -u)" = 0 ]; then
  chown -R postgres "$DIR"
  exec runuser -u postgres -- "$BIN" "$DIR/pgbouncer.ini"
fi
exec "$BIN" "$DIR/pgbouncer.ini"
