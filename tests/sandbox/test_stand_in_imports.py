"""The sandbox stand-ins run as a process of their own for as long as `scripts/run.sh --sandbox`
does: they import the standard library and their own fixtures only, never pydantic, httpx or
Dagster (~17 MiB of resident memory at rest; docs/benchmarks.md, Idle cost)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# What `socialrec sandbox serve` imports before it serves: the CLI's entry point and the demo.
_IMPORTS_OF_SERVE = """
import sys
import socialrec_pipeline.cli
from socialrec_pipeline.sandbox import demo
heavy = sorted({name.split(".")[0] for name in sys.modules} & {"pydantic", "httpx", "dagster", "pymongo", "pika"})
print("heavy:", ",".join(heavy))
"""


def test_serving_the_stand_ins_imports_no_heavy_package():
    result = subprocess.run(
        [sys.executable, "-c", _IMPORTS_OF_SERVE], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "heavy:", result.stdout
