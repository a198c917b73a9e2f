"""Drive the Dagster UI of a running sandbox (started by scripts/ui_check.sh) in headless Chromium.

Prepares what an operator would look at (demo events published, one reconcile hour, the integrity
checks and recording_health run), then visits: the jobs list, the sensor's ticks, a stream run's
URL table, the reconcile coverage, the asset checks and a health plot. Each page is asserted on
by what it shows and saved as a screenshot in --out. Exit status 0 only when every check passed.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
from playwright.sync_api import Page, expect, sync_playwright

ROOT = Path(__file__).resolve().parents[1]
STATUS_WORDS = [
    "ok",
    "not_found",
    "blocked",
    "suspended",
    "invalid",
    "exhausted",
    "error",
    "unsupported",
    "skipped_paid",
]


class UI:
    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"

    def graphql(self, query: str, variables: dict | None = None) -> dict:
        reply = httpx.post(f"{self.base}/graphql", json={"query": query, "variables": variables or {}}, timeout=30)
        reply.raise_for_status()
        body = reply.json()
        if body.get("errors"):
            raise RuntimeError(body["errors"])
        return body["data"]

    def runs(self, job: str, tags: dict[str, str] | None = None) -> list[dict]:
        query = """query($filter: RunsFilter!) { runsOrError(filter: $filter) {
            ... on Runs { results { runId status tags { key value } } } } }"""
        flt: dict = {"pipelineName": job}
        if tags:
            flt["tags"] = [{"key": k, "value": v} for k, v in tags.items()]
        return self.graphql(query, {"filter": flt})["runsOrError"]["results"]

    def backfills(self) -> list[dict]:
        query = "{ partitionBackfillsOrError { ... on PartitionBackfills { results { id status } } } }"
        return self.graphql(query)["partitionBackfillsOrError"]["results"]

    def launch(self, job: str, tags: dict[str, str] | None = None) -> str:
        from dagster_graphql import DagsterGraphQLClient

        host, port = self.base.removeprefix("http://").split(":")
        return DagsterGraphQLClient(host, port_number=int(port)).submit_job_execution(job, tags=tags or {})

    def wait_run(self, job: str, run_id: str, timeout: float = 240) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = next((r["status"] for r in self.runs(job) if r["runId"] == run_id), None)
            if status in ("SUCCESS", "FAILURE", "CANCELED"):
                return status
            time.sleep(2)
        raise TimeoutError(f"{job} run {run_id} did not finish in {timeout} s")

    def failure_of(self, run_id: str) -> str:
        """What a run that did not succeed said: its error events' messages, the last ones first
        (a CI log keeps only the head and the tail of what a failing check printed)."""
        query = """query($runId: ID!) { logsForRun(runId: $runId) { ... on EventConnection { events {
            __typename ... on MessageEvent { message stepKey }
            ... on ErrorEvent { error { message } } } } } }"""
        events = self.graphql(query, {"runId": run_id})["logsForRun"].get("events") or []
        lines = [
            f"{e['__typename']} {e.get('stepKey') or ''}: {e.get('message', '')} "
            f"{(e.get('error') or {}).get('message', '')}"
            for e in events
            if e.get("error") or e["__typename"] in ("RunFailureEvent", "EngineEvent", "ExecutionStepFailureEvent")
        ]
        return "\n".join(line.strip()[:800] for line in lines[-8:]) or "(the run logged no error)"


def step(name: str) -> None:
    print(f"--> {name}", flush=True)


def wait_for_ui(ui: UI, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    query = "{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus } } } }"
    while time.monotonic() < deadline:
        try:
            entries = ui.graphql(query)["workspaceOrError"]["locationEntries"]
            if entries and all(e["loadStatus"] == "LOADED" for e in entries):
                return
        except (httpx.HTTPError, RuntimeError, KeyError, TypeError):
            pass
        time.sleep(2)
    raise TimeoutError("the Dagster UI did not come up with its code location loaded")


def prepare(ui: UI, dagster_home: Path) -> str:
    """Publish demo events, wait for the stream runs, run one reconcile hour, integrity and health."""
    env_file = dagster_home / "sandbox.env"
    deadline = time.monotonic() + 60
    while not env_file.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    step("publishing demo events (fresh addresses) to this sandbox's queue")
    env = {**os.environ, "DAGSTER_HOME": str(dagster_home)}
    subprocess.run([str(ROOT / ".venv/bin/socialrec"), "sandbox", "publish"], env=env, check=True, timeout=60)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        done = [r for r in ui.runs("record_token_job", {"source": "stream"}) if r["status"] == "SUCCESS"]
        if len(done) >= 2:
            break
        time.sleep(2)
    else:
        raise TimeoutError("the sensor did not record the two demo tokens within 240 s")
    plant_stuck_token()
    step("running one reconcile hour, the integrity checks, the operator checks and recording_health")
    hour = (dagster_home / "reconcile_start").read_text().strip()
    launched = [
        ("reconcile_job", ui.launch("reconcile_job", {"dagster/partition": hour})),
        ("integrity_job", ui.launch("integrity_job")),
        ("operator_checks_job", ui.launch("operator_checks_job")),
        ("recording_health_job", ui.launch("recording_health_job")),
    ]
    for job, run_id in launched:
        status = ui.wait_run(job, run_id)
        if status != "SUCCESS":
            raise AssertionError(f"{job} run {run_id} ended {status}:\n{ui.failure_of(run_id)}")
    return hour


STUCK_ADDRESS = "UiCheckStuck111111111111111111111111111111"


def plant_stuck_token() -> None:
    """One record_inbox entry that gave up after every relaunch, so the stuck-tokens table has a row
    (a real one takes three failed runs and their backoff). `check_at` is far away: no tick touches it."""
    from pymongo import MongoClient

    step("planting one stuck token in record_inbox")
    uri = f"mongodb://127.0.0.1:{os.environ['SOCIALREC_LOCAL_MONGO_PORT']}/?directConnection=true"
    client: MongoClient = MongoClient(uri, serverSelectionTimeoutMS=10_000)
    now = datetime.now(UTC)
    client[os.environ.get("MONGODB_DATABASE", "ui_check")]["record_inbox"].update_one(
        {"token_address": STUCK_ADDRESS},
        {
            "$set": {
                "state": "stuck",
                "symbol": "STUCK",
                "generation": 4,
                "failures": 4,
                "last_failed_run_id": "planted-by-ui-check",
                "last_failed_at": now,
                "received_at": now,
                "last_event_at": now,
                "check_at": datetime(2100, 1, 1, tzinfo=UTC),
            }
        },
        upsert=True,
    )
    client.close()


COMMUNITY_DIALOG = "Join the Dagster community"  # shown once per browser profile, some time after load


def dismiss_dialog(page: Page) -> None:
    dialog = page.get_by_text(COMMUNITY_DIALOG)
    if not dialog.count():
        return
    try:
        page.get_by_role("button", name="Skip").click(timeout=5000)
        dialog.wait_for(state="hidden", timeout=5000)
    except Exception as exc:  # noqa: BLE001 - a dialog we cannot close only spoils a screenshot
        print(f"    could not close the community dialog: {type(exc).__name__}", flush=True)


def open_page(page: Page, url: str) -> None:
    page.goto(url)
    page.wait_for_load_state("networkidle")
    dismiss_dialog(page)


def shot(page: Page, out: Path, name: str) -> None:
    page.wait_for_timeout(1500)
    dismiss_dialog(page)
    page.screenshot(path=str(out / f"{name}.png"), full_page=False)
    print(f"    saved {name}.png", flush=True)


def lines_of(page: Page, selector_text: str) -> list[int]:
    """How many lines each table cell holding exactly `selector_text` is rendered on."""
    return page.evaluate(
        """(word) => Array.from(document.querySelectorAll('td')).filter(td => td.textContent.trim() === word)
            .map(td => { const r = document.createRange(); r.selectNodeContents(td);
                         return new Set(Array.from(r.getClientRects()).map(x => Math.round(x.top))).size; })""",
        selector_text,
    )


def visit(ui: UI, out: Path, hour: str) -> None:
    pages = [
        jobs_list,
        sensor_ticks,
        stream_run_url_table,
        reconcile_coverage_bar,
        integrity_checks,
        asset_catalog,
        lineage,
        health_plots,
        health_verdict,
        stuck_tokens_table,
        dead_letters_table,
        operator_checks,
        reconcile_backfill,
    ]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        page.set_default_timeout(30_000)
        for check_page in pages:
            check_page(page, ui, out, hour)
        browser.close()


def jobs_list(page: Page, ui: UI, out: Path, hour: str) -> None:
    step("jobs list")
    open_page(page, f"{ui.base}/jobs")
    for job in (
        "record_token_job",
        "reconcile_job",
        "retry_job",
        "metric_refresh_job",
        "integrity_job",
        "recording_health_job",
    ):
        expect(page.get_by_text(job, exact=True).first).to_be_visible()
    shot(page, out, "01-jobs")


def sensor_ticks(page: Page, ui: UI, out: Path, hour: str) -> None:
    step("the sensor's ticks")
    open_page(page, f"{ui.base}/locations/socialrec_pipeline/sensors/token_flow_sensor")
    expect(page.get_by_text("every 5 s", exact=False).first).to_be_visible()
    # each tick says what it did; an idle one says `idle`. A tick on an empty queue listens up to
    # SOCIALREC_SENSOR_LISTEN_SECONDS (20 s) first, so ticks come ~25 s apart, and while the demo's
    # stuck token is relaunched (after 1, 5, 15 min) two or three ticks in a row have work to
    # report (recorded, launched, waiting): a minute was once not enough to see an idle one.
    idle = page.get_by_text('{"why": "idle', exact=False).first
    for _ in range(36):
        if idle.count():
            break
        time.sleep(5)
        open_page(page, f"{ui.base}/locations/socialrec_pipeline/sensors/token_flow_sensor")
    expect(idle).to_be_visible()
    shot(page, out, "02-sensor-ticks")


def stream_run_url_table(page: Page, ui: UI, out: Path, hour: str) -> None:
    step("a stream run's URL table")
    runs = [r for r in ui.runs("record_token_job", {"source": "stream"}) if r["status"] == "SUCCESS"]
    for run in runs:  # the POPCAT-shaped demo token has a TikTok URL: skipped_paid
        open_page(page, f"{ui.base}/runs/{run['runId']}")
        # A finished run's event log opens at its end, where write_marker's output (the URL table) is.
        expect(page.get_by_text("Show schema").first).to_be_visible()
        page.get_by_text("View full message").first.click()
        dialog = page.get_by_role("dialog")
        expect(dialog.get_by_text("api_call").first).to_be_visible()
        shown = [w for w in STATUS_WORDS if lines_of(page, w)]
        assert shown, "the URL table shows no status"
        broken = {w: lines_of(page, w) for w in shown if any(n > 1 for n in lines_of(page, w))}
        if broken:
            shot(page, out, "03-stream-run-url-table-BROKEN")
            widths = page.evaluate(
                """() => Array.from(document.querySelectorAll('table'))
                    .filter(t => t.textContent.includes('api_call'))
                    .map(t => [t.offsetWidth, Array.from(t.querySelectorAll('tr')[0].children)
                        .map(c => [c.textContent.trim(), c.offsetWidth])])"""
            )
            raise AssertionError(f"status words broken across lines: {broken}; tables (width, columns): {widths}")
        if "skipped_paid" in shown:
            expect(dialog.get_by_text("paid platform while paid fetching is disabled").first).to_be_visible()
            shot(page, out, "03-stream-run-url-table")
            page.get_by_role("button", name="Done").click()
            # readable step keys: the source type and a part of the URL, no bare hash
            expect(page.get_by_text(re.compile(r"record_(paid_)?url\[[a-z]+_[a-z]+_")).first).to_be_visible()
            shot(page, out, "03b-stream-run-url-table-inline")
            return
        page.keyboard.press("Escape")
    raise AssertionError("no stream run's URL table shows the demo's skipped_paid TikTok URL")


def reconcile_coverage_bar(page: Page, ui: UI, out: Path, hour: str) -> None:
    step("the reconcile coverage")
    open_page(page, f"{ui.base}/assets/reconciled_hours?view=partitions")
    # One hour or more: the hourly reconcile schedule may have recorded the previous hour meanwhile
    # (a run crossing hh:05 saw "Materialized (2)").
    expect(page.get_by_text(re.compile(r"Materialized \([1-9][0-9]*\)")).first).to_be_visible()
    expect(page.get_by_text(hour).first).to_be_visible()
    shot(page, out, "04-reconcile-coverage")


def integrity_checks(page: Page, ui: UI, out: Path, hour: str) -> None:
    step("the asset checks")
    open_page(page, f"{ui.base}/assets/token_links?view=checks")
    for check in ("links_point_at_rows", "link_depth", "links_have_linkable_status", "linked_tokens_have_markers"):
        expect(page.get_by_text(check, exact=True).first).to_be_visible()
    expect(page.get_by_text("Succeeded").first).to_be_visible()
    expect(page.get_by_text("coverage", exact=True).first).to_be_visible()
    shot(page, out, "05-asset-checks")


def asset_catalog(page: Page, ui: UI, out: Path, hour: str) -> None:
    step("the asset catalog")
    open_page(page, f"{ui.base}/assets")
    for asset in ("token_flow", "record_inbox", "tokens", "contents", "token_links", "reconciled_hours"):
        expect(page.get_by_text(asset, exact=True).first).to_be_visible()
    expect(page.get_by_text("recording_health", exact=True).first).to_be_visible()
    shot(page, out, "06-asset-catalog")


def lineage(page: Page, ui: UI, out: Path, hour: str) -> None:
    step("the lineage of the data flow")
    open_page(page, f"{ui.base}/assets/record_inbox?view=lineage")
    for asset in ("token_flow", "record_inbox", "token_links", "metric_series"):
        expect(page.get_by_text(asset, exact=True).first).to_be_visible()
    shot(page, out, "07-lineage")


def health_plots(page: Page, ui: UI, out: Path, hour: str) -> None:
    step("a health plot")
    open_page(page, f"{ui.base}/assets/recording_health")
    page.wait_for_timeout(1500)
    dismiss_dialog(page)
    page.get_by_role("button", name="Plots").click()
    plot_title = page.get_by_text("tokens_recorded_last_hour", exact=True).first
    plot_title.scroll_into_view_if_needed()
    expect(plot_title).to_be_visible()
    expect(page.locator("canvas, svg.recharts-surface").first).to_be_visible()
    shot(page, out, "08-health-plots")


VERDICT = re.compile(r"^(healthy|degraded|down): ")


def health_verdict(page: Page, ui: UI, out: Path, hour: str) -> None:
    step("the health verdict")
    open_page(page, f"{ui.base}/assets/recording_health?view=events")
    expect(page.get_by_text("verdict", exact=True).first).to_be_visible()
    verdict = page.get_by_text(VERDICT).first
    expect(verdict).to_be_visible()
    print(f"    verdict: {verdict.inner_text()[:200]}", flush=True)
    expect(page.get_by_text("providers_last_hour", exact=True).first).to_be_visible()
    shot(page, out, "09-health-verdict")


def open_check(page: Page, ui: UI, asset: str, check: str) -> None:
    """The check's page: its latest evaluation, with the description and metadata."""
    open_page(page, f"{ui.base}/assets/{asset}?view=checks")
    page.get_by_text(check, exact=True).first.click()
    page.wait_for_load_state("networkidle")


def show_table(page: Page, out: Path, name: str, column: str) -> None:
    """Open a table metadata entry (inline or its dialog) until `column` is visible; then a screenshot."""
    if not page.get_by_text(column, exact=True).first.is_visible():
        for label in ("Show table", "View table", "View metadata", "Show schema"):
            button = page.get_by_text(label, exact=False).first
            if button.count() and button.is_visible():
                button.click()
                page.wait_for_timeout(500)
                if page.get_by_text(column, exact=True).first.is_visible():
                    break
    expect(page.get_by_text(column, exact=True).first).to_be_visible()
    shot(page, out, name)
    page.keyboard.press("Escape")


def stuck_tokens_table(page: Page, ui: UI, out: Path, hour: str) -> None:
    step("the stuck-tokens table (inbox_not_stuck on record_inbox)")
    open_check(page, ui, "record_inbox", "inbox_not_stuck")
    expect(page.get_by_text(re.compile(r"1 token\(s\) gave up")).first).to_be_visible()
    show_table(page, out, "10-stuck-tokens", "next_relaunch")
    expect(page.get_by_text(STUCK_ADDRESS, exact=False).first).to_be_visible()


def dead_letters_table(page: Page, ui: UI, out: Path, hour: str) -> None:
    step("the dead-letter table (dead_letters_reviewed on token_flow)")
    open_check(page, ui, "token_flow", "dead_letters_reviewed")
    expect(page.get_by_text(re.compile(r"dead letter\(s\) not reviewed")).first).to_be_visible()
    show_table(page, out, "11-dead-letters", "dead_lettered_at")


def operator_checks(page: Page, ui: UI, out: Path, hour: str) -> None:
    step("the three operator checks")
    for asset, check, shot_name in (
        ("record_inbox", "inbox_not_stuck", "12a-check-inbox-not-stuck"),
        ("token_flow", "dead_letters_reviewed", "12b-check-dead-letters-reviewed"),
        ("reconciled_hours", "reconcile_coverage", "12c-check-reconcile-coverage"),
    ):
        open_page(page, f"{ui.base}/assets/{asset}?view=checks")
        expect(page.get_by_text(check, exact=True).first).to_be_visible()
        expect(page.get_by_text(re.compile(r"^(Succeeded|Warning|Failed)$")).first).to_be_visible()
        shot(page, out, shot_name)


def reconcile_backfill(page: Page, ui: UI, out: Path, hour: str) -> None:
    step("a reconcile backfill launched from the reconciled_hours asset page")
    before = len(ui.backfills())
    open_page(page, f"{ui.base}/assets/reconciled_hours")
    # accessible names start with the icon's name ("… Materialize…"): no ^ anchor
    page.get_by_role("button", name=re.compile(r"Materialize")).first.click()
    dialog = page.get_by_role("dialog")
    # the dialog opens on "Custom" with nothing selected: choose the missing hours, as an operator would
    launch = dialog.get_by_role("button", name=re.compile(r"Launch (backfill|\d+ runs?)"))
    # The partitions' status loads after the dialog opens, and "Missing" selects nothing until it has
    # (a CI run right after the suite clicked too early: the button stayed disabled): click again.
    for _ in range(6):
        dialog.get_by_role("button", name="Missing", exact=True).click()
        try:
            expect(launch.first).to_be_enabled(timeout=5_000)
            break
        except AssertionError:
            continue
    expect(launch.first).to_be_enabled()
    expect(launch.first).to_be_visible()
    shot(page, out, "13a-reconcile-backfill-dialog")
    launch.first.click()
    deadline = time.monotonic() + 60
    while len(ui.backfills()) <= before and time.monotonic() < deadline:
        time.sleep(1)
    assert len(ui.backfills()) > before, "no backfill was created from the asset page"
    open_page(page, f"{ui.base}/overview/backfills")
    expect(page.get_by_text("reconciled_hours", exact=False).first).to_be_visible()
    shot(page, out, "13b-reconcile-backfill")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--dagster-home", type=Path, required=True)
    args = parser.parse_args()
    ui = UI(args.port)
    step(f"waiting for the UI on {ui.base}")
    wait_for_ui(ui)
    hour = prepare(ui, args.dagster_home)
    visit(ui, args.out, hour)
    print("ui_check: every page showed what it should; screenshots in", args.out, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
