"""Automatic relaunch of tokens whose run failed (SPEC §6.8), as pure planning over the real inbox:
backoff steps, the cap, visibility of what gave up, and the inbox staying bounded."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from socialrec_pipeline.domain.events import TokenFlowEvent
from socialrec_pipeline.stream.inbox import IDLE, LAUNCHED, RETRYING, STUCK, RecordInbox
from socialrec_pipeline.stream.intake import EndedRun, TickLimits, plan_launches, wants_retry

A = "7GCihgDB8fe6KNjn2MYtkzZcRjQy3t9GHdC8uHYmW2hr"
B = "So11111111111111111111111111111111111111112"
NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
LIMITS = TickLimits()
NO_MARKERS = lambda addresses: set()  # noqa: E731


def event(address=A, **extra):
    return TokenFlowEvent.model_validate({"tokenAddress": address, "totalInvestedAlphaFinders": 6, **extra})


@pytest.fixture
def inbox(fresh_db) -> RecordInbox:
    inbox = RecordInbox(fresh_db)
    inbox.ensure_indexes()
    return inbox


def failed(run_id="run-x"):
    return lambda keys: {k: EndedRun(run_id, "FAILURE") for k in keys}


def plan(inbox, at, ended=None, markers=NO_MARKERS, active=frozenset()):
    return plan_launches(inbox, markers, active, at, LIMITS, ended_runs=ended or failed())


def test_a_failed_run_is_relaunched_after_each_backoff_step_then_the_entry_is_stuck_and_visible(inbox):
    inbox.accept([event()], NOW)
    first = plan(inbox, NOW)
    keys = [first.launches[0].run_key]
    at = NOW
    delays = []
    for step, _delay in enumerate(LIMITS.backoff, start=1):
        at = at + LIMITS.relaunch_grace  # the run has ended (red) and the grace is over
        p = plan(inbox, at, failed(f"run-{step}"))
        assert p.launches == [] and p.backed_off == 1
        entry = inbox.find(A)
        assert entry.state == RETRYING and entry.failures == step and entry.last_failed_run_id == f"run-{step}"
        delays.append(entry.check_at - at)
        assert plan(inbox, entry.check_at - timedelta(seconds=1)).launches == []  # not before it is due
        at = entry.check_at
        p = plan(inbox, at)
        assert p.relaunched == 1 and len(p.launches) == 1
        keys.append(p.launches[0].run_key)
        assert inbox.find(A).state == LAUNCHED
    assert delays == [timedelta(minutes=m) for m in (1, 5, 15, 60, 60, 60)]
    assert len(set(keys)) == len(keys) and keys[-1].endswith(f":{len(LIMITS.backoff)}")  # new key each time

    at += LIMITS.relaunch_grace
    p = plan(inbox, at, failed("run-last"))
    assert p.gave_up == 1 and p.launches == []
    stuck = inbox.stuck_entries()
    assert [(e.token_address, e.state, e.last_failed_run_id) for e in stuck] == [(A, STUCK, "run-last")]
    assert inbox.count_in_state(STUCK) == 1
    # Nothing relaunches it automatically any more, however long one waits...
    for hours in (1, 5, 24):
        assert plan(inbox, at + timedelta(hours=hours)).launches == []
    # ...but a new event does, once.
    inbox.accept([event()], at + timedelta(days=1))
    assert len(plan(inbox, at + timedelta(days=1)).launches) == 1


def test_a_lost_request_and_a_lock_held_elsewhere_are_retried_a_cancelled_or_unknown_token_run_is_not():
    assert wants_retry(None)  # the request never became a run
    assert wants_retry(EndedRun("r", "FAILURE"))
    assert wants_retry(EndedRun("r", "FAILURE", "upstream_failed"))
    assert wants_retry(EndedRun("r", "SUCCESS", "locked"))
    assert not wants_retry(EndedRun("r", "SUCCESS", "unknown_token"))
    assert not wants_retry(EndedRun("r", "CANCELED"))


def test_a_retrying_token_is_relaunched_at_once_by_an_event_and_done_entries_are_removed(inbox):
    inbox.accept([event(), event(B)], NOW)
    plan(inbox, NOW)
    at = NOW + LIMITS.relaunch_grace
    plan(inbox, at)  # both runs failed
    assert inbox.find(A).state == RETRYING and inbox.find(B).state == RETRYING
    inbox.accept([event()], at)  # an event for A: no need to wait for the backoff
    p = plan(inbox, at)
    assert [launch.token_address for launch in p.launches] == [A]
    # B was recorded meanwhile (reconcile): when it is due it is removed, not relaunched.
    p = plan(inbox, at + timedelta(minutes=2), markers=lambda addrs: {B} & set(addrs))
    assert p.done == 1 and inbox.find(B) is None and p.new_launches == 0


def test_resting_entries_are_swept_for_markers_and_idle_ones_expire(inbox):
    inbox.accept([event(), event(B)], NOW)
    plan(inbox, NOW)
    green = lambda keys: {k: EndedRun("r", "SUCCESS", "unknown_token") for k in keys}  # noqa: E731
    at = NOW + LIMITS.relaunch_grace
    assert plan(inbox, at, green).idled == 2
    assert inbox.find(A).state == IDLE
    # A gets a marker from the reconcile of its hour: the next sweep removes it.
    p = plan(inbox, at + LIMITS.sweep_interval, markers=lambda addrs: {A} & set(addrs))
    assert p.done == 1 and inbox.find(A) is None
    # B never gets one and no event asks again: removed after the retention, never relaunched.
    later = at + LIMITS.idle_retention + timedelta(minutes=1)
    for _ in range(2):
        p = plan(inbox, later)
        assert p.launches == []
    assert inbox.find(B) is None
    assert inbox.count_in_state(IDLE) == 0


def test_an_entry_whose_token_has_an_active_run_is_not_relaunched_by_the_backoff(inbox):
    inbox.accept([event()], NOW)
    plan(inbox, NOW)
    at = NOW + LIMITS.relaunch_grace
    plan(inbox, at)
    due = inbox.find(A).check_at
    p = plan(inbox, due, active={A})  # an operator launched it by hand meanwhile
    assert p.launches == [] and p.waiting == 1 and inbox.find(A).state == RETRYING


def test_idle_entries_from_before_check_at_are_swept_too(fresh_db):
    fresh_db["record_inbox"].insert_one(
        {
            "token_address": A,
            "state": IDLE,
            "generation": 2,
            "relaunch": False,
            "last_event_at": NOW - timedelta(days=30),
        }
    )
    inbox = RecordInbox(fresh_db)
    inbox.ensure_indexes()  # on start-up
    p = plan(inbox, NOW)
    assert p.expired == 1 and inbox.find(A) is None


def test_each_relaunch_follows_the_end_of_the_run_before_by_its_backoff_step_alone(inbox):
    """The grace covers a request that has not become a run; it is not added to every step."""
    run_s = timedelta(seconds=20)  # each run fails 20 s after its launch; the next tick sees it
    inbox.accept([event()], NOW)
    at = NOW
    launches = [plan(inbox, at).launches[0]]
    launched_at = [at]
    for step in range(1, len(LIMITS.backoff) + 1):
        at = at + run_s
        p = plan(inbox, at, failed(f"run-{step}"))
        assert p.backed_off == 1 and p.rerequested == 0, f"step {step}: the ended run was not seen within the grace"
        at = inbox.find(A).check_at
        p = plan(inbox, at)
        assert p.relaunched == 1
        launches.append(p.launches[0])
        launched_at.append(at)
    gaps = [b - a for a, b in zip(launched_at, launched_at[1:], strict=False)]
    assert gaps == [run_s + step for step in LIMITS.backoff]
    assert launched_at[-1] - NOW == sum(LIMITS.backoff, timedelta()) + run_s * len(LIMITS.backoff)
    p = plan(inbox, at + run_s, failed("run-last"))
    assert p.gave_up == 1 and inbox.find(A).state == STUCK


def test_a_request_that_never_became_a_run_is_given_the_grace_then_backs_off(inbox):
    inbox.accept([event()], NOW)
    [launch] = plan(inbox, NOW).launches
    nothing = lambda keys: {}  # noqa: E731 - no run for the key yet
    p = plan(inbox, NOW + timedelta(minutes=1), nothing)
    assert [x.run_key for x in p.launches] == [launch.run_key] and p.rerequested == 1  # same key again
    p = plan(inbox, NOW + LIMITS.relaunch_grace, nothing)
    entry = inbox.find(A)
    assert p.backed_off == 1 and entry.state == RETRYING and entry.last_failed_run_id is None


def test_a_new_event_starts_the_backoff_over(inbox):
    inbox.accept([event()], NOW)
    at = NOW
    plan(inbox, at)
    for step in range(3):  # three failed runs: the next step would be the fourth
        at += timedelta(seconds=30)
        plan(inbox, at)
        if step < 2:
            at = inbox.find(A).check_at
            plan(inbox, at)
    assert inbox.find(A).failures == 3 and inbox.find(A).state == RETRYING
    inbox.accept([event()], at)  # an event while it waits for its fourth step: launched at once
    assert len(plan(inbox, at).launches) == 1
    at += timedelta(seconds=30)
    plan(inbox, at)  # that run failed: with the count reset, the first step again
    entry = inbox.find(A)
    assert entry.failures == 1 and entry.check_at == at + LIMITS.backoff[0]
    # A stuck token that receives an event gets the whole schedule again, not one try.
    for _ in range(len(LIMITS.backoff)):
        at = inbox.find(A).check_at
        plan(inbox, at)
        at += timedelta(seconds=30)
        plan(inbox, at)
    assert inbox.find(A).state == STUCK
    inbox.accept([event()], at + timedelta(hours=1))
    at += timedelta(hours=1)
    assert len(plan(inbox, at).launches) == 1
    at += timedelta(seconds=30)
    plan(inbox, at)
    entry = inbox.find(A)
    assert entry.state == RETRYING and entry.failures == 1


def test_a_green_recorded_run_without_a_marker_read_back_is_relaunched_not_left_idle(inbox):
    """The run said "recorded", but the marker is not there (the database lost it)."""
    assert wants_retry(EndedRun("r", "SUCCESS", "recorded"))
    assert wants_retry(EndedRun("r", "SUCCESS", "already_recorded"))
    inbox.accept([event()], NOW)
    plan(inbox, NOW)
    green = lambda keys: {k: EndedRun("r", "SUCCESS", "recorded") for k in keys}  # noqa: E731
    p = plan(inbox, NOW + timedelta(seconds=30), green)
    assert p.idled == 0 and p.backed_off == 1 and inbox.find(A).state == RETRYING
    assert len(plan(inbox, inbox.find(A).check_at).launches) == 1


def test_a_marker_written_between_the_tick_s_reads_ends_the_entry_instead_of_a_backoff(inbox):
    """The run wrote its marker and ended after the tick read the markers: read once more."""
    inbox.accept([event()], NOW)
    plan(inbox, NOW)
    reads = []

    def marker_appears(addresses):
        reads.append(list(addresses))
        return {A} & set(addresses) if len(reads) > 1 else set()

    green = lambda keys: {k: EndedRun("r", "SUCCESS", "recorded") for k in keys}  # noqa: E731
    p = plan(inbox, NOW + timedelta(seconds=30), green, markers=marker_appears)
    assert p.done == 1 and p.backed_off == 0 and inbox.find(A) is None
    assert reads == [[A], [A]]
