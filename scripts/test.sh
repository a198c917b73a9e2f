#!/usr/bin/env bash
# The whole test suite against real services: Redis and RabbitMQ from REDIS_URL / RABBITMQ_URL
# (default: localhost), MongoDB from MONGODB_URI or an in-process SecantusDB when it is unset.
# Extra arguments go to pytest (e.g. `scripts/test.sh tests/routing -q`). The tests run on five
# pytest-xdist workers (`-n 5 --dist worksteal`: many tests wait on servers and subprocesses, so
# five keep two cores busy — 1.08x faster than four, paired runs in docs/decisions.md, Test speed;
# tests marked `slow` start each worker's share (tests/conftest.py); an idle worker takes tests
# queued for a busy one) unless the arguments choose (`-n 0` runs them in this process, e.g. with --pdb).
# `--quick` leaves out the tests marked `slow` (real daemons, run workers, own servers, benches):
# the edit loop. The tests marked `deployment` (each starts a whole deployment of its own) and
# `bench_self_test` (a bench's --self-test) run only in the full run, CI=true as .ci/run sets it
# (`CI=true scripts/test.sh -m "deployment or bench_self_test"` runs just them).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash "$ROOT/scripts/bootstrap.sh"

.venv/bin/python - <<'PY'
import os, sys
import pika, redis
problems = []
try:
    redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"), socket_timeout=3).ping()
except Exception as exc:
    problems.append(f"Redis is not reachable ({exc}); start it or set REDIS_URL")
try:
    params = pika.URLParameters(os.environ.get("RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/%2F"))
    params.socket_timeout = 3
    params.blocked_connection_timeout = 3
    pika.BlockingConnection(params).close()
except Exception as exc:
    problems.append(f"RabbitMQ is not reachable ({exc!r}); start it or set RABBITMQ_URL")
if problems:
    print("\n".join(problems), file=sys.stderr)
    sys.exit(2)
PY

# Bytecode is written, whatever the shell says: with PYTHONDONTWRITEBYTECODE set (as on this machine
# and many CI images) pytest rewrites every test module's asserts again in each worker (collection
# 5.9 s instead of 3.7 s of CPU per worker) and every daemon, code server and bench a test starts
# compiles this package again.
unset PYTHONDONTWRITEBYTECODE
workers=(-n 5 --dist worksteal)
args=()
for arg in "$@"; do
  case "$arg" in
    --quick) args+=(-m "not slow"); continue ;;
    -n|-n[0-9]*|--numprocesses|--numprocesses=*|--dist|--dist=*|-pno:xdist|no:xdist) workers=() ;;
  esac
  args+=("$arg")
done
exec .venv/bin/python -m pytest "${workers[@]}" "${args[@]}"
