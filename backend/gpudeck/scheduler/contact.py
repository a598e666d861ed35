"""How long this process has had unbroken contact with the database.

A duty that judges other processes by their silence (the reaper: "no heartbeat for a lease")
must not blame them for an outage of the database itself: while Postgres was unreachable or
paused, nobody could heartbeat. So the scheduler probes the database every tick, and contact
counts as broken by a failed probe, a probe that took too long (a paused server answers late,
not never), or a gap between probes longer than `max_gap_s` (this process was itself stopped).
"""

from __future__ import annotations

import time


class Contact:
    def __init__(self, max_gap_s: float) -> None:
        self.max_gap_s = max_gap_s
        self._since: float | None = None
        self._last_ok: float | None = None

    def ok(self, sent_at: float, now: float | None = None) -> None:
        """A probe sent at `sent_at` (monotonic) was answered now."""
        now = time.monotonic() if now is None else now
        late = now - sent_at > self.max_gap_s
        gap = self._last_ok is not None and sent_at - self._last_ok > self.max_gap_s
        if self._since is None or late or gap:
            self._since = now
        self._last_ok = now

    def lost(self) -> None:
        self._since = None
        self._last_ok = None

    def unbroken_s(self, now: float | None = None) -> float:
        """Seconds of unbroken contact up to the last answered probe (0 when broken)."""
        if self._since is None or self._last_ok is None:
            return 0.0
        now = time.monotonic() if now is None else now
        if now - self._last_ok > self.max_gap_s:
            return 0.0
        return self._last_ok - self._since
