"""`gpudeck run`: one command for a whole single-machine GPUDeck.

Starts embedded PostgreSQL/Redis where no URLs are configured, migrates, registers this node's
devices, then runs each part (api, worker, sampler) as a child process in its own session, so a
Ctrl-C reaches only this supervisor, which stops the parts in order and then the databases.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from types import FrameType

import httpx

from gpudeck.cli.users import announce_first_admin, first_admin_token
from gpudeck.core import migrate as migrations
from gpudeck.core.config import Settings
from gpudeck.core.embedded import ensure_services

log = logging.getLogger("gpudeck.run")
# Parts started by `gpudeck run`, in start order; each is a `gpudeck <part>` command.
PARTS = ("api", "worker", "sampler")
STOP_TIMEOUT_S = 30.0


def _available_parts() -> list[str]:
    from gpudeck.cli import app

    commands = {
        c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands
    }
    return [part for part in PARTS if part in commands]


def _spawn(part: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "gpudeck", part], env=env, start_new_session=True
    )


def _wait_healthy(url: str, children: list[subprocess.Popen[bytes]], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(c.poll() is not None for c in children):
            return False
        try:
            if httpx.get(f"{url}/api/health", timeout=1).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    return False


def _stop(children: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM every part's process group (the worker stops its jobs' ranks), then SIGKILL."""
    for child in reversed(children):
        if child.poll() is None:
            _signal_group(child, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    for child in reversed(children):
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            log.warning("%s did not stop in time; killing it", child.args)
        _signal_group(child, signal.SIGKILL)  # anything the part left behind in its group
        child.wait()


def _signal_group(child: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, sig)


def run_all(settings: Settings) -> int:
    started = time.monotonic()
    services = ensure_services(settings.data_dir, settings.database_url, settings.redis_url)
    stop = threading.Event()

    def on_signal(signum: int, _: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    children: list[subprocess.Popen[bytes]] = []
    try:
        settings.database_url, settings.redis_url = services.database_url, services.redis_url
        migrations.upgrade(settings.sqlalchemy_url)
        env = {
            **os.environ,
            "GPUDECK_DATABASE_URL": settings.sqlalchemy_url,
            "GPUDECK_REDIS_URL": str(settings.redis_url),
            "GPUDECK_DATA_DIR": str(settings.data_dir),
        }
        _register_local_devices(settings)
        first_token = first_admin_token(settings.sqlalchemy_url)
        children = [_spawn(part, env) for part in _available_parts()]
        local = "127.0.0.1" if settings.host in ("0.0.0.0", "::") else settings.host
        url = f"http://{local}:{settings.port}"
        if not _wait_healthy(url, children, timeout_s=120):
            log.error("GPUDeck did not become healthy; see the messages above")
            return 1
        log.info("GPUDeck is up at %s (%.1f s); Ctrl-C stops it", url, time.monotonic() - started)
        print(f"GPUDeck: {url}", flush=True)
        if first_token:
            announce_first_admin(url, first_token)
        while not stop.wait(0.5):
            if any(c.poll() is not None for c in children):
                log.error("a part of GPUDeck exited; stopping the rest")
                return 1
        return 0
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut shutdown short
        _stop(children)
        services.stop()
        log.info("GPUDeck stopped")


def _register_local_devices(settings: Settings) -> None:
    from gpudeck.core.db import make_engine, make_sessionmaker, transaction
    from gpudeck.services.inventory import upsert_inventory
    from gpudeck.telemetry.inventory import local_inventory

    engine = make_engine(settings.sqlalchemy_url, pool_size=1)
    try:
        source, devices = local_inventory(settings)
        with transaction(make_sessionmaker(engine)) as session:
            upsert_inventory(session, settings.node_name, source, devices)
    finally:
        engine.dispose()
