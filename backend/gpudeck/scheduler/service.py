"""The scheduler's loop: each tick, probe the database (holding or trying the leader lock);
the leader then runs each duty that is due. Standbys only probe."""

from __future__ import annotations

import logging
import threading
import time

import redis
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from gpudeck.core.celery_app import make_celery
from gpudeck.core.config import Settings
from gpudeck.core.db import make_sessionmaker
from gpudeck.scheduler.contact import Contact
from gpudeck.scheduler.duties import Context, Duty, default_duties
from gpudeck.scheduler.leader import Leadership
from gpudeck.scheduler.wake import WakeListener

log = logging.getLogger(__name__)


class Scheduler:
    def __init__(
        self,
        settings: Settings,
        engine: Engine,
        redis_client: redis.Redis,
        duties: list[Duty] | None = None,
    ) -> None:
        self.duties = duties if duties is not None else default_duties(settings)
        self.tick_s = min([1.0, *(d.interval_s for d in self.duties)])
        # A probe or a gap longer than one heartbeat interval (and at least 2 s, for a loaded
        # machine's scheduling hiccups) breaks contact.
        contact = Contact(max_gap_s=max(2.0, settings.heartbeat_interval_s))
        sessions = make_sessionmaker(engine)
        self.ctx = Context(settings, sessions, redis_client, contact, make_celery(settings))
        self.leadership = Leadership(engine)
        self.wake = WakeListener(settings.sqlalchemy_url)
        self._due: dict[str, float] = {}
        # Passes for arrivals only (submits that queue) run at most this often.
        self.arrival_gap_s = settings.scheduler_arrival_gap_s
        self._arrivals_not_before = 0.0
        self._reachable = True

    def run(self, stop: threading.Event) -> None:
        """Tick every `tick_s`, or at once when woken (standbys ignore wake-ups: they only
        probe for the lock)."""
        self.wake.start()
        try:
            woken = False
            while not stop.is_set():
                if self.tick():
                    self.run_due(woken=woken)
                else:
                    self._due.clear()  # a new leader starts every duty at once
                woken = self.wake.signal.wait(
                    self.tick_s, arrivals_not_before=self._arrivals_not_before
                )
        finally:
            self.wake.stop()
            for duty in self.duties:  # a duty's own thread (the Slurm pass) ends with it
                if duty.stop is not None:
                    duty.stop()
            self.leadership.release(stopping=True)

    def tick(self) -> bool:
        """Probe the database; True while this instance is the leader."""
        sent_at = time.monotonic()
        try:
            leading = self.leadership.probe()
        except DBAPIError as exc:
            self.ctx.contact.lost()
            if self._reachable:
                log.warning("database unreachable; duties wait: %s", str(exc).splitlines()[0])
            self._reachable = False
            return False
        self.ctx.contact.ok(sent_at)
        if not self._reachable:
            log.info("database reachable again")
        self._reachable = True
        return leading

    def run_due(self, *, woken: bool = False) -> None:
        # Woken: the queue pass first, so freed devices are not kept waiting on the reaper.
        order = sorted(self.duties, key=lambda d: not d.on_wake) if woken else self.duties
        for duty in order:
            now = time.monotonic()
            if now < self._due.get(duty.name, now) and not (woken and duty.on_wake):
                continue
            try:
                duty.run(self.ctx)
            except Exception as exc:  # one failed pass is retried next interval
                log.warning("%s failed: %s", duty.name, exc)
            self._due[duty.name] = now + duty.interval_s
            if duty.on_wake:
                self._arrivals_not_before = self.next_arrival_pass(now, time.monotonic())

    def next_arrival_pass(self, started: float, ended: float) -> float:
        """When a pass for arrivals may next run: the gap after this one, and at least twice
        its length (a long queue makes a pass slow; a burst of submits then costs the
        scheduler at most a third of a core, not all of it)."""
        return ended + max(self.arrival_gap_s, 2 * (ended - started))
