"""Bounding paid calls: where a paid call may run (a slot of the paid pool) and the messages
operators read when a paid URL is held back.

`TokenRecorder.fetch` is the one place every job calls a provider through. It decides whether a
call is paid by the routed URL or, for a short link, by its resolved target, and a paid call runs
only inside `PaidSlots.slot()` and only while the credit guard is not tripped (checked again once
the slot is held, right before the call).

The slots are Dagster's `paid_social_api` pool in the code location (`defs/paid_pool.py`): a step
in the pool holds one (`HeldPaidSlot`); `record_url` and the free passes of retry, metric refresh
and reconcile defer a paid call to a step of the pool (`DeferPaidCalls`; reconcile defers the
whole token). Services used without Dagster (tests, tools) are unbounded.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Protocol

from socialrec_pipeline.recording.locks import CreditGuardState


class PaidSlotUnavailable(RuntimeError):
    """This step may not make the paid call (`NoPaidSlot`): the URL is an `error` without any call."""


class PaidCallDeferred(RuntimeError):
    """This step may not make the paid call, a later pooled step will: no call, no attempt here."""


class PaidSlots(Protocol):
    def slot(self, label: str) -> contextlib.AbstractContextManager[None]:
        """Hold one paid-call slot while the block runs; raises `PaidSlotUnavailable` (no call
        allowed) or `PaidCallDeferred` (a pooled step makes it)."""
        ...


class UnboundedPaidSlots:
    """No cap: for services used outside Dagster (the caller bounds them itself)."""

    @contextlib.contextmanager
    def slot(self, label: str) -> Iterator[None]:
        yield


class HeldPaidSlot(UnboundedPaidSlots):
    """The step itself runs in the paid pool (`record_paid_url`, `reconcile_paid_token`, ...): its
    slot covers every call it makes."""


class NoPaidSlot:
    """A step that may not make paid calls at all: a paid target is held back, never called."""

    @contextlib.contextmanager
    def slot(self, label: str) -> Iterator[None]:
        raise PaidSlotUnavailable(f"{label}: paid calls are not allowed in this step")
        yield  # pragma: no cover


class DeferPaidCalls:
    """A step outside the paid pool (`record_url`, the free passes): a paid call (one found only
    once a short link is resolved, too) is not made here but handed to a pooled step."""

    @contextlib.contextmanager
    def slot(self, label: str) -> Iterator[None]:
        raise PaidCallDeferred(f"{label}: a paid target, deferred to a step of the paid pool")
        yield  # pragma: no cover


def credit_message(state: CreditGuardState | None) -> str:
    """The `detail` of a URL held back by the credit guard."""
    described = state.describe() if state is not None else "tripped"
    return f"paid credit exhausted: the credit guard is {described}"
