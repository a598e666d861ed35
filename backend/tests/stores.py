"""Throwaway Postgres and Redis servers that a test may stop, pause and restart.

Outage tests never touch the shared servers: each gets its own, on a free port, under a
temporary directory, started as its own process group so SIGSTOP pauses every process of it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import redis
from harness import free_port, reachable


class Store:
    """One server process (group) that can be stopped, started again, paused and resumed."""

    stop_signal = signal.SIGTERM

    def __init__(self, argv: list[str], port: int) -> None:
        self.argv = argv
        self.port = port
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while not self._ready():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{self.argv[0]} did not start")
            time.sleep(0.05)

    def _ready(self) -> bool:
        return reachable(self.port)

    def stop(self) -> None:
        if self.process is None:
            return
        self.resume()
        os.killpg(self.process.pid, self.stop_signal)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.process = None

    def pause(self) -> None:
        """SIGSTOP the server and every process it started (Postgres's children each call
        setsid, so a process group is not enough)."""
        self._signal_all(signal.SIGSTOP)

    def resume(self) -> None:
        self._signal_all(signal.SIGCONT)

    def _signal_all(self, signum: int) -> None:
        if self.process is None:
            return
        children = subprocess.run(
            ["pgrep", "-P", str(self.process.pid)], capture_output=True, text=True
        ).stdout.split()
        for pid in [self.process.pid, *map(int, children)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)


def _as_postgres_user(root: Path) -> list[str]:
    """Postgres refuses to run as root: as root, run it as the system's `postgres` user."""
    if os.geteuid() != 0:
        return []
    shutil.chown(root, "postgres", "postgres")
    return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups"]


class PostgresStore(Store):
    stop_signal = signal.SIGINT  # fast shutdown: SIGTERM would wait for clients to leave

    def __init__(self, root: Path) -> None:
        data = root / "pgdata"
        prefix = _as_postgres_user(root)
        subprocess.run(
            [*prefix, "initdb", "-D", str(data), "-U", "postgres", "-A", "trust", "--no-sync"],
            check=True, capture_output=True,
        )  # fmt: skip
        port = free_port()
        super().__init__(
            [*prefix, "postgres", "-D", str(data), "-p", str(port), "-k", str(root),
             "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"],
            port,
        )  # fmt: skip
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"

    def _ready(self) -> bool:
        done = subprocess.run(
            ["pg_isready", "-h", "127.0.0.1", "-p", str(self.port)], capture_output=True
        )
        return done.returncode == 0


class RedisStore(Store):
    def __init__(self, root: Path) -> None:
        port = free_port()
        super().__init__(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(root)],
            port,
        )  # fmt: skip
        self.url = f"redis://127.0.0.1:{port}/0"

    def _ready(self) -> bool:
        try:
            with redis.Redis(port=self.port, socket_timeout=0.5) as client:
                return bool(client.ping())
        except redis.RedisError:
            return False


def temp_root() -> Path:
    return Path(tempfile.mkdtemp(prefix="gpudeck-stores-"))


def remove_root(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)
