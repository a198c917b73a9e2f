"""Canned platform answers in the documented shapes (contracts/platform-apis.md).

Each module builds payloads and registers routes on a `FixtureServer`; tests and the offline demo
share them, so a fixture can never drift into a shape invented for one test.
"""

from __future__ import annotations
