"""The shape of `socialrec_pipeline/`: code a reader can hold in their head.

- no function longer than 60 lines (from its `def` to its last line; decorators not counted);
- no module longer than 500 lines;
- no block of six statement lines inside function bodies that repeats another one (it should
  be one function).

Code that still breaks a rule is listed in an allowlist below with its current size. An entry may
only shrink: the test fails when a listed function grows, and when an entry is no longer needed
(remove it then). `ruff`'s C901 (pyproject.toml) bounds the branches of a function on top.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "socialrec_pipeline"
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 500
DUPLICATE_WINDOW = 6

#: (module, function) → its length today (none at the moment: every function is at most 60 lines).
FUNCTION_ALLOWLIST: dict[tuple[str, str], int] = {}
#: module → its length today (none at the moment).
MODULE_ALLOWLIST: dict[str, int] = {}
#: Sorted pairs of "module:line" whose bodies repeat each other today (none at the moment).
DUPLICATE_ALLOWLIST: set[tuple[str, ...]] = set()


def _modules() -> list[tuple[str, str]]:
    return [(p.relative_to(PACKAGE).as_posix(), p.read_text()) for p in sorted(PACKAGE.rglob("*.py"))]


def _functions(source: str) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def function_lengths() -> dict[tuple[str, str, int], int]:
    """(module, function, line) → lines from `def` to the function's last line."""
    return {
        (module, f.name, f.lineno): (f.end_lineno or f.lineno) - f.lineno + 1
        for module, source in _modules()
        for f in _functions(source)
    }


def _normalised(line: str) -> str | None:
    text = line.strip()
    return re.sub(r"\s+", " ", text) if text and not text.startswith("#") else None


def _body_lines(f: ast.FunctionDef | ast.AsyncFunctionDef) -> range:
    """The lines of a function's statements, without its signature and docstring."""
    body = f.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if not body:
        return range(0)
    return range(body[0].lineno, (f.end_lineno or f.lineno) + 1)


def repeated_blocks() -> set[tuple[str, ...]]:
    """Pairs (or more) of places whose next six statement lines are the same, after whitespace is
    normalised and comments dropped. Only the innermost function owning a line counts it."""
    windows: dict[str, set[str]] = defaultdict(set)
    for module, source in _modules():
        lines = source.splitlines()
        owner: dict[int, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        for f in sorted(_functions(source), key=lambda f: f.lineno):  # inner functions override
            for n in _body_lines(f):
                owner[n] = f
        by_function: dict[int, list[tuple[int, str]]] = defaultdict(list)
        for n, f in sorted(owner.items()):
            text = _normalised(lines[n - 1])
            if text is not None:
                by_function[id(f)].append((n, text))
        for kept in by_function.values():
            for k in range(len(kept) - DUPLICATE_WINDOW + 1):
                block = "\n".join(t for _, t in kept[k : k + DUPLICATE_WINDOW])
                if len(block) < 80:  # short closing lines, bare returns: not worth a function
                    continue
                windows[hashlib.sha1(block.encode()).hexdigest()].add(f"{module}:{kept[k][0]}")
    found: set[tuple[str, ...]] = set()
    for places in windows.values():
        if len(places) > 1:
            found.add(tuple(sorted(places)))
    return _first_of_each_run(found)


def _first_of_each_run(found: set[tuple[str, ...]]) -> set[tuple[str, ...]]:
    """A repeated block of 8 lines is 3 overlapping windows: keep the first of such a run."""
    def shifted(places: tuple[str, ...], by: int) -> tuple[str, ...]:
        return tuple(sorted(f"{p.rsplit(':', 1)[0]}:{int(p.rsplit(':', 1)[1]) + by}" for p in places))

    return {p for p in found if not any(shifted(p, -d) in found for d in range(1, DUPLICATE_WINDOW))}


def test_no_function_is_longer_than_60_lines():
    offenders = {
        (module, name): length
        for (module, name, _), length in function_lengths().items()
        if length > MAX_FUNCTION_LINES
    }
    new = {k: v for k, v in offenders.items() if k not in FUNCTION_ALLOWLIST}
    assert not new, "functions over 60 lines (split them): " + ", ".join(f"{m}::{f} ({n})" for (m, f), n in new.items())


def test_allowlisted_functions_only_shrink():
    lengths: dict[tuple[str, str], int] = {}
    for (module, name, _), length in function_lengths().items():
        lengths[(module, name)] = max(length, lengths.get((module, name), 0))
    grown = {k: (lengths[k], v) for k, v in FUNCTION_ALLOWLIST.items() if lengths.get(k, 0) > v}
    assert not grown, "allowlisted functions grew: " + ", ".join(
        f"{m}::{f} {n} > {v}" for (m, f), (n, v) in grown.items()
    )
    done = [k for k in FUNCTION_ALLOWLIST if lengths.get(k, 0) <= MAX_FUNCTION_LINES]
    assert not done, "no longer over 60 lines, remove from FUNCTION_ALLOWLIST: " + ", ".join(
        f"{m}::{f}" for m, f in done
    )


def test_no_module_is_longer_than_500_lines():
    lengths = {module: len(source.splitlines()) for module, source in _modules()}
    new = {m: n for m, n in lengths.items() if n > MAX_MODULE_LINES and m not in MODULE_ALLOWLIST}
    assert not new, "modules over 500 lines (split them along a seam): " + ", ".join(
        f"{m} ({n})" for m, n in new.items()
    )
    grown = {m: lengths.get(m, 0) for m, n in MODULE_ALLOWLIST.items() if lengths.get(m, 0) > n}
    assert not grown, f"allowlisted modules grew: {grown}"
    done = [m for m in MODULE_ALLOWLIST if lengths.get(m, 0) <= MAX_MODULE_LINES]
    assert not done, f"no longer over 500 lines, remove from MODULE_ALLOWLIST: {done}"


def test_no_block_of_six_lines_repeats_another():
    found = repeated_blocks()
    new = sorted(found - DUPLICATE_ALLOWLIST)
    assert not new, "repeated blocks of six lines (make them one function): " + "; ".join(" = ".join(p) for p in new)
    stale = sorted(DUPLICATE_ALLOWLIST - found)
    assert not stale, f"no longer repeated, remove from DUPLICATE_ALLOWLIST: {stale}"


def test_the_rules_see_what_they_guard(tmp_path, monkeypatch):
    """The checks above can fail: a long function, a long module and a repeated block are found."""
    package = tmp_path / "pkg"
    package.mkdir()
    body = "\n".join(f"    total = total + {i} * factor_of_the_step" for i in range(70))
    (package / "long.py").write_text(f"def long(factor_of_the_step):\n    total = 0\n{body}\n    return total\n")
    block = "\n".join(f"    value_{i} = compute_something(argument_{i}, other_argument)" for i in range(6))
    (package / "twice.py").write_text(f"def one():\n{block}\n\n\ndef two():\n{block}\n")
    (package / "big.py").write_text("\n".join(f"NAME_{i} = {i}" for i in range(501)) + "\n")
    monkeypatch.setitem(globals(), "PACKAGE", package)
    assert function_lengths()[("long.py", "long", 1)] == 73
    assert repeated_blocks() == {("twice.py:11", "twice.py:2")}
    assert {m: len(s.splitlines()) for m, s in _modules()}["big.py"] == 501
