"""How the integrity checks read and report (`integrity.py`): a bounded batch scan over `_id_`, the
sample of offending ids, and the outcome of one check.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pymongo.collection import Collection

#: Offending ids reported per check.
SAMPLE = 20
#: Cursor batch size of a scan.
SCAN_BATCH = 5_000


@dataclass
class CheckOutcome:
    name: str
    passed: bool
    violations: int
    sample_ids: list[str]
    counts: dict[str, int] = field(default_factory=dict)
    coverage: str = ""
    #: Whether the check read everything its rule covers; a check that did not cannot say "passed".
    complete: bool = True

    @property
    def state(self) -> str:
        """"failed" (violations found), "incomplete" (none in what was read, but not all was read) or "passed"."""
        if not self.passed:
            return "failed"
        return "passed" if self.complete else "incomplete"

    def summary(self) -> str:
        states = {
            "passed": "passed",
            "incomplete": "no violation in the part read, NOT everything read",
            "failed": f"FAILED ({self.violations} violation(s))",
        }
        return f"{self.name}: {states[self.state]}; {self.coverage}"


class Sample:
    """Counts violations and keeps the first `SAMPLE` ids."""

    def __init__(self) -> None:
        self.count = 0
        self.ids: list[str] = []

    def add(self, doc_id: Any) -> None:
        self.count += 1
        if len(self.ids) < SAMPLE:
            self.ids.append(str(doc_id))


class BoundedScan:
    """One hinted cursor over `_id_`, projected, stopped after `limit` documents."""

    def __init__(
        self,
        col: Collection[dict[str, Any]],
        projection: dict[str, Any],
        limit: int,
        query: dict[str, Any] | None = None,
    ) -> None:
        self.col = col
        self.projection = projection
        self.limit = limit
        self.query = query or {}
        self.scanned = 0
        self.total = 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        self.total = self.col.estimated_document_count()
        cursor = self.col.find(self.query, self.projection).hint("_id_").batch_size(SCAN_BATCH)
        if self.limit:
            cursor = cursor.limit(self.limit)
        try:
            for doc in cursor:
                self.scanned += 1
                yield doc
        finally:
            cursor.close()

    @property
    def complete(self) -> bool:
        return self.scanned >= self.total

    def coverage(self, what: str = "") -> str:
        extent = "every document" if self.complete else f"the first {self.scanned} by _id (limit {self.limit})"
        return (
            f"bounded batch scan of {self.col.name} on _id_: {self.scanned} of ~{self.total} documents read "
            f"({extent}){what}"
        )

    def counts(self) -> dict[str, int]:
        return {"scanned": self.scanned, "total": self.total}


def outcome_of(name: str, sample: Sample, counts: dict[str, int], coverage: str, complete: bool) -> CheckOutcome:
    return CheckOutcome(
        name=name,
        passed=sample.count == 0,
        violations=sample.count,
        sample_ids=sample.ids,
        counts={"violations": sample.count, **counts},
        coverage=coverage,
        complete=complete,
    )
