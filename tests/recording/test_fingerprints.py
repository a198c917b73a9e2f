"""tokens.fingerprints carries `domain:{apex}` of the token's website (SPEC §4)."""

from __future__ import annotations

from socialrec_pipeline.domain.events import TokenFlowEvent
from socialrec_pipeline.sandbox.soltracker import upstream_token

from . import harness
from .conftest import make_address


def record(h, **socials) -> str:
    address = make_address()
    h.upstream.put(upstream_token(address, **socials))
    event = TokenFlowEvent.model_validate({"tokenAddress": address, "totalInvestedAlphaFinders": 6})
    assert h.recorder.record_token(event, owner="test").outcome == "recorded"
    return address


def test_tokens_sharing_a_website_domain_meet_on_the_fingerprint(store, redis_client):
    h = harness.build(store, redis_client)
    try:
        a = record(h, website="https://www.shop.moon.co.uk/promo?utm_source=x", twitter="https://x.com/kol/status/1")
        b = record(h, website="moon.co.uk", telegram="N/A")
        c = record(h, website="https://app.other-site.io/")
        d = record(h, website="https://x.com/moon_sol")  # a social profile, not a site
        e = record(h, website="N/A")
        assert store.tokens.find_by_address(a).fingerprints == ["domain:moon.co.uk"]
        assert store.tokens.find_by_address(c).fingerprints == ["domain:other-site.io"]
        assert store.tokens.find_by_address(d).fingerprints == store.tokens.find_by_address(e).fingerprints == []
        assert sorted(t.address for t in store.tokens.find_by_fingerprint("domain:moon.co.uk")) == sorted([a, b])
    finally:
        h.server.stop()
