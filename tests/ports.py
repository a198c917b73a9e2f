"""Loopback ports for the tests' own servers, disjoint between pytest-xdist workers.

A test that stops its own server on purpose (to see a failure) expects its client's next request to
find nothing on that port. If two workers picked ports from one shared range, the other worker's
next server could start on the port just freed and answer instead: a write that must fail succeeds.
So each worker picks from a slice of its own (worker N: 30000 + 3000 N and up), at a random base
inside it, and checks the ports are free now."""

from __future__ import annotations

import os

from bench.own_services import free_port_block

FIRST_PORT = 30_000
SLICE = 3_000


def worker_index(environ: dict[str, str] | None = None) -> int:
    """0 for `gw0` or a run without xdist, N for `gwN`."""
    name = (environ if environ is not None else os.environ).get("PYTEST_XDIST_WORKER", "gw0")
    digits = name.removeprefix("gw")
    return int(digits) if digits.isdigit() else 0


def worker_slice(environ: dict[str, str] | None = None) -> range:
    low = FIRST_PORT + worker_index(environ) * SLICE
    return range(low, low + SLICE)


def free_port_base(count: int = 8) -> int:
    """A base of `count` consecutive loopback ports of this worker's slice that are free now."""
    ports = worker_slice()
    return free_port_block(count, ports.start, ports.stop)


def free_ports(count: int = 10) -> range:
    """`count` consecutive ports that are free now (for `start_on_free_port`, which moves on to the
    next one when a port is taken between the probe and the bind)."""
    base = free_port_base(count)
    return range(base, base + count)
