#!/usr/bin/env bash
# The whole test suite against real services: Redis and RabbitMQ from REDIS_URL / RABBITMQ_URL
# (default: localhost), MongoDB from MONGODB_URI or an in-process SecantusDB when it is unset.
# Extra arguments go to pytest (e.g. `scripts/test.sh tests/routing -q`). The tests run on two
# pytest-xdist workers (`-n 2 --dist loadgroup`: a module marked `xdist_group` keeps its tests on one
# worker) unless the arguments choose (`-n 0` runs them in this process, e.g. with --pdb).
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

workers=(-n 2 --dist loadgroup)
for arg in "$@"; do
  case "$arg" in
    -n|-n[0-9]*|--numprocesses|--numprocesses=*|--dist|--dist=*|-pno:xdist|no:xdist) workers=() ;;
  esac
done
exec .venv/bin/python -m pytest "${workers[@]}" "$@"
