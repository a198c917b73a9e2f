"""The collection order that hands each xdist worker its share of the slow tests first."""

from __future__ import annotations

from tests.conftest import worker_order


def _shares(items: list, workers: int) -> list[list]:
    """The contiguous shares pytest-xdist's worksteal scheduler hands out at the start."""
    out, rest = [], list(items)
    for share in range(workers):
        size = len(rest) // (workers - share)
        out.append(rest[:size])
        del rest[:size]
    return out


def test_each_workers_first_share_begins_with_its_slow_tests():
    items = [f"fast{i}" for i in range(50)] + [f"slow{i}" for i in range(10)] + [f"fast{i}" for i in range(50, 97)]
    ordered = worker_order(items, 4, lambda name: name.startswith("slow"))
    assert sorted(ordered) == sorted(items)  # a reordering: nothing lost, nothing twice
    shares = _shares(ordered, 4)
    slow_per_share = [[n for n in share if n.startswith("slow")] for share in shares]
    assert [len(s) for s in slow_per_share] == [3, 3, 2, 2]  # dealt round-robin
    for share, slow in zip(shares, slow_per_share, strict=True):
        assert share[: len(slow)] == slow  # each worker runs its slow tests before its fast ones


def test_one_worker_runs_the_slow_tests_first_in_collection_order():
    items = ["a", "slow1", "b", "slow2"]
    assert worker_order(items, 1, lambda name: name.startswith("slow")) == ["slow1", "slow2", "a", "b"]
