"""The machine's process table, read once from /proc: what the benches (and the topology tests)
need to find a deployment's processes and add up their CPU and memory."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

TICKS_PER_S = os.sysconf("SC_CLK_TCK")
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class ProcStat:
    """One live process, from /proc/<pid>/stat."""

    pid: int
    ppid: int
    pgid: int
    cpu_s: float  # user + system
    reaped_children_cpu_s: float  # user + system of its children that have exited
    started_s: float  # after boot
    rss_bytes: int


def proc_stat(pid: int) -> ProcStat | None:
    """The process `pid`, or None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # After the command, which may hold spaces or ")": state(0) ppid(1) pgrp(2) ... utime(11)
    # stime(12) cutime(13) cstime(14) ... starttime(19) vsize(20) rss(21)
    fields = text[text.rindex(")") + 2 :].split()
    return ProcStat(
        pid=pid,
        ppid=int(fields[1]),
        pgid=int(fields[2]),
        cpu_s=(int(fields[11]) + int(fields[12])) / TICKS_PER_S,
        reaped_children_cpu_s=(int(fields[13]) + int(fields[14])) / TICKS_PER_S,
        started_s=int(fields[19]) / TICKS_PER_S,
        rss_bytes=int(fields[21]) * PAGE_BYTES,
    )


def processes() -> list[ProcStat]:
    """Every live process."""
    found = (proc_stat(int(entry)) for entry in os.listdir("/proc") if entry.isdigit())
    return [p for p in found if p is not None]


def child_pids(pid: int) -> list[int]:
    """The processes whose parent is `pid` (a Celery worker's pool children, say)."""
    return [p.pid for p in processes() if p.ppid == pid]


def group_pids(pgid: int) -> list[int]:
    """The processes of process group `pgid`."""
    return [p.pid for p in processes() if p.pgid == pgid]


def descendants(root: int) -> dict[int, ProcStat]:
    """`root` and every process below it, by pid."""
    table = {p.pid: p for p in processes()}
    children: dict[int, list[int]] = {}
    for p in table.values():
        children.setdefault(p.ppid, []).append(p.pid)
    tree: dict[int, ProcStat] = {}
    todo = [root]
    while todo:
        pid = todo.pop()
        if pid in table and pid not in tree:
            tree[pid] = table[pid]
            todo.extend(children.get(pid, ()))
    return tree


def command_line(pid: int) -> list[str]:
    """The process's argv ([] once it is gone)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []
    return [word.decode(errors="replace") for word in argv if word]


def uptime_s() -> float:
    return float(Path("/proc/uptime").read_text().split()[0])
