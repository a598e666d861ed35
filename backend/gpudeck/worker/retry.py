"""Retry a write to Postgres or Redis until the store answers again.

A running job must outlive a short outage of either store (a Postgres pause or restart, a
Redis restart): the worker's writes wait for the store, with backoff, instead of failing the
job. Errors that are not about reaching the store (a bug, a constraint) are raised at once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

import redis
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

log = logging.getLogger(__name__)
T = TypeVar("T")
FIRST_DELAY_S = 0.2
MAX_DELAY_S = 5.0
LOG_EVERY_S = 30.0


def store_unreachable(exc: BaseException) -> bool:
    """True for errors that say the store is down or restarting, not that the write is wrong."""
    if isinstance(exc, redis.ConnectionError | redis.TimeoutError | redis.BusyLoadingError):
        return True
    if isinstance(exc, OperationalError | InterfaceError):
        return True
    # A server restarting terminates sessions ("admin shutdown"): psycopg raises it as an
    # OperationalError subclass, or the pool reports the connection as invalidated.
    return isinstance(exc, DBAPIError) and exc.connection_invalidated


class Backoff:
    """Delays of 0.2, 0.4, ... up to 5 s."""

    def __init__(self) -> None:
        self.delay_s = FIRST_DELAY_S

    def wait(self) -> None:
        time.sleep(self.delay_s)
        self.delay_s = min(MAX_DELAY_S, self.delay_s * 2)

    def reset(self) -> None:
        self.delay_s = FIRST_DELAY_S


def until_stored(action: Callable[[], T], what: str) -> T:
    """Run `action` until it gets past an unreachable store (other errors raise at once)."""
    backoff = Backoff()
    started = time.monotonic()
    logged: float | None = None
    while True:
        try:
            result = action()
        except Exception as exc:
            if not store_unreachable(exc):
                raise
            now = time.monotonic()
            if logged is None or now - logged >= LOG_EVERY_S:
                log.warning("%s: store unreachable (%s); retrying", what, _short(exc))
                logged = now
            backoff.wait()
            continue
        if logged is not None:
            log.info("%s: done after %.1f s of store outage", what, time.monotonic() - started)
        return result


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"
