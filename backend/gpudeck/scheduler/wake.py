"""Wake-ups: a thread LISTENs on the channel that job_state NOTIFYs when devices free, a job
waits, is held, released or re-prioritised. Postgres delivers a NOTIFY only when its
transaction commits, so a pass never runs before the change it was woken for is visible. A
lost connection is re-opened, and that counts as a wake-up too: notifications sent meanwhile
are gone, a pass finds their changes.

Two kinds: a job that only arrived (payload `arrival`) and everything else. Arrivals are
coalesced: a pass for them runs no sooner than `arrival_gap_s` after the previous pass, so a
burst of 500 submits a second costs a few passes, not 500 passes over a queue that grows
with each. Anything else (devices freed, hold, release, priority) wakes the loop at once."""

from __future__ import annotations

import logging
import threading
import time

import psycopg
from sqlalchemy import make_url

from gpudeck.services.jobs.state import WAKE_ARRIVAL, WAKE_CHANNEL

log = logging.getLogger(__name__)
RETRY_S = 1.0


def conninfo(sqlalchemy_url: str) -> str:
    return make_url(sqlalchemy_url).set(drivername="postgresql").render_as_string(False)


class WakeSignal:
    """What the listener heard since the loop last woke: urgent, arrivals, or nothing."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._urgent = False
        self._arrival = False

    def set(self, *, arrival: bool = False) -> None:
        with self._cond:
            if arrival:
                self._arrival = True
            else:
                self._urgent = True
            self._cond.notify_all()

    def wait(self, timeout_s: float, *, arrivals_not_before: float = 0.0) -> bool:
        """Block until an urgent wake-up, an arrival once the monotonic clock reaches
        `arrivals_not_before`, or `timeout_s`. True when woken; what woke it is consumed."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while True:
                now = time.monotonic()
                if self._urgent or (self._arrival and now >= arrivals_not_before):
                    self._urgent = self._arrival = False
                    return True
                until = deadline
                if self._arrival:
                    until = min(until, arrivals_not_before)
                if now >= deadline:
                    return False
                self._cond.wait(until - now)


class WakeListener:
    def __init__(self, sqlalchemy_url: str) -> None:
        self._conninfo = conninfo(sqlalchemy_url)
        self.signal = WakeSignal()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gpudeck-wake", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._conninfo, autocommit=True, connect_timeout=5) as conn:
                    conn.execute(f"LISTEN {WAKE_CHANNEL}")
                    self.signal.set()
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=0.5):
                            self.signal.set(arrival=note.payload == WAKE_ARRIVAL)
            except psycopg.Error as exc:
                log.debug("wake listener: %s; reconnecting", exc)
                self._stop.wait(RETRY_S)
