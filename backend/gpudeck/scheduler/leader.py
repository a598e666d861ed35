"""Leadership by a session-level Postgres advisory lock, held on one dedicated connection.

The lock lives exactly as long as that connection: if this process dies, or Postgres restarts,
it is released and a standby takes it. Every probe runs on the same connection, so a probe that
succeeds also proves the lock is still ours.
"""

from __future__ import annotations

import contextlib
import logging

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import DBAPIError

log = logging.getLogger(__name__)
# "gpudeck" as a 64-bit key: one lock for the scheduler, whoever runs it.
LOCK_KEY = int.from_bytes(b"gpudeck\x00", "big") >> 1


class Leadership:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._conn: Connection | None = None
        self.held = False

    def probe(self) -> bool:
        """Reach the database and try to hold the lock; True if we hold it now.

        Raises DBAPIError when the database cannot be reached (leadership is then given up)."""
        try:
            if self._conn is None:
                self._conn = self._engine.connect()
            if self.held:
                self._conn.execute(text("SELECT 1"))
            else:
                self.held = bool(
                    self._conn.execute(
                        text("SELECT pg_try_advisory_lock(:key)"), {"key": LOCK_KEY}
                    ).scalar()
                )
                self._conn.commit()  # end the implicit transaction; the session lock stays
                if self.held:
                    log.info("this scheduler is now the active one")
            return self.held
        except DBAPIError:
            self.release()
            raise

    def release(self, *, stopping: bool = False) -> None:
        if self.held:
            # Losing the lock is news; giving it up on the way out is not.
            log.log(
                logging.INFO if stopping else logging.WARNING,
                "this scheduler is no longer the active one",
            )
        held, self.held = self.held, False
        if self._conn is not None:
            conn, self._conn = self._conn, None
            if held:  # a standby may take over at its next tick, not once this backend exits
                with contextlib.suppress(DBAPIError):  # unreachable: the session ends anyway
                    conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": LOCK_KEY})
            try:
                conn.invalidate()  # never back to the pool: its session may hold the lock
                conn.close()
            except Exception:  # a broken connection may fail to close; it is gone either way
                log.debug("closing the lock connection failed", exc_info=True)
