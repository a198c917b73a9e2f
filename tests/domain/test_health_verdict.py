"""The recording_health verdict: down before degraded before healthy, one sentence each."""

from socialrec_pipeline.domain.health_verdict import ProviderFigures, Readiness, health_verdict

OK = ("ok", "last token recorded 3 min ago; 2 waiting")
READY = Readiness(passed=True, blocking=False, headline="ready: 20 ok, 0 warn, 0 fail")


def test_a_failing_doctor_check_makes_it_down_naming_the_first_blocker():
    refused = Readiness(
        passed=False,
        blocking=True,
        headline="down: soltracker — key refused, set SOL_TRACKER_API_KEY to a valid key (19 ok, 0 warn, 1 fail)",
    )
    verdict, why = health_verdict(OK, {}, refused)
    assert verdict == "down"
    assert why == "soltracker — key refused, set SOL_TRACKER_API_KEY to a valid key"


def test_a_stall_is_down_and_says_why():
    verdict, why = health_verdict(("stalled", "no token has ever been recorded while …"), {}, READY)
    assert verdict == "down" and "no token has ever been recorded" in why


def test_a_doctor_warning_is_degraded():
    warned = Readiness(False, False, "degraded: apify — APIFY_TOKEN unset, set it (19 ok, 1 warn, 0 fail)")
    assert health_verdict(OK, {}, warned) == ("degraded", "apify — APIFY_TOKEN unset, set it")


def test_unknown_figures_are_degraded_never_healthy():
    verdict, why = health_verdict(OK, {"queue_depth": "the broker could not be read"}, READY)
    assert verdict == "degraded" and "queue_depth" in why


def test_deployment_checks_not_run_yet_is_degraded():
    verdict, why = health_verdict(OK, {}, None)
    assert verdict == "degraded" and "deployment_ready" in why


def test_tokens_that_gave_up_are_degraded():
    verdict, why = health_verdict(OK, {}, READY, inbox_stuck=2)
    assert verdict == "degraded" and why.startswith("2 token(s) gave up")


def test_a_provider_failing_most_calls_is_degraded_a_few_errors_are_not():
    few = (ProviderFigures("x", 4, 4), ProviderFigures("gh", 10, 4))
    assert health_verdict(OK, {}, READY, providers=few)[0] == "healthy"
    failing = (ProviderFigures("x", 10, 6), ProviderFigures("gh", 10, 9))
    verdict, why = health_verdict(OK, {}, READY, providers=failing)
    assert verdict == "degraded" and why.startswith("gh failed 9 of 10 calls")


def test_down_wins_over_degraded():
    refused = Readiness(False, True, "down: mongodb — unreachable, check MONGODB_URI (0 ok, 0 warn, 1 fail)")
    verdict, why = health_verdict(("unknown", "could not read"), {"queue_depth": "x"}, refused, inbox_stuck=3)
    assert (verdict, why) == ("down", "mongodb — unreachable, check MONGODB_URI")


def test_healthy_says_so_with_the_keeping_up_reason():
    assert health_verdict(OK, {}, READY) == ("healthy", f"recording keeps up ({OK[1]})")
