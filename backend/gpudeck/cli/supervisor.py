"""`gpudeck run`: one command for a whole single-machine GPUDeck.

Starts embedded PostgreSQL/Redis where no URLs are configured, migrates, registers this node's
devices, then runs each part (scheduler, api, worker, sampler) as a child process in its own
session, so a Ctrl-C reaches only this supervisor.

- A part that dies is started again after a backoff (0.5 s, doubling to 30 s, reset after a
  minute of stable running), with one log line naming the part, how it ended and when it returns.
- Stopping goes in dependency order: the parts first (the worker lets its jobs checkpoint), then
  Redis, then Postgres. This process is a child subreaper, so everything any part started (the
  forkserver, ranks, the daemonized postmaster) is reparented to it if orphaned, and `run` returns
  only once every one of them has exited.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from dataclasses import dataclass, field

import httpx
import psutil

from gpudeck.cli.parts import Backoff, Part, PostgresPart, RedisPart, gpudeck_part
from gpudeck.cli.stopping import stop_on_signals
from gpudeck.cli.users import announce_first_admin
from gpudeck.cli.users_db import first_admin_token
from gpudeck.core import migrate as migrations
from gpudeck.core.config import Settings
from gpudeck.core.embedded import EmbeddedServices, ensure_services
from gpudeck.core.linux import become_subreaper

log = logging.getLogger("gpudeck.run")
# Parts started by `gpudeck run`, in start order; each is a `gpudeck <part>` command.
PARTS = ("scheduler", "api", "worker", "sampler")
STOP_TIMEOUT_S = 60.0  # the worker's jobs get cancel_grace_s for a final checkpoint
TICK_S = 0.2


@dataclass
class Supervised:
    part: Part
    backoff: Backoff = field(default_factory=Backoff)
    started_at: float = 0.0
    restart_at: float | None = None  # set while it is dead and waiting to start again

    def start(self, now: float) -> None:
        self.part.start()
        self.started_at, self.restart_at = now, None

    def check(self, now: float) -> None:
        """Notice a death (log it, schedule the restart) or restart when its time has come."""
        if self.restart_at is None:
            how = self.part.exit_status()
            if how is None:
                return
            delay = self.backoff.delay(now - self.started_at)
            self.restart_at = now + delay
            log.error("%s died (%s); restarting it in %.1f s", self.part.name, how, delay)
        elif now >= self.restart_at:
            try:
                self.start(now)
                log.info("%s restarted", self.part.name)
            except Exception as exc:  # e.g. Postgres' shared memory still held by old backends
                delay = self.backoff.delay(0.0)
                self.restart_at = now + delay
                log.error("%s did not start (%s); retrying in %.1f s", self.part.name, exc, delay)


def _store_parts(services: EmbeddedServices) -> list[Part]:
    parts: list[Part] = []
    if services.postgres is not None:
        parts.append(PostgresPart(services.postgres))
    if services.redis is not None:
        parts.append(RedisPart(services.redis))
    return parts


def _wait_healthy(url: str, parts: list[Supervised], timeout_s: float) -> bool:
    """Until the API serves: /api/health 200, or 503 `warming` (it is up, importing torch and
    tracing its first estimate, api/warm_up.py, before it says ready). A person opening the
    address needs no more, and warming takes seconds more beside the worker's own start."""
    deadline = time.monotonic() + timeout_s
    # One client for every try: a new one loads the CA bundle each time (26 ms of CPU a try
    # here, a quarter of a core at 10 tries a second, taken from the parts starting up).
    with httpx.Client(timeout=1) as http:
        while time.monotonic() < deadline:
            if any(s.part.exit_status() is not None for s in parts):
                return False
            try:
                answer = http.get(f"{url}/api/health")
                if answer.status_code == 200 or answer.json().get("status") == "warming":
                    return True
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(0.1)
    return False


def stop_parts(parts: list[Part]) -> None:
    """SIGTERM all of `parts` at once, wait, SIGKILL what is left."""
    for part in parts:
        part.terminate()
    deadline = time.monotonic() + STOP_TIMEOUT_S
    for part in parts:
        if not part.wait(max(0.1, deadline - time.monotonic())):
            log.warning("%s did not stop in time; killing it", part.name)
        part.kill()


def reap_orphans(parts: list[Supervised]) -> None:
    """Reap exited orphans reparented to us (a dead worker's forkserver and ranks, a killed
    postmaster's backends); each part's own process is reaped by its part."""
    own = {pid for s in parts if (pid := _pid(s.part)) is not None}
    for child in psutil.Process().children():
        if child.pid in own:
            continue
        try:
            if child.status() == psutil.STATUS_ZOMBIE:
                os.waitpid(child.pid, os.WNOHANG)
        except (psutil.NoSuchProcess, ChildProcessError):
            pass


def _pid(part: Part) -> int | None:
    if isinstance(part, PostgresPart):
        return part.postgres.pid
    return None if part.process is None else part.process.pid


def _wait_for_descendants(timeout_s: float) -> None:
    """Return once no descendant is left; SIGKILL what outlives `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return  # no child at all: every descendant was reparented to us and reaped
        if pid:
            continue
        if time.monotonic() > deadline:
            for child in psutil.Process().children(recursive=True):
                log.warning("killing leftover process %s (%s)", child.pid, child.name())
                child.kill()
            deadline = time.monotonic() + timeout_s
        time.sleep(0.02)


def run_all(settings: Settings, *, quiet: bool = False) -> int:
    started = time.monotonic()
    become_subreaper()  # before anything starts: pg_ctl's postmaster becomes our child too
    stop = stop_on_signals()
    services = ensure_services(settings.data_dir, settings.database_url, settings.redis_url)
    stores = [Supervised(part) for part in _store_parts(services)]
    for store in stores:
        store.started_at = time.monotonic()
    parts: list[Supervised] = []
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
        parts = [Supervised(gpudeck_part(name, env, quiet)) for name in PARTS]
        for part in parts:
            part.start(time.monotonic())
        local = "127.0.0.1" if settings.host in ("0.0.0.0", "::") else settings.host
        url = f"http://{local}:{settings.port}"
        if not _wait_healthy(url, stores + parts, timeout_s=120):
            log.error("GPUDeck did not become healthy; see the messages above")
            return 1
        log.info("GPUDeck is up at %s (%.1f s); Ctrl-C stops it", url, time.monotonic() - started)
        print(f"GPUDeck: {url}", flush=True)
        if first_token:
            announce_first_admin(url, first_token)
        while not stop.wait(TICK_S):
            for supervised in stores + parts:  # stores first: parts need them to start
                supervised.check(time.monotonic())
            reap_orphans(stores + parts)
        return 0
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut shutdown short
        stop_parts([s.part for s in parts])  # users of the stores first
        for store in reversed(stores):  # then Redis, then Postgres
            stop_parts([store.part])
        services.stop()  # pgserver's handle and Redis' socket directory
        _wait_for_descendants(STOP_TIMEOUT_S)
        log.info("GPUDeck stopped")


def _register_local_devices(settings: Settings) -> None:
    from gpudeck.core.db import make_engine, make_sessionmaker, transaction
    from gpudeck.services.cluster.inventory import upsert_inventory
    from gpudeck.telemetry.inventory import local_inventory

    engine = make_engine(settings.sqlalchemy_url, pool_size=1)
    try:
        source, devices = local_inventory(settings)
        with transaction(make_sessionmaker(engine)) as session:
            upsert_inventory(session, settings.node_name, source, devices)
    finally:
        engine.dispose()
