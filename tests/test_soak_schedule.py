"""bench/soak.py's fault plan: a long soak repeats every fault, once in each window of the stream."""

from __future__ import annotations

import random
from collections import Counter

from bench.soak import FAULTS, fault_plan


def plan(seconds: float, rounds: int, seed: int = 7) -> list[tuple[float, str]]:
    return fault_plan(random.Random(seed), seconds, rounds)


def test_every_fault_lands_once_in_each_window_between_10_and_80_percent_of_it():
    seconds, rounds = 3600.0, 4
    faults = plan(seconds, rounds)
    assert Counter(name for _, name in faults) == {name: rounds for name in FAULTS}
    assert [at for at, _ in faults] == sorted(at for at, _ in faults)
    window = seconds / rounds
    for r in range(rounds):
        inside = [name for at, name in faults if r * window + 0.1 * window <= at <= r * window + 0.8 * window]
        assert sorted(inside) == sorted(FAULTS), (r, inside)


def test_one_round_is_the_plan_a_seed_gave_before_rounds_existed():
    rng = random.Random(19)
    before = sorted((rng.uniform(0.1, 0.8) * 300, name) for name in FAULTS)
    assert plan(300, 1, seed=19) == before
