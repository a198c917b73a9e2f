"""The generator protocol and the registry from source type to generator."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from socialrec_pipeline.domain.enums import ObjectKind, Platform
from socialrec_pipeline.domain.errors import ProviderError, TargetNotFound, TransientProviderError
from socialrec_pipeline.domain.graph import SocialObjectGraph
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.routing.types import RoutedUrl

#: (object kind, platform, platform_key) → True when the stored row already holds a full profile
#: younger than the configured age, so a generator need not fetch it again.
ProfileIsFresh = Callable[[ObjectKind, Platform, str], bool]


@dataclass(frozen=True, slots=True)
class GenerateOptions:
    """Switches a generator may consult while building a graph (the gate has already run)."""

    enable_community: bool = False
    #: Asked before a free profile fetch for an account/venue the answer carried only embedded;
    #: None = no stored rows to consult, fetch every such profile.
    profile_is_fresh: ProfileIsFresh | None = None

    def needs_profile(self, kind: ObjectKind, platform: Platform, platform_key: str) -> bool:
        return self.profile_is_fresh is None or not self.profile_is_fresh(kind, platform, platform_key)


@runtime_checkable
class Generator(Protocol):
    #: Source types this generator answers for.
    source_types: frozenset[SourceType]
    #: False for generators that build a graph from the URL alone (no request leaves the process).
    makes_external_calls: bool

    def generate(
        self, routed: RoutedUrl, options: GenerateOptions, observed_at: datetime
    ) -> SocialObjectGraph:
        """Build the graph for one routed URL, or raise a `ProviderError` subclass."""
        ...


@runtime_checkable
class TargetResolver(Generator, Protocol):
    """A generator for short links: the target is resolved first, then gated and generated on its
    own (`TokenRecorder.fetch` decides paid-ness, the pool slot and the credit guard by it)."""

    def resolve_target(self, routed: RoutedUrl) -> RoutedUrl: ...

    def target_supported(self) -> list[SourceType]: ...

    def generate_target(
        self, target: RoutedUrl, options: GenerateOptions, observed_at: datetime
    ) -> SocialObjectGraph: ...


def lookup_key(routed: RoutedUrl, *, strip: str = "", lstrip: str = "") -> str:
    """The route's key without blanks, `strip` characters at both ends and `lstrip` ones in front;
    an empty key names nothing, so it is `not_found` before any request is made."""
    key = (routed.source_key or "").strip().strip(strip).lstrip(lstrip)
    if not key:
        raise TargetNotFound(f"{routed.canonical_url}: no key to look up", external_call_made=False)
    return key


#: What parsing can still trip over on an answer shape nobody foresaw (or on absurdly deep nesting).
SHAPE_ERRORS = (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError)


@contextmanager
def unexpected_shape_is_error(provider: str, what: str = "answer shape") -> Iterator[None]:
    """Belt and braces around a generator's parsing: typed provider errors pass through, any
    surprise the tolerant readers did not foresee becomes an `error` (retryable), never a crash."""
    try:
        yield
    except ProviderError:
        raise
    except SHAPE_ERRORS as exc:
        raise TransientProviderError(f"{provider}: unexpected {what} ({exc.__class__.__name__})") from None


class GeneratorRegistry:
    """Source type → generator. A source type without one is recorded `unsupported`."""

    def __init__(self, generators: Iterable[Generator] = ()) -> None:
        self._by_type: dict[SourceType, Generator] = {}
        for generator in generators:
            self.register(generator)

    def register(self, generator: Generator) -> None:
        for source_type in generator.source_types:
            if source_type in self._by_type:
                raise ValueError(f"two generators registered for {source_type}")
            self._by_type[source_type] = generator

    def for_source_type(self, source_type: SourceType) -> Generator | None:
        return self._by_type.get(source_type)

    @property
    def supported(self) -> Mapping[SourceType, Generator]:
        return dict(self._by_type)

    def close(self) -> None:
        """Close what the registered generators opened themselves (a generator with `close`)."""
        for generator in {id(g): g for g in self._by_type.values()}.values():
            close = getattr(generator, "close", None)
            if callable(close):
                close()
