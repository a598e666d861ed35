"""Shared by the bench scripts: a fresh database, this node's devices (simulated, or the real
ones through NVML), a token, a real `gpudeck api` process and, for those that run jobs, a real
`gpudeck worker`. Not a benchmark itself."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import httpx
import psycopg
from sqlalchemy import text

from gpudeck.core import migrate
from gpudeck.core.config import Settings
from gpudeck.core.db import make_engine, make_sessionmaker, transaction
from gpudeck.core.embedded import EmbeddedServices
from gpudeck.services.accounts import users
from gpudeck.services.cluster.inventory import upsert_inventory
from gpudeck.telemetry.inventory import local_inventory

NODE = "bench"
DeviceProvider = Literal["simulated", "nvml"]
BENCH_DB = "gpudeck_bench"


@dataclass
class BenchServer:
    url: str
    token: str
    database_url: str
    redis_url: str
    env: dict[str, str] = field(default_factory=dict)  # the api's: a worker beside it shares it
    # Seconds from the api's start to health's first answer (503 while its estimator warms)
    # and to its 200.
    answered_s: float = 0.0
    ready_s: float = 0.0

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


def _local_database() -> str | None:
    """A scratch database on the local server, if there is one (else embedded)."""
    try:
        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as c:
            if not c.execute("SELECT 1 FROM pg_database WHERE datname = %s", [BENCH_DB]).fetchone():
                c.execute(f"CREATE DATABASE {BENCH_DB}")
        return f"postgresql+psycopg://postgres@127.0.0.1:5432/{BENCH_DB}"
    except psycopg.OperationalError:
        return None


def _redis_reachable() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=0.5):
            return True
    except OSError:
        return False


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _prepare(database_url: str, devices: str, device_provider: DeviceProvider = "simulated") -> str:
    engine = make_engine(database_url, pool_size=1)
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE; CREATE SCHEMA public"))
    migrate.upgrade(database_url)
    # The inventory as the worker's node registers it: simulated devices, or NVML's real ones.
    node = Settings(device_provider=device_provider, simulated_devices=devices, node_name=NODE)
    source, inventory = local_inventory(node)
    with transaction(make_sessionmaker(engine)) as session:
        upsert_inventory(session, NODE, source, inventory)
        admin = users.create_user(session, "bench", "admin")
        token = users.issue_token(session, admin, "bench").secret
    engine.dispose()
    return token


@contextmanager
def bench_server(
    devices: str = "8x80GiB",
    extra_env: dict[str, str] | None = None,
    workers: int = 1,
    device_provider: DeviceProvider = "simulated",
) -> Iterator[BenchServer]:
    """`devices` is the simulated set (ignored when `device_provider` is "nvml")."""
    embedded = EmbeddedServices(Path(tempfile.mkdtemp(prefix="gpudeck-bench-")))
    try:
        database_url = os.environ.get("GPUDECK_BENCH_DATABASE_URL") or _local_database()
        database_url = database_url or embedded.start_postgres()
        redis_url = os.environ.get("GPUDECK_BENCH_REDIS_URL") or (
            "redis://127.0.0.1:6379/7" if _redis_reachable() else embedded.start_redis()
        )
        token = _prepare(database_url, devices, device_provider)
        port = _free_port()
        env = {
            **os.environ,
            "GPUDECK_DATABASE_URL": database_url,
            "GPUDECK_REDIS_URL": redis_url,
            "GPUDECK_PORT": str(port),
            "GPUDECK_NODE_NAME": NODE,
            "GPUDECK_LOG_LEVEL": "warning",
            "GPUDECK_DATA_DIR": str(embedded.data_dir / "data"),
            "GPUDECK_DEVICE_PROVIDER": device_provider,
            "GPUDECK_SIMULATED_DEVICES": devices,
            **(extra_env or {}),
        }
        process = subprocess.Popen(
            [sys.executable, "-m", "gpudeck", "api", "--workers", str(workers)], env=env
        )
        url = f"http://127.0.0.1:{port}"
        try:
            answered_s, ready_s = _wait_healthy(url, process)
            yield BenchServer(url, token, database_url, redis_url, env, answered_s, ready_s)
        finally:
            process.terminate()
            process.wait(timeout=30)
    finally:
        embedded.stop()


def _wait_healthy(url: str, process: subprocess.Popen[bytes]) -> tuple[float, float]:
    """(seconds to health's first answer, to its 200), polling every 0.1 s: 60 s for an
    answer, then as long as the API warms up (503 `warming`; a minute at load 20), at most
    10 minutes more."""
    started = time.monotonic()
    deadline, answered = started + 60, None
    # One client for every poll: httpx.get builds a client a call, and each loads the CA bundle
    # (23 ms of CPU here), 4 s of the gpu-check dry run's jobs section while the API warmed up.
    with httpx.Client(timeout=1) as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError("gpudeck api exited")
            try:
                status = client.get(f"{url}/api/health").status_code
                if answered is None:
                    answered = time.monotonic() - started
                    deadline += 600
                if status == 200:
                    return answered, time.monotonic() - started
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
    raise RuntimeError("gpudeck api did not become healthy")


@contextmanager
def bench_sampler(server: BenchServer) -> Iterator[subprocess.Popen[bytes]]:
    """A real `gpudeck sampler` for the node: without its reports the node is offline after
    90 s and no job can be placed on it (a bench that runs longer needs one)."""
    sampler = subprocess.Popen(
        [sys.executable, "-m", "gpudeck", "sampler"], env=server.env, start_new_session=True
    )
    try:
        yield sampler
    finally:
        os.killpg(sampler.pid, signal.SIGTERM)
        sampler.wait(30)


@contextmanager
def bench_worker(
    server: BenchServer,
    log_path: Path,
    extra_env: dict[str, str] | None = None,
    ready: tuple[str, ...] = ("warm launcher ready", " ready."),
) -> Iterator[subprocess.Popen[bytes]]:
    """A real `gpudeck worker` (warm forkserver) with the server's environment, once its log
    shows every line of `ready`; stopped with every process it started."""
    env = {**server.env, "GPUDECK_LOG_LEVEL": "info", **(extra_env or {})}
    with log_path.open("wb") as out:
        worker = subprocess.Popen(
            [sys.executable, "-m", "gpudeck", "worker"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_worker(log_path, worker, ready)
        yield worker
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(60)


def _wait_worker(
    log_path: Path, proc: subprocess.Popen[bytes], ready: tuple[str, ...], timeout_s: float = 300
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        log = log_path.read_text(errors="replace")
        if all(line in log for line in ready):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"gpudeck worker exited:\n{log[-3000:]}")
        time.sleep(0.2)
    raise RuntimeError("gpudeck worker did not become ready")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")
