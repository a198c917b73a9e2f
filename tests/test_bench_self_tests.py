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
    if name == "routing":
        return ["--self-test", "--n", "10000"], 1
    if name == "writer":
        return ["--self-test"], 1
    if name == "signals":
        return ["--self-test", "--tokens", "500"], 2
    if name in ("e2e", "burst"):  # a deployment of their own each, one token (e2e) or four (burst)
        return ["--self-test"], 1
    raise ValueError(name)


BENCHES = ["integrity", "cost", "faults", "sensor", "idle", "routing", "writer", "signals", "e2e", "burst"]


#: Benches whose self-test another test runs (it needs a fixture of its own there).
SELF_TESTED_ELSEWHERE = {"soak": "tests/test_soak_self_test.py", "alerts": "tests/defs/test_alerts.py"}


def test_every_bench_with_a_goal_has_a_self_test_that_runs():
    """A bench that judges a goal (a `--min-…`/`--max-…` bound or a `breached` verdict) has a
    `--self-test`, and every `--self-test` is run by this module or by the test named above."""
    sources = {p.stem: p.read_text() for p in (ROOT / "bench").glob("*.py")}
    judging = {name for name, text in sources.items() if re.search(r'"--(min|max)-|def breached\(', text)}
    self_tested = {name for name, text in sources.items() if '"--self-test"' in text}
    assert judging - self_tested == set(), f"benches judging a goal without a --self-test: {judging - self_tested}"
    unrun = self_tested - set(BENCHES) - set(SELF_TESTED_ELSEWHERE)
    assert unrun == set(), f"--self-test never run by a test: {unrun}"
    for name, test in SELF_TESTED_ELSEWHERE.items():
        assert f"{name}.py" in (ROOT / test).read_text() and "--self-test" in (ROOT / test).read_text(), test


@pytest.mark.bench_self_test  # the full run only (tests/conftest.py, FULL_RUN_ONLY)
@pytest.mark.parametrize("name", BENCHES)
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
