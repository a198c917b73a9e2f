"""Launch planning over the inbox: one active run per token, generations, idle entries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from socialrec_pipeline.domain.events import TokenFlowEvent
from socialrec_pipeline.stream.inbox import IDLE, LAUNCHED, RecordInbox, run_key
from socialrec_pipeline.stream.intake import EndedRun, TickLimits, plan_launches
from tests.broker import QUALIFYING_ADDRESSES

A = QUALIFYING_ADDRESSES[0]
NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
NO_MARKERS = lambda addresses: set()  # noqa: E731


def event(address=A):
    return TokenFlowEvent.model_validate({"tokenAddress": address, "totalInvestedAlphaFinders": 6})


def key(inbox: RecordInbox, generation: int, address: str = A) -> str:
    return run_key(address, inbox.find(address).entry_id, generation)


def inbox_for(db) -> RecordInbox:
    inbox = RecordInbox(db)
    inbox.ensure_indexes()
    return inbox


def test_duplicates_while_a_run_is_active_launch_nothing(fresh_db):
    inbox = inbox_for(fresh_db)
    inbox.accept([event(), event()], NOW)
    assert [launch.run_key for launch in plan_launches(inbox, NO_MARKERS, set(), NOW).launches] == [key(inbox, 0)]
    for _ in range(3):  # more duplicates arrive while the run is queued/running
        inbox.accept([event()], NOW)
        plan = plan_launches(inbox, NO_MARKERS, {A}, NOW)
        assert plan.launches == [] and plan.waiting == 1


def test_unknown_token_run_goes_idle_and_the_next_event_relaunches_it(fresh_db):
    inbox = inbox_for(fresh_db)
    inbox.accept([event()], NOW)
    plan_launches(inbox, NO_MARKERS, set(), NOW)
    later = NOW + timedelta(minutes=30)
    # The run ended green without a marker (upstream does not know the token) and nobody asked
    # again: the entry goes idle (no automatic relaunch).
    green = lambda keys: {k: EndedRun("run-1", "SUCCESS", "unknown_token") for k in keys}  # noqa: E731
    plan = plan_launches(inbox, NO_MARKERS, set(), later, ended_runs=green)
    assert plan.launches == [] and plan.idled == 1 and inbox.find(A).state == IDLE
    inbox.accept([event()], later)
    plan = plan_launches(inbox, NO_MARKERS, set(), later)
    assert [launch.run_key for launch in plan.launches] == [key(inbox, 1)]
    assert inbox.find(A).state == LAUNCHED


def test_event_during_a_failed_run_relaunches_once_after_the_grace(fresh_db):
    inbox = inbox_for(fresh_db)
    inbox.accept([event()], NOW)
    plan_launches(inbox, NO_MARKERS, set(), NOW)
    inbox.accept([event()], NOW)  # arrives while launched → relaunch wanted
    # Within the grace the same key is re-yielded (Dagster deduplicates it), never a new one.
    for minutes in (0, 1, 4):
        plan = plan_launches(inbox, NO_MARKERS, set(), NOW + timedelta(minutes=minutes))
        assert [launch.run_key for launch in plan.launches] == [key(inbox, 0)]
    later = NOW + timedelta(minutes=6)
    assert [launch.run_key for launch in plan_launches(inbox, NO_MARKERS, set(), later).launches] == [key(inbox, 1)]
    assert [launch.run_key for launch in plan_launches(inbox, NO_MARKERS, set(), later).launches] == [key(inbox, 1)]


def test_marker_removes_entry_and_limits_bound_launches(fresh_db):
    inbox = inbox_for(fresh_db)
    inbox.accept([event(a) for a in QUALIFYING_ADDRESSES], NOW)
    plan = plan_launches(inbox, lambda addrs: {A} & set(addrs), set(), NOW, TickLimits(max_launches=1))
    assert plan.done == 1 and len(plan.launches) == 1
    assert inbox.find(A) is None


def test_a_recreated_entry_never_reuses_a_run_key(fresh_db):
    """Marker written → entry deleted; the marker later removed by an operator → a new entry whose
    run keys Dagster has never seen (a reused key would be dropped silently)."""
    inbox = inbox_for(fresh_db)
    inbox.accept([event()], NOW)
    first = plan_launches(inbox, NO_MARKERS, set(), NOW).launches[0].run_key
    plan = plan_launches(inbox, lambda addrs: {A} & set(addrs), set(), NOW)  # marker exists
    assert plan.done == 1 and inbox.find(A) is None
    inbox.accept([event()], NOW)
    second = plan_launches(inbox, NO_MARKERS, set(), NOW).launches[0].run_key
    assert second != first and second.endswith(":0")
