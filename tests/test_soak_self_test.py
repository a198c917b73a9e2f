"""bench/soak.py backs the "nothing lost over time" guarantee, so it must be able to show each breach
it exists for: its self-test records tokens for real, then plants one breach per row (a deleted
marker, a duplicated link, a wrong first_transfer_at copy, a leftover lock, a claimed pool slot, …)
and every counter has to see its own. Runs the bench as a script, on ports of its own."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from bench.own_services import port_free

pytestmark = pytest.mark.slow  # starts real processes: scheduled first, left out by --quick

ROOT = Path(__file__).resolve().parents[1]


def free_port_base() -> int:
    """A base whose ports the self-test takes (base, base+10, base+40..47, base+60) are all free."""
    for _ in range(50):
        base = random.randrange(24_000, 29_000, 100)
        if all(port_free(base + offset) for offset in (0, 10, *range(40, 48), 60)):
            return base
    raise RuntimeError("no free port base for the soak self-test")


@pytest.mark.bench_self_test  # the full run only (tests/conftest.py, FULL_RUN_ONLY)
def test_soak_self_test_detects_every_planted_breach():
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "soak.py"), "--self-test", "--port-base", str(free_port_base())],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    lines = result.stdout.strip().splitlines()
    assert lines, result.stderr[-2000:]
    last = lines[-1]
    assert last.startswith("bench_self_test: "), result.stdout
    detected, total = (int(n) for n in last.split()[1].split("/"))
    # A clean recording plus at least one planted breach for each of the audit's counters.
    assert total >= 9, result.stdout
    assert detected == total, result.stdout
    assert result.returncode == 0, result.stdout
    assert "MISS" not in result.stdout
