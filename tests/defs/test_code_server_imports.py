"""The code server loads the code location and evaluates sensors and schedules; it never computes
a domain, so it does without tldextract and the requests stack it brings (~6 MiB at rest), which
`routing/apex.py` imports on first use. Domains still come out right once it is loaded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_LOAD_THEN_USE = """
import sys
import socialrec_pipeline.defs.definitions as code_location
code_location.defs.get_repository_def()
print("loaded:" + ",".join(sorted({m.split(".")[0] for m in sys.modules} & {"tldextract", "requests"})))
from socialrec_pipeline.routing.apex import apex_domain
print("apex:", apex_domain("https://shop.foo.co.uk/x"), apex_domain("a.vercel.app"))
"""


def test_loading_the_code_location_leaves_the_suffix_list_unloaded_until_a_domain_is_asked():
    result = subprocess.run(
        [sys.executable, "-c", _LOAD_THEN_USE], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.strip().splitlines()
    assert lines[-2] == "loaded:", lines
    assert lines[-1] == "apex: foo.co.uk a.vercel.app", lines
