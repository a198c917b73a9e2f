"""Typed failures and the one mapping from a failure to a FetchStatus (SPEC §4.1)."""

from __future__ import annotations

from socialrec_pipeline.domain.enums import FetchStatus


class ProviderError(Exception):
    """A platform answered something other than the target. Subclasses fix the FetchStatus."""

    status: FetchStatus = FetchStatus.ERROR
    #: True when a request left this process (drives the `attempts` counter).
    external_call_made: bool = True

    def __init__(self, message: str, *, external_call_made: bool = True) -> None:
        super().__init__(message)
        self.external_call_made = external_call_made


class TargetNotFound(ProviderError):
    status = FetchStatus.NOT_FOUND


class TargetBlocked(ProviderError):
    """Private, invite-only, geo/IP block: a restriction on the target's side."""

    status = FetchStatus.BLOCKED


class AccountSuspended(ProviderError):
    status = FetchStatus.SUSPENDED

    def __init__(self, message: str, *, external_call_made: bool = True, platform_key: str | None = None) -> None:
        super().__init__(message, external_call_made=external_call_made)
        #: The account's key as the provider spelled it, when the answer names it (so the stored
        #: row can be flagged unavailable even where the URL's key differs in case).
        self.platform_key = platform_key


class TransientProviderError(ProviderError):
    """Network error, timeout, 5xx, 429, an unexpected shape: may succeed later."""

    status = FetchStatus.ERROR


class OutOfCredit(ProviderError):
    """A paid provider's credit or quota is spent. The caller skips the remaining paid URLs.

    The URL that met it is recorded `skipped_paid` with attempts unchanged: the target was never
    judged, and the URL becomes retryable once credit returns.
    """

    status = FetchStatus.SKIPPED_PAID


class GraphContractError(Exception):
    """A generator returned a graph that breaks the contract (a code bug): status `invalid`."""

    status = FetchStatus.INVALID

    def __init__(self, entry_url: str, reason: str) -> None:
        super().__init__(f"graph contract violated for {entry_url}: {reason}")
        self.entry_url = entry_url
        self.reason = reason


def status_of_error(error: BaseException) -> FetchStatus:
    """The FetchStatus a failure while recording one URL leaves behind."""
    if isinstance(error, (ProviderError, GraphContractError)):
        return error.status
    return FetchStatus.ERROR
