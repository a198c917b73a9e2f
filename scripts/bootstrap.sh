#!/usr/bin/env bash
# Creates (or reuses) .venv in the project root and installs the package with its test and dev extras
# (pytest, hypothesis; ruff, mypy, pre-commit, the dg CLI).
# Sourced by run.sh and test.sh; safe to run on its own.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"

if ! "$PYTHON" -c 'import sys; raise SystemExit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "socialrec needs Python 3.11 or newer (found: $("$PYTHON" --version 2>&1))" >&2
  exit 1
fi

if [ ! -x "$ROOT/.venv/bin/python" ]; then
  echo "==> creating $ROOT/.venv"
  "$PYTHON" -m venv "$ROOT/.venv"
fi

# Reinstall only when the dependency list changed (or the package is missing).
stamp="$ROOT/.venv/.socialrec-installed"
want="$(sha256sum "$ROOT/pyproject.toml" | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || ! "$ROOT/.venv/bin/python" -c 'import socialrec_pipeline' 2>/dev/null; then
  echo "==> installing socialrec_pipeline and its dependencies into .venv"
  "$ROOT/.venv/bin/python" -m pip install --quiet --upgrade pip
  "$ROOT/.venv/bin/python" -m pip install --quiet -e "$ROOT[test,dev]"
  echo "$want" > "$stamp"
fi
