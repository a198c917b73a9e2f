"""What a failed MongoDB write means: the document was refused (its content), or the database failed.

One rule for every caller: the stream dead-letters a message whose inbox entry is refused, and the
recording path gives a URL whose graph is refused a status, while everything else MongoDB answers
is our infrastructure (SPEC §4.1: never a URL status).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import bson.errors
from pymongo.errors import BulkWriteError, DocumentTooLarge, WriteError

#: Server write errors caused by the document itself, by code: BSONObjectTooLarge (10334: an
#: insert, or an update that grows the document), "Resulting document after update is larger than"
#: (17419), "Document to upsert is larger than" (17420: an upsert; SecantusDB and mongod alike) and
#: KeyTooLong (17280, an index key). Not BadValue (2) as such: a hint naming a missing index
#: answers that too (`_SIZE_WORDING` catches the one BadValue that is the document's fault).
_CONTENT_CODES = frozenset({10334, 17419, 17420, 17280})
#: The same errors by name, for a server that reports a code we have not listed.
_CONTENT_CODE_NAMES = frozenset({"BSONObjectTooLarge", "KeyTooLong", "OBSOLETE_KeyTooLong"})
#: What a size refusal says, whatever its code: mongod's older inserts answer BadValue (2) with
#: "object to insert too large", an update "... is larger than 16777216", a key "key too large to index".
_SIZE_WORDING = re.compile(r"too large|larger than \d+|exceeds (the )?maximum", re.IGNORECASE)


def refuses_document(exc: BaseException) -> bool:
    """True when a write failed because of the document's content (BSON cannot encode a string or
    an integer, the document or an index key is too large). Anything else — connection, timeout,
    write concern, a missing index, a bug — is not the document's fault.

    A server error is judged by what it means: its code, else its code name, else its wording
    (a size refusal); a bulk write is the content's fault only when every error in it is and the
    write concern was met."""
    if isinstance(exc, (bson.errors.BSONError, UnicodeError, OverflowError, DocumentTooLarge)):
        return True
    if isinstance(exc, BulkWriteError):
        details = exc.details or {}
        errors = details.get("writeErrors") or []
        return bool(errors) and not details.get("writeConcernErrors") and all(_refuses(e) for e in errors)
    if isinstance(exc, WriteError):
        return _refuses({"code": exc.code, "errmsg": str(exc), **(exc.details or {})})
    return False


def _refuses(error: Mapping[str, Any]) -> bool:
    """One server write error (`{code, codeName?, errmsg}`): does it refuse the document itself?"""
    if error.get("code") in _CONTENT_CODES or error.get("codeName") in _CONTENT_CODE_NAMES:
        return True
    return bool(_SIZE_WORDING.search(str(error.get("errmsg") or "")))
