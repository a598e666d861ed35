"""Wake-ups: a thread LISTENs on the channel that job_state NOTIFYs when devices free, a job
waits, is held, released or re-prioritised; each notification sets an Event the scheduler's
loop waits on. Postgres delivers a NOTIFY only when its transaction commits, so a pass never
runs before the change it was woken for is visible. A lost connection is re-opened, and the
Event is set then too: notifications sent meanwhile are gone, a pass finds their changes."""

from __future__ import annotations

import logging
import threading

import psycopg
from sqlalchemy import make_url

from gpudeck.services.job_state import WAKE_CHANNEL

log = logging.getLogger(__name__)
RETRY_S = 1.0


def conninfo(sqlalchemy_url: str) -> str:
    return make_url(sqlalchemy_url).set(drivername="postgresql").render_as_string(False)


class WakeListener:
    def __init__(self, sqlalchemy_url: str) -> None:
        self._conninfo = conninfo(sqlalchemy_url)
        self.event = threading.Event()
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
                    self.event.set()
                    while not self._stop.is_set():
                        for _ in conn.notifies(timeout=0.5, stop_after=1):
                            self.event.set()
            except psycopg.Error as exc:
                log.debug("wake listener: %s; reconnecting", exc)
                self._stop.wait(RETRY_S)
