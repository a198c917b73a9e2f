"""The embedded MongoDB-wire server (SecantusDB) used when MONGODB_URI is unset.

Only this module knows SecantusDB exists; everything else speaks pymongo to a `mongodb://` URI.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator


@contextlib.contextmanager
def embedded_mongo(storage_path: str | None = None) -> Iterator[str]:
    """Start SecantusDB in this process on a free loopback port; yield its URI; stop it after."""
    try:
        from secantus import SecantusDBServer  # imported lazily: production never needs it
    except ImportError as exc:  # the production image has no `local` extra
        raise RuntimeError(
            "MONGODB_URI is unset and the embedded database is not installed: set MONGODB_URI, "
            "or install the `local` extra (scripts/bootstrap.sh does) for a local MongoDB stand-in"
        ) from exc

    with contextlib.ExitStack() as stack:
        if storage_path is None:
            storage_path = stack.enter_context(tempfile.TemporaryDirectory(prefix="socialrec-mongo-"))
        server = SecantusDBServer(host="127.0.0.1", port=0, storage_path=storage_path)
        server.start()
        try:
            yield server.uri
        finally:
            server.stop()


@contextlib.contextmanager
def configured_or_embedded_mongo(configured_uri: str | None) -> Iterator[str]:
    """The configured URI when there is one (MONGODB_URI), else an embedded server for the block."""
    if configured_uri:
        yield configured_uri
        return
    with embedded_mongo() as uri:
        yield uri
