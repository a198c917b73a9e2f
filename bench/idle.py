"""Idle cost of what a user starts: `scripts/run.sh --sandbox` at rest, CPU and memory of every process.

Starts `scripts/run.sh --sandbox-name idle-<port>` on ports, DAGSTER_HOME and SecantusDB data of its
own (as scripts/ui_check.sh does), waits for the webserver, lets the start-up settle (the code
location loads, the first sensor ticks and the start-up `recording_health` run end), then samples
every process descended from run.sh for `--seconds`: CPU (user + system, from /proc) over the
window, and at its end RSS and PSS (shared pages counted once: the run worker's children are
forks) summed over the processes, with a line per process. Stops run.sh and waits for its children.

    .venv/bin/python bench/idle.py [--seconds 120] [--settle 60] [--max-cpu-pct 5] [--max-rss-mib 600]
    .venv/bin/python bench/idle.py --self-test [--seconds 5]

Last lines: `idle_cpu_pct_one_core: N`, `idle_rss_mib: N`; exit 1 when a figure is above its goal. It
also prints the runs created during the window (a scheduled one is part of what it measured).
`--self-test` measures, instead of run.sh, a process tree that breaches each row on purpose (a
grandchild burning 40 % of a core; one holding 700 MiB) and fails unless each row reports its
breach; last line `bench_self_test: N/N rows detect their breach`.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.own_services import free_port_block  # noqa: E402
from bench.procs import command_line, descendants  # noqa: E402


@dataclass
class Proc:
    pid: int
    name: str
    cpu_s: float = 0.0
    rss_mib: float = 0.0
    pss_mib: float = 0.0


def _name(pid: int) -> str:
    words = command_line(pid)
    if not words:
        return "?"
    shown = [w.rsplit("/", 1)[-1] if i == 0 or w.startswith("/") else w for i, w in enumerate(words[:4])]
    return " ".join(" ".join(shown).split())[:70]  # one line: inline code carries newlines


def _memory(pid: int) -> tuple[float, float]:
    """(RSS, PSS) in MiB from smaps_rollup; (0, 0) for a process that is gone."""
    try:
        lines = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
    except OSError:
        return 0.0, 0.0
    kb = {line.split(":")[0]: int(line.split()[1]) for line in lines[1:] if line.split()[1:2]}
    return kb.get("Rss", 0) / 1024, kb.get("Pss", 0) / 1024


def sample(root: int, seconds: float) -> list[Proc]:
    """CPU of each process under `root` over `seconds`, and its memory at the end. A process that
    starts during the window counts from its start; one that ends in it is not counted."""
    before = {pid: p.cpu_s for pid, p in descendants(root).items()}
    time.sleep(seconds)
    procs = []
    for pid, proc in descendants(root).items():
        rss, pss = _memory(pid)
        procs.append(Proc(pid, _name(pid), proc.cpu_s - before.get(pid, 0.0), rss, pss))
    return sorted(procs, key=lambda p: -p.rss_mib)


def report(procs: list[Proc], seconds: float) -> tuple[float, float]:
    cpu = sum(p.cpu_s for p in procs)
    rss, pss = sum(p.rss_mib for p in procs), sum(p.pss_mib for p in procs)
    for p in procs:
        if p.rss_mib >= 1 or p.cpu_s >= 0.01:
            print(f"  {p.cpu_s:6.2f} s CPU  {p.rss_mib:7.1f} MiB RSS  {p.pss_mib:7.1f} MiB PSS  {p.name}")
    print(f"processes: {len(procs)}; CPU {cpu:.2f} s in {seconds:.0f} s; RSS {rss:.0f} MiB, PSS {pss:.0f} MiB")
    return 100 * cpu / seconds, rss


def start_sandbox(workdir: Path) -> tuple[subprocess.Popen, int]:
    port = free_port_block(30, 31_000, 59_030, tries=200)
    env = {**os.environ, "DAGSTER_HOME": str(workdir / "dagster_home"), "DAGSTER_PORT": str(port)}
    env.update(
        SOCIALREC_SANDBOX_PORT_BASE=str(port + 10), SOCIALREC_LOCAL_MONGO_PORT=str(port + 20),
        SOCIALREC_LOCAL_MONGO_DIR=str(workdir / "mongo"), MONGODB_DATABASE="idle",
    )  # fmt: skip
    for name in ("MONGODB_URI", "SOCIALREC_RECONCILE_START"):
        env.pop(name, None)
    log = open(workdir / "run.log", "wb")  # noqa: SIM115 -- the child's, closed below
    proc = subprocess.Popen(
        ["bash", str(ROOT / "scripts" / "run.sh"), "--sandbox-name", f"idle-{port}"],
        env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    log.close()
    return proc, port


def wait_ready(port: int, proc: subprocess.Popen, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"run.sh exited ({proc.returncode}) before the UI answered")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=2):
                return
        except OSError:
            time.sleep(1)
    raise RuntimeError(f"the UI on {port} did not answer within {timeout:.0f} s")


def stop(proc: subprocess.Popen, timeout: float = 120) -> None:
    """TERM to run.sh (it stops its children, each in a group of its own), then KILL its group."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


RUNS_SINCE = "query($t: Float) { runsOrError(filter: {createdAfter: $t}) { ... on Runs { results { jobName } } } }"


def runs_since(port: int, since: float) -> str:
    """The runs created in the window (a scheduled run that falls in it is part of what it measured:
    a `recording_health` run every 15 minutes), from the webserver's GraphQL."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        data=json.dumps({"query": RUNS_SINCE, "variables": {"t": since}}).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            results = json.loads(reply.read())["data"]["runsOrError"]["results"]
    except (OSError, KeyError, TypeError, ValueError) as exc:
        return f"runs created in the window: unknown ({type(exc).__name__})"
    jobs = sorted(r["jobName"] for r in results)
    return f"runs created in the window: {len(jobs)}" + (f" ({', '.join(jobs)})" if jobs else "")


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def measure_sandbox(opts) -> int:
    with tempfile.TemporaryDirectory(prefix="idle-") as tmp:
        proc, port = start_sandbox(Path(tmp))
        try:
            wait_ready(port, proc)
            print(f"# UI up on {port}; settling {opts.settle:.0f} s; load {load()}", flush=True)
            time.sleep(opts.settle)
            print(f"# sampling {opts.seconds:.0f} s; load before {load()}", flush=True)
            window_start = time.time()
            procs = sample(proc.pid, opts.seconds)
            print(f"# load after {load()}")
            print(f"# {runs_since(port, window_start)}")
        finally:
            stop(proc)
    cpu_pct, rss = report(procs, opts.seconds)
    print(f"idle_pss_mib: {sum(p.pss_mib for p in procs):.0f}")
    print(f"idle_rss_mib: {rss:.0f}")
    print(f"idle_cpu_pct_one_core: {cpu_pct:.1f}")
    over = [f"CPU {cpu_pct:.1f} % > {opts.max_cpu_pct} %"] * (cpu_pct > opts.max_cpu_pct) + [
        f"RSS {rss:.0f} MiB > {opts.max_rss_mib} MiB"
    ] * (rss > opts.max_rss_mib)
    if over:
        print("above the goal: " + "; ".join(over))
    return 1 if over else 0


#: Self-test rows: a tree (a shell and a grandchild, as run.sh's children are) that breaches the row.
#: Each says "ready" once its breach is in place (the memory touched), before it is sampled.
BREACHES = {
    "cpu": "import time\nprint('ready', flush=True)\nwhile True:\n    t = time.monotonic()\n"
    "    while time.monotonic() - t < 0.04: pass\n    time.sleep(0.06)\n",  # 40 % of a core
    "rss": "import time\nheld = bytearray(700 * 1024 * 1024)\nfor i in range(0, len(held), 4096): held[i] = 1\n"
    "print('ready', flush=True)\ntime.sleep(3600)\n",
}


def self_test(opts) -> int:
    caught = 0
    for row, code in BREACHES.items():
        tree = subprocess.Popen(
            ["bash", "-c", f'{sys.executable} -c "$0" & wait', code], start_new_session=True, stdout=subprocess.PIPE
        )
        try:
            # On a loaded machine touching 700 MiB takes seconds: sample only once the breach is there.
            ready, _, _ = select.select([tree.stdout], [], [], 60)
            if not ready or not tree.stdout.readline().startswith(b"ready"):
                raise RuntimeError(f"the {row} breach did not start within 60 s")
            procs = sample(tree.pid, opts.seconds)
        finally:
            os.killpg(tree.pid, signal.SIGKILL)
            tree.wait(timeout=30)
        cpu_pct, rss = report(procs, opts.seconds)
        detected = cpu_pct > opts.max_cpu_pct if row == "cpu" else rss > opts.max_rss_mib
        print(f"{row}: {'detected' if detected else 'MISSED'} (CPU {cpu_pct:.1f} %, RSS {rss:.0f} MiB)")
        caught += detected
    print(f"bench_self_test: {caught}/{len(BREACHES)} rows detect their breach")
    return 0 if caught == len(BREACHES) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seconds", type=float, default=120.0, help="the sampling window")
    parser.add_argument("--settle", type=float, default=60.0, help="seconds at rest after the UI answers")
    parser.add_argument("--max-cpu-pct", type=float, default=5.0, help="goal: percent of one core")
    parser.add_argument("--max-rss-mib", type=float, default=600.0, help="goal: RSS summed over the processes")
    parser.add_argument("--self-test", action="store_true")
    opts = parser.parse_args()
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load {load()}; {os.cpu_count()} cores")
    return self_test(opts) if opts.self_test else measure_sandbox(opts)


if __name__ == "__main__":
    sys.exit(main())
