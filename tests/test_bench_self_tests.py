"""Every benchmark that backs a guarantee can still see the breach it exists for.

Each runs `bench/<name>.py --self-test` in a reduced mode (a few rows, small sizes): the bench
injects, per row, the breach the row is there to catch and must report it on every row. A bench
that went blind (a meter that stopped counting, a check compared with the wrong number, a
classification that calls a lost token pending) fails here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.ports import free_port_base

pytestmark = pytest.mark.slow  # starts real processes: scheduled first, left out by --quick

ROOT = Path(__file__).resolve().parents[1]
LAST_LINE = re.compile(r"bench_self_test: (\d+)/(\d+) rows detect their breach")


def reduced(name: str) -> tuple[list[str], int]:
    """(arguments, rows the reduced run must have)."""
    if name == "integrity":
        return ["--self-test", "--tokens", "200", "--planted", "2"], 12
    if name == "cost":
        return [
            "--self-test", "--jobs", "record_token_job", "--fields", "resources.recording",
            "--env-names", "SOCIALREC_ENABLE_PAID",
        ], 7  # fmt: skip
    if name == "faults":
        return [
            "--self-test",
            "--only",
            "hostile_urls",
            "--shared-broker",
            "--port-base",
            str(free_port_base(64)),
        ], 1  # faults binds base..base+60
    if name == "sensor":
        return ["--self-test", "--messages", "1000", "--rounds", "1"], 2
    if name == "idle":
        return ["--self-test", "--seconds", "3"], 2
    raise ValueError(name)


@pytest.mark.parametrize("name", ["integrity", "cost", "faults", "sensor", "idle"])
def test_every_row_of_the_bench_reports_its_injected_breach(name):
    arguments, rows = reduced(name)
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / f"{name}.py"), *arguments],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = result.stdout.strip().splitlines()
    summary = LAST_LINE.fullmatch(lines[-1]) if lines else None
    assert summary, f"no self-test summary; stdout tail {lines[-5:]}, stderr tail {result.stderr[-2000:]}"
    detected, total = int(summary[1]), int(summary[2])
    assert (detected, total) == (rows, rows), "\n".join(lines[-15:])
    assert result.returncode == 0
