"""The suite's Hypothesis profile: no per-example deadline, so load on a shared machine is not a failure."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]


def test_hypothesis_runs_without_a_per_example_deadline():
    assert settings().deadline is None


def test_ci_selects_the_ci_profile():
    env = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_PROFILE"} | {"CI": "true"}
    probe = (
        "import tests.conftest\n"
        "from hypothesis import HealthCheck, settings\n"
        "s = settings()\n"
        "print(s.deadline, HealthCheck.too_slow in s.suppress_health_check)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.split() == ["None", "True"]
