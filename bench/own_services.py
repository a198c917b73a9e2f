"""Infrastructure of a benchmark's own: a Redis, a SecantusDB server and a RabbitMQ node started as
child processes on ports the caller picks, each stopped (or killed) by its own PID — never the
shared services, never anything found by name.

    with OwnRedis(21000) as redis, OwnSecantus(21010, storage) as mongo, OwnRabbit(21020) as rabbit:
        ...               # redis.url, mongo.uri, rabbit.url
        mongo.kill()      # SIGKILL, then mongo.start() reopens the same storage

Each child runs in a session of its own, so stopping it also stops what it spawned (the RabbitMQ
launcher script starts the Erlang VM as a grandchild): the signal goes to that one process group.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from bench.procs import group_pids

_BIN = Path(sys.executable).parent
_SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
RABBITMQ_BIN = Path("/usr/lib/rabbitmq/bin")


def port_free(port: int) -> bool:
    """Nothing listens on `port` on loopback. The probe binds as the servers do (SO_REUSEADDR), so
    the connections a stopped server left in TIME_WAIT do not count: it can be started again there."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port_block(count: int, low: int, high: int, tries: int = 50) -> int:
    """A base of `count` consecutive loopback ports in [low, high) that are all free now (probed by
    binding each, at a random base), for a caller that starts several servers on base, base+1, ..."""
    for _ in range(tries):
        base = random.randint(low, high - count)
        sockets = []
        try:
            for port in range(base, base + count):
                s = socket.socket()
                sockets.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise RuntimeError(f"no {count} consecutive free ports in {low}-{high - 1}")


def wait_for(check, timeout: float, what: str, alive=None) -> None:
    """Until `check()` is true; fails at once when `alive()` says the process is gone."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if alive is not None and not alive():
            raise ServerExited(f"{what} exited while starting ({last!r})")
        try:
            if check():
                return
        except Exception as exc:  # noqa: BLE001 - not up yet
            last = exc
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not come up within {timeout:.0f} s ({last!r})")


def _listening_inodes(port: int) -> set[str]:
    """Socket inodes listening on `port` (any address), from the kernel's TCP tables."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                inodes.add(fields[9])
    return inodes


def group_listens_on(pgid: int, port: int) -> bool:
    """A process of group `pgid` holds the socket listening on `port`: the server that answers is
    ours, not one that took the port between the probe and our bind (ours then fails and exits, but
    a readiness probe that only connects would be answered by the other). True where there is no
    /proc to look in."""
    if not Path("/proc/net/tcp").exists():
        return True
    inodes = _listening_inodes(port)
    for pid in group_pids(pgid) if inodes else ():
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{pid}/fd/{fd}")[8:-1] in inodes:  # "socket:[inode]"
                        return True
    return False


S = TypeVar("S", bound="OwnService")


class ServerExited(RuntimeError):
    """The server's process ended while it was starting (its port was taken meanwhile, say)."""


def start_on_free_port(make: Callable[[int], S], ports: Iterable[int], what: str = "server") -> S:
    """`make(port).start()` on the first port of `ports` that is free and stays free: a port taken
    between the probe and the server's own bind (by anything else on the machine) moves on to the
    next one instead of failing the caller."""
    ports = list(ports)
    tried = []
    for port in ports:
        if not port_free(port):
            continue
        try:
            server = make(port)
            server.start()
            return server
        except ServerExited as exc:
            tried.append(f"{port}: {exc}")
    raise RuntimeError(
        f"no port of {ports[0]}-{ports[-1]} could be taken for {what}: " + "; ".join(tried or ["none was free"])
    )


class OwnService:
    """One child process, started in its own session, stopped by its PID (process group)."""

    name = "service"
    start_timeout = 30.0

    def __init__(self, port: int, workdir: str | None = None) -> None:
        self.port = port
        self._own_dir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(prefix=f"own-{self.name}-")
        self.proc: subprocess.Popen | None = None

    # -- to implement ------------------------------------------------------------------------------
    def command(self) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        return dict(os.environ)

    def ready(self) -> bool:
        raise NotImplementedError

    # -- lifecycle -------------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> OwnService:
        if self.running:
            return self
        if not port_free(self.port):
            raise RuntimeError(f"port {self.port} is taken: pick another base port for {self.name}")
        log = open(Path(self.workdir) / f"{self.name}.log", "ab")  # noqa: SIM115 -- handed to the child, closed below
        self.proc = subprocess.Popen(
            self.command(),
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=self.workdir,
        )
        log.close()
        try:
            wait_for(
                self._ready_and_ours, self.start_timeout, f"{self.name} on port {self.port}", alive=lambda: self.running
            )
        except Exception as exc:
            self.kill()
            raise type(exc)(f"{exc}; its log ends: {self.log_tail()}") from None
        return self

    def _ready_and_ours(self) -> bool:
        return self.ready() and self.proc is not None and group_listens_on(self.proc.pid, self.port)

    def log_tail(self, lines: int = 5) -> str:
        try:
            text = (Path(self.workdir) / f"{self.name}.log").read_text(errors="replace")
        except OSError:
            return "(no log)"
        return " | ".join(text.strip().splitlines()[-lines:]) or "(empty log)"

    def _signal(self, sig: int) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)  # the child's own session: it and what it spawned

    def kill(self) -> None:
        """SIGKILL: no shutdown, no flush — what a crash or an OOM kill does."""
        self._signal(signal.SIGKILL)
        self._reap(10)

    def stop(self, timeout: float = 20) -> None:
        """A clean stop (SIGTERM), then SIGKILL if it does not go in time."""
        if not self.running:
            self._reap(0)
            return
        self._signal(signal.SIGTERM)
        if not self._reap(timeout):
            self.kill()

    def _reap(self, timeout: float) -> bool:
        if self.proc is None:
            return True
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        # The group may outlive its leader for a moment (Erlang VM): wait until it is gone.
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.killpg(self.proc.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        self.proc = None
        return True

    def port_closed(self) -> bool:
        return port_free(self.port)

    def cleanup(self) -> None:
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.cleanup()


class OwnRedis(OwnService):
    name = "redis"

    def command(self) -> list[str]:
        return [
            shutil.which("redis-server") or "redis-server",
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            self.workdir,
            "--daemonize",
            "no",
            "--loglevel",
            "warning",
        ]

    def ready(self) -> bool:
        import redis

        return bool(redis.Redis(port=self.port, socket_timeout=1, socket_connect_timeout=1).ping())

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"


class OwnSecantus(OwnService):
    """A SecantusDB server in a subprocess; `storage` survives kill/start (same WiredTiger home)."""

    name = "secantus"
    #: A Python server that imports its storage engine: with two test workers and the topology tests'
    #: daemons beside it, its start took longer than 30 s once.
    start_timeout = 90.0

    def __init__(self, port: int, storage: str | None = None, workdir: str | None = None) -> None:
        super().__init__(port, workdir)
        self.storage = storage or str(Path(self.workdir) / "data")

    def command(self) -> list[str]:
        exe = _BIN / "secantusd-py"
        cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "secantus"]
        return cmd + [
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--storage-path",
            self.storage,
            "--log-level",
            "WARNING",
        ]

    def ready(self) -> bool:
        from pymongo import MongoClient

        client = MongoClient(self.uri, serverSelectionTimeoutMS=500, connectTimeoutMS=500)
        try:
            return client.admin.command("ping").get("ok") == 1
        finally:
            client.close()

    @property
    def uri(self) -> str:
        return f"mongodb://127.0.0.1:{self.port}/?directConnection=true"


class OwnRabbit(OwnService):
    """A second RabbitMQ node (`<nodename>@localhost`) with its own AMQP and distribution ports,
    data, logs and Erlang cookie, no plugins. Needs the Erlang port mapper (epmd) the shared node
    already runs; refuses to start when `rabbitmq-server` is not installed."""

    name = "rabbitmq"
    start_timeout = 60.0

    def __init__(self, port: int, dist_port: int | None = None, nodename: str = "faults", workdir: str | None = None):
        super().__init__(port, workdir)
        self.dist_port = dist_port or port + 1
        self.node = f"{nodename}@localhost"
        wd = Path(self.workdir)
        (wd / "enabled_plugins").write_text("[].\n")
        (wd / "rabbitmq.conf").write_text(f"listeners.tcp.default = {port}\nloopback_users = none\n")

    @staticmethod
    def available() -> str | None:
        """None when a node can be started here, else why not."""
        if not (RABBITMQ_BIN / "rabbitmq-server").exists():
            return f"{RABBITMQ_BIN}/rabbitmq-server not found"
        if not shutil.which("epmd"):
            return "epmd (Erlang) not found"
        return None

    def env(self) -> dict[str, str]:
        wd = self.workdir
        env = dict(os.environ)
        env.update(
            HOME=wd,  # the node's Erlang cookie lives here, not in anyone else's home
            RABBITMQ_NODENAME=self.node,
            RABBITMQ_NODE_PORT=str(self.port),
            RABBITMQ_DIST_PORT=str(self.dist_port),
            RABBITMQ_MNESIA_BASE=f"{wd}/mnesia",
            RABBITMQ_LOG_BASE=f"{wd}/log",
            RABBITMQ_ENABLED_PLUGINS_FILE=f"{wd}/enabled_plugins",
            RABBITMQ_CONFIG_FILE=f"{wd}/rabbitmq.conf",
            RABBITMQ_ADVANCED_CONFIG_FILE=f"{wd}/advanced.config",
            RABBITMQ_PID_FILE=f"{wd}/rabbitmq.pid",
        )
        return env

    def command(self) -> list[str]:
        return [str(RABBITMQ_BIN / "rabbitmq-server")]

    def ready(self) -> bool:
        import pika

        params = pika.URLParameters(self.url)
        params.socket_timeout = 2
        params.connection_attempts = 1
        connection = pika.BlockingConnection(params)
        connection.close()
        return True

    def stop(self, timeout: float = 30) -> None:
        """`rabbitmqctl -n <node> stop` (a clean shutdown of this node only), then by PID."""
        if self.running:
            subprocess.run(
                [str(RABBITMQ_BIN / "rabbitmqctl"), "-n", self.node, "stop"],
                env=self.env(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=timeout,
                check=False,
            )
        super().stop(timeout)

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/%2F"


class OwnPgBouncer(OwnService):
    """PgBouncer in session mode in front of a PostgreSQL (`scripts/pgbouncer.sh serve`: the config
    docker-compose's `pgbouncer` service runs), on loopback with `trust` logins like
    scripts/postgres.sh's server. Refuses to start when pgbouncer is not installed."""

    name = "pgbouncer"
    start_timeout = 20.0

    def __init__(self, port: int, upstream_host: str, upstream_port: int, user: str = "postgres", workdir=None):
        super().__init__(port, workdir)
        self.upstream = (upstream_host, upstream_port, user)
        os.chmod(self.workdir, 0o755)  # run as `postgres` when we are root, it reads its config below

    @staticmethod
    def available() -> str | None:
        """None when PgBouncer can be started here, else why not."""
        if shutil.which("pgbouncer") or Path("/usr/sbin/pgbouncer").exists():
            return None
        return "pgbouncer not found (Debian: apt-get install pgbouncer)"

    def env(self) -> dict[str, str]:
        host, port, user = self.upstream
        return {
            **os.environ,
            "DAGSTER_POSTGRES_HOST": host, "DAGSTER_POSTGRES_PORT": str(port),
            "DAGSTER_POSTGRES_USER": user, "DAGSTER_POSTGRES_PASSWORD": "",
            "PGBOUNCER_LISTEN_ADDR": "127.0.0.1", "PGBOUNCER_LISTEN_PORT": str(self.port),
            "PGBOUNCER_AUTH_TYPE": "trust", "PGBOUNCER_DIR": str(Path(self.workdir) / "config"),
        }  # fmt: skip

    def command(self) -> list[str]:
        return ["bash", str(_SCRIPTS / "pgbouncer.sh"), "serve"]

    def ready(self) -> bool:
        import psycopg2

        user = self.upstream[2]
        conn = psycopg2.connect(host="127.0.0.1", port=self.port, user=user, dbname="postgres", connect_timeout=2)
        conn.close()
        return True


def start_own_rabbit(port: int, dist_port: int, nodename: str) -> tuple[OwnRabbit | None, str | None]:
    """A second RabbitMQ node of the bench's own, started; or None and why not (not installed, or it
    did not start: what it left behind is cleaned up)."""
    why_not = OwnRabbit.available()
    if why_not is not None:
        return None, why_not
    rabbit = None
    try:
        rabbit = OwnRabbit(port, dist_port, nodename=nodename)
        rabbit.start()
    except Exception as exc:  # noqa: BLE001
        if rabbit is not None:
            rabbit.cleanup()
        return None, f"a second RabbitMQ node did not start ({exc})"
    return rabbit, None
