#!/usr/bin/env bash
# Creates (or brings up to date) .venv in the project root from the lock file (uv.lock): the package
# with every extra (the embedded database, Postgres/Celery/k8s integrations, tests, lint, the UI check).
# The same lock feeds the Dockerfile and CI, so two installs a week apart are identical.
#
# uv itself is a tool, not a dependency: it lives in .tools/ at the version pinned below.
# Upgrade the lock (then commit uv.lock):   .tools/bin/uv lock --upgrade
# Upgrade one package:                      .tools/bin/uv lock --upgrade-package dagster
# Sourced by run.sh and test.sh; safe to run on its own.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
UV_VERSION="0.13.9"

if ! "$PYTHON" -c 'import sys; raise SystemExit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "socialrec needs Python 3.11 or newer (found: $("$PYTHON" --version 2>&1))" >&2
  exit 1
fi

UV="$ROOT/.tools/bin/uv"
if [ ! -x "$UV" ] || [ "$("$UV" --version 2>/dev/null | cut -d' ' -f2)" != "$UV_VERSION" ]; then
  echo "==> installing uv $UV_VERSION into .tools"
  "$PYTHON" -m venv "$ROOT/.tools"
  "$ROOT/.tools/bin/python" -m pip install --quiet --disable-pip-version-check "uv==$UV_VERSION"
fi

# Sync only when the lock or pyproject changed (or the package is missing): a no-op start stays fast.
stamp="$ROOT/.venv/.socialrec-installed"
want="$(cat "$ROOT/pyproject.toml" "$ROOT/uv.lock" | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || ! "$ROOT/.venv/bin/python" -c 'import socialrec_pipeline' 2>/dev/null; then
  echo "==> installing socialrec_pipeline and its locked dependencies into .venv"
  # --frozen: install exactly what uv.lock says; never re-resolve here (CI checks the lock separately).
  # --compile-bytecode: every process (code server, daemon, each run worker) imports Dagster; from
  # source that is ~4 s of CPU per process, from bytecode ~1.8 s. Python writes .pyc files itself on
  # the first import, but not where PYTHONDONTWRITEBYTECODE is set (CI images, some shells).
  UV_PYTHON="$PYTHON" UV_PROJECT_ENVIRONMENT="$ROOT/.venv" \
    "$UV" sync --quiet --frozen --all-extras --compile-bytecode --project "$ROOT"
  echo "$want" > "$stamp"
fi
# The project's own modules (an editable install, so not compiled by the sync): only files changed
# since their last compile are compiled again, so a no-op start stays fast.
"$ROOT/.venv/bin/python" -m compileall -q "$ROOT/socialrec_pipeline" >/dev/null
