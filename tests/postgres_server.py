"""The helper's PostgreSQL (scripts/postgres.sh) shared by every pytest worker of one run.

With `pytest -n 2` each worker has its own session, so the session fixture would otherwise start the
server twice and the first worker to finish would stop it under the other. Instead: the first worker
that needs it starts it under a file lock and writes the run's owner (the xdist controller, or the
pytest process itself without workers) into a marker; only that owner stops it, once the whole run
has ended (`stop_if_started_by_this_run`, called from tests/conftest.py). A server that was already
running before the tests is left running.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "postgres.sh"
LOCK = ROOT / ".local" / "postgres-tests.lock"
MARKER = ROOT / ".local" / "postgres-started-by-tests"
BINARIES_ABSENT = 3  # scripts/postgres.sh: no server binaries on this machine


def run_owner() -> int:
    """The pid that ends this test run: the xdist controller (a worker's parent) or this process."""
    return os.getppid() if os.environ.get("PYTEST_XDIST_WORKER") else os.getpid()


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    with LOCK.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _script(command: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), command], capture_output=True, text=True, timeout=timeout)


def ensure_started() -> tuple[int, str]:
    """(0, url) when the server runs (started now if needed), else (the script's exit code, its error)."""
    with _locked():
        if _script("status", timeout=60).returncode != 0:
            started = _script("start")
            if started.returncode != 0:
                return started.returncode, started.stderr.strip()
            MARKER.write_text(str(run_owner()))
        return 0, _script("url").stdout.strip()


def stop_if_started_by_this_run() -> None:
    """Called once the run has ended (by its owner): stop the server if one of its workers started it."""
    with _locked():
        if MARKER.exists() and MARKER.read_text().strip() == str(os.getpid()):
            _script("stop")
            MARKER.unlink()
