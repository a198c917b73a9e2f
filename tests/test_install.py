"""The install is reproducible and the production image is lean.

- Every install path (scripts/bootstrap.sh, the Dockerfile) installs from uv.lock without re-resolving.
- The production image gets neither the embedded database (`local` extra) nor the sandbox stand-ins,
  and the code location still loads without them.
(.ci/run also runs `uv lock --check`, which fails when pyproject.toml and uv.lock disagree.)
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _locked_versions() -> dict[str, str]:
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    return {pkg["name"]: pkg["version"] for pkg in lock["package"] if "version" in pkg}


def test_the_lock_pins_every_direct_dependency_of_every_extra():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        wanted += [req for req in extra if not req.startswith("socialrec_pipeline")]
    locked = _locked_versions()
    names = {re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0].lower().replace("_", "-") for req in wanted}
    missing = sorted(name for name in names if name not in locked)
    assert not missing, f"not in uv.lock (run .tools/bin/uv lock): {missing}"


def test_bootstrap_and_the_image_install_from_the_lock_without_resolving():
    bootstrap = (ROOT / "scripts" / "bootstrap.sh").read_text()
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"\"\$UV\" sync [^\n]*--frozen", bootstrap)
    syncs = re.findall(r"uv sync[^\n]*", dockerfile)
    assert syncs and all("--frozen" in line for line in syncs)
    assert "pip install ." not in dockerfile
    assert "COPY pyproject.toml uv.lock" in dockerfile


def test_the_image_runs_as_a_non_root_user():
    users = re.findall(r"^USER\s+(\S+)", (ROOT / "Dockerfile").read_text(), flags=re.M)
    assert users and users[-1] not in {"root", "0"}


def test_the_image_leaves_out_the_embedded_database_and_the_sandbox():
    dockerfile = (ROOT / "Dockerfile").read_text()
    extras = re.search(r'ARG EXTRAS="([^"]*)"', dockerfile)
    assert extras is not None
    assert not {"local", "test", "dev", "ui"} & set(extras.group(1).split())
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert "socialrec_pipeline/sandbox/" in ignored
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not any(req.lower().startswith("secantusdb") for req in project["dependencies"])


# Imports as the production image has them: no `secantus` package, no sandbox sub-package.
_WITHOUT_LOCAL_EXTRA = """
import importlib.abc, sys
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "secantus" or name.startswith(("secantus.", "socialrec_pipeline.sandbox")):
            raise ModuleNotFoundError(f"not in the production image: {name}")
        return None
sys.meta_path.insert(0, Refuse())
import socialrec_pipeline.defs.definitions as d
assert d.defs is not None
for name in sys.modules:
    assert not name.startswith(("secantus", "socialrec_pipeline.sandbox")), name
print("loaded")
"""


def test_the_code_location_loads_without_the_local_extra_and_the_sandbox():
    result = subprocess.run(
        [sys.executable, "-c", _WITHOUT_LOCAL_EXTRA], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("loaded")


def test_without_the_local_extra_an_unset_mongodb_uri_says_what_to_do():
    code = """
import importlib.abc, sys
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "secantus" or name.startswith("secantus."):
            raise ModuleNotFoundError(name)
sys.meta_path.insert(0, Refuse())
from socialrec_pipeline.store.embedded import configured_or_embedded_mongo
try:
    with configured_or_embedded_mongo(None):
        pass
except RuntimeError as exc:
    print(exc)
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert "set MONGODB_URI" in result.stdout and "`local` extra" in result.stdout, result.stderr[-2000:]
