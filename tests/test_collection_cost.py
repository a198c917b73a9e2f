"""What every pytest-xdist worker pays before its first test: collecting every test module."""

from __future__ import annotations

from tests.conftest import IMPORTED_AT_COLLECTION, NOT_AT_COLLECTION


def test_collection_imports_none_of_the_libraries_kept_out_of_it():
    # Filled by this process's own collection (tests/conftest.py): with the whole suite collected it
    # names any test module, helper or fixture that imports one of them at module level.
    assert not IMPORTED_AT_COLLECTION, (
        f"imported while collecting: {sorted(IMPORTED_AT_COLLECTION)}; import them inside the tests or "
        f"fixtures that use them (tests/conftest.py, NOT_AT_COLLECTION: {NOT_AT_COLLECTION})"
    )
