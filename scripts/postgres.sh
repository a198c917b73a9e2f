#!/usr/bin/env bash
# A PostgreSQL of the project's own for Dagster's storage (the production instance, natively):
# Debian's server binaries, data under .local/postgres, its own port (not a system server's 5432).
#
#   scripts/postgres.sh start    # initialise on first use, start, wait until it accepts connections
#   scripts/postgres.sh stop     # fast shutdown
#   scripts/postgres.sh status   # exit 0 when it runs, 1 when it does not (3: no server binaries)
#   scripts/postgres.sh url      # postgresql://postgres@127.0.0.1:<port>/postgres
#
# SOCIALREC_PG_PORT (default 25432) moves it; SOCIALREC_PG_BIN points at another bin directory
# (default: the newest /usr/lib/postgresql/*/bin). PostgreSQL refuses to run as root: started by
# root, the server runs as the `postgres` OS user, which then owns .local/postgres. Authentication
# is `trust` on 127.0.0.1 and the socket only: a development and CI server, never a shared one.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PORT="${SOCIALREC_PG_PORT:-25432}"
BASE="$ROOT/.local/postgres"
DATA="$BASE/data"
RUN="$BASE/run"
LOG="$BASE/postgres.log"

pg_bin() {
  if [ -n "${SOCIALREC_PG_BIN:-}" ]; then
    echo "$SOCIALREC_PG_BIN"
    return
  fi
  local found
  found="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
  if [ -z "$found" ] && command -v pg_ctl >/dev/null 2>&1; then
    found="$(dirname "$(command -v pg_ctl)")"
  fi
  echo "$found"
}

BIN="$(pg_bin)"
if [ -z "$BIN" ] || [ ! -x "$BIN/pg_ctl" ]; then
  echo "PostgreSQL server binaries not found (apt-get install postgresql, or set SOCIALREC_PG_BIN)" >&2
  exit 3
fi

# Run a command as the server's owner: `postgres` when we are root, else ourselves.
as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

running() { as_owner "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; }

case "${1:-}" in
  start)
    mkdir -p "$BASE" "$RUN"
    if [ "$(id -u)" = 0 ]; then
      chown -R postgres:postgres "$BASE"
    fi
    if [ ! -f "$DATA/PG_VERSION" ]; then
      as_owner "$BIN/initdb" -D "$DATA" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >"$BASE/initdb.log" 2>&1 \
        || { cat "$BASE/initdb.log" >&2; exit 1; }
    fi
    if running; then
      exit 0
    fi
    as_owner "$BIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 start \
      -o "-p $PORT -c listen_addresses=127.0.0.1 -c unix_socket_directories=$RUN -c max_connections=200 -c fsync=off" \
      >/dev/null || { tail -n 20 "$LOG" >&2; exit 1; }
    ;;
  stop)
    if running; then
      as_owner "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
    fi
    ;;
  status)
    # 1 when stopped (pg_ctl's own 3 would read as "binaries absent" to a caller).
    running || exit 1
    ;;
  url)
    echo "postgresql://postgres@127.0.0.1:$PORT/postgres"
    ;;
  *)
    echo "usage: $0 start|stop|status|url" >&2
    exit 2
    ;;
esac
