"""Imports go only downwards: no module of the package imports a higher layer.

The order (ARCHITECTURE, docs/decisions.md "Layers"), lowest first:

    domain → routing → providers → store → signals → recording → stream → defs → sandbox → cli

`signals` (the derived values of SPEC §11) reads only through `store`; the Dagster assets in `defs`
call it.

`sandbox` (the loopback stand-ins and the offline demo) and `cli` are consumers at the top: the
sandbox reuses lower layers (event parsing, the stream topology) and may wire the code location;
production code never imports it, so a stand-in cannot leak into a deployment. `cli` is the entry
point and nothing imports it. A module may import its own layer and any layer below.

The sources are parsed, not imported: every `import` counts wherever it sits (module level, inside a
function, under `if TYPE_CHECKING:`), and so does `importlib.import_module("socialrec_pipeline.…")`
with a literal name. A new top-level subpackage fails here until it is given a place in `LAYERS`.
"""

from __future__ import annotations

import ast
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = "socialrec_pipeline"
PACKAGE_DIR = Path(__file__).resolve().parents[1] / PACKAGE

LAYERS: tuple[str, ...] = (
    "domain", "routing", "providers", "store", "signals", "recording", "stream", "defs", "sandbox", "cli"
)
RANK = {layer: rank for rank, layer in enumerate(LAYERS)}


@dataclass(frozen=True)
class Violation:
    module: str
    line: int
    imported: str
    why: str

    def __str__(self) -> str:
        return f"{self.module}:{self.line} imports {self.imported} ({self.why})"


def module_name(path: Path, root: Path = PACKAGE_DIR) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> str | None:
    """`socialrec_pipeline.store.tokens` → `store`; `cli` for the `cli.py` module; None for the root."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def imported_modules(source: str, module: str, is_package: bool) -> list[tuple[int, str]]:
    """Every first-party module `source` imports, as absolute names, with the line of the import."""
    found: list[tuple[int, str]] = []
    package_parts = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package_parts[: len(package_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            # `from socialrec_pipeline import defs` names the layer in the alias.
            if base == PACKAGE:
                found += [(node.lineno, f"{PACKAGE}.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, base))
        elif isinstance(node, ast.Call) and _is_import_call(node.func) and node.args:
            target = node.args[0]
            if isinstance(target, ast.Constant) and isinstance(target.value, str):
                found.append((node.lineno, target.value))
    return [(line, name) for line, name in found if name == PACKAGE or name.startswith(PACKAGE + ".")]


def _is_import_call(func: ast.expr) -> bool:
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name in {"import_module", "__import__"}


def violations_in(source: str, module: str, is_package: bool = False) -> list[Violation]:
    own = layer_of(module)
    if own is None:  # the package's own __init__: imports nothing of its layers
        return [Violation(module, line, name, "the package root must not import a layer")
                for line, name in imported_modules(source, module, is_package) if layer_of(name)]
    if own not in RANK:
        return [Violation(module, 1, module, f"layer {own!r} has no place in LAYERS")]
    out = []
    for line, name in imported_modules(source, module, is_package):
        target = layer_of(name)
        if target is None:
            continue  # `import socialrec_pipeline`: the root docstring only
        if target not in RANK:
            out.append(Violation(module, line, name, f"layer {target!r} has no place in LAYERS"))
        elif RANK[target] > RANK[own]:
            out.append(Violation(module, line, name, f"{own} may not import the higher layer {target}"))
    return out


def package_violations(root: Path = PACKAGE_DIR) -> list[Violation]:
    out: list[Violation] = []
    for path in sorted(root.rglob("*.py")):
        out += violations_in(path.read_text(encoding="utf-8"), module_name(path, root), path.name == "__init__.py")
    return out


def test_no_module_imports_a_higher_layer():
    found = package_violations()
    assert not found, "imports must go only downwards:\n" + "\n".join(map(str, found))


def test_every_subpackage_has_a_layer():
    on_disk = {p.name for p in PACKAGE_DIR.iterdir() if (p / "__init__.py").exists()}
    on_disk |= {p.stem for p in PACKAGE_DIR.glob("*.py") if p.stem != "__init__"}
    assert on_disk <= set(LAYERS), f"give these a place in LAYERS: {sorted(on_disk - set(LAYERS))}"


# -- the checker itself: each way of importing upwards is caught ------------------------------------

@pytest.mark.parametrize(
    ("source", "module", "line", "imported"),
    [
        ("from socialrec_pipeline.store import Store\n", "socialrec_pipeline.domain.graph",
         1, "socialrec_pipeline.store"),
        ("import socialrec_pipeline.defs.resources\n", "socialrec_pipeline.recording.writer",
         1, "socialrec_pipeline.defs.resources"),
        ("def f():\n    from socialrec_pipeline.stream.broker import EXCHANGE\n    return EXCHANGE\n",
         "socialrec_pipeline.store.tokens", 2, "socialrec_pipeline.stream.broker"),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from socialrec_pipeline.recording import writer\n",
         "socialrec_pipeline.providers.x", 3, "socialrec_pipeline.recording"),
        ("from ..defs import services\n", "socialrec_pipeline.recording.processor", 1, "socialrec_pipeline.defs"),
        ("from socialrec_pipeline import sandbox\n", "socialrec_pipeline.defs.resources",
         1, "socialrec_pipeline.sandbox"),
        ("import importlib\nimportlib.import_module('socialrec_pipeline.cli')\n", "socialrec_pipeline.sandbox.demo",
         2, "socialrec_pipeline.cli"),
        ("from socialrec_pipeline.newlayer import thing\n", "socialrec_pipeline.routing.route",
         1, "socialrec_pipeline.newlayer"),
    ],
    ids=["top-level", "import-statement", "function-level", "type-checking", "relative", "from-root",
         "import_module", "unknown-layer"],
)
def test_an_upward_import_is_reported(source, module, line, imported):
    assert [(v.line, v.imported) for v in violations_in(source, module)] == [(line, imported)]


@pytest.mark.parametrize(
    ("source", "module", "is_package"),
    [
        ("from socialrec_pipeline.domain.enums import Platform\n", "socialrec_pipeline.store.tokens", False),
        ("from . import apex\nfrom .route import route\n", "socialrec_pipeline.routing", True),
        ("from ..store import Store\n", "socialrec_pipeline.recording.writer", False),
        ("def f():\n    from socialrec_pipeline.defs import definitions\n", "socialrec_pipeline.sandbox.demo", False),
        ("from socialrec_pipeline.sandbox import demo\n", "socialrec_pipeline.cli", False),
        ("import json\nfrom dagster import op\n", "socialrec_pipeline.domain.events", False),
    ],
    ids=["lower", "relative-same-layer", "relative-lower", "sandbox-over-defs", "cli-over-all", "third-party"],
)
def test_a_downward_or_sideways_import_is_allowed(source, module, is_package):
    assert violations_in(source, module, is_package) == []


def test_a_bad_import_in_a_real_module_fails_the_package_scan(tmp_path):
    """The scan reads real files: copy a layer, plant one function-level upward import, see red."""
    copy = tmp_path / PACKAGE
    shutil.copytree(PACKAGE_DIR / "domain", copy / "domain", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PACKAGE_DIR / "__init__.py", copy / "__init__.py")
    assert package_violations(copy) == []
    target = copy / "domain" / "events.py"
    target.write_text(target.read_text() + "\n\ndef _late():\n    from socialrec_pipeline.defs import resources\n")
    found = package_violations(copy)
    assert [(v.module, v.imported) for v in found] == [("socialrec_pipeline.domain.events", "socialrec_pipeline.defs")]
