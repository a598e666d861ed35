"""Redis clients. URLs may be redis://, rediss:// or unix:// (the embedded server's socket)."""

from __future__ import annotations

import threading
import time
from typing import Any

import redis
import redis.asyncio as aioredis
from redis.backoff import NoBackoff
from redis.retry import Retry

# The API's bounds: a stopped Redis is an error within this, never a hang. Blocking reads
# (XREAD BLOCK) add their block time on top (see async_client).
API_TIMEOUT_S = 1.5
# After a timeout, the API does not try Redis again for this long: one request pays the
# timeout, the others fail at once (a stalled Redis held every request thread before); once
# Redis answers again, the API is back within it.
BREAKER_OPEN_S = 1.0


# At most this many of the API's request threads wait on Redis at once; another caller waits
# at most BULKHEAD_WAIT_S for a turn, then fails as if Redis were down. A command takes well
# under a millisecond, so in normal use nobody waits; when Redis stalls, a burst of requests
# that all reached it before the first timeout tripped the breaker no longer holds every thread
# (the health check waited 1.2 s behind eight of them).
BULKHEAD = 4
BULKHEAD_WAIT_S = 1.0


class Breaker:
    """A circuit breaker shared by the API's Redis client and its broker: after a failure,
    `allow()` is False for `open_s`, then lets one call through to probe. `acquire_slot()`
    and `release_slot()` are the bulkhead every call passes through."""

    def __init__(self, open_s: float = BREAKER_OPEN_S, bulkhead: int = BULKHEAD) -> None:
        self.open_s = open_s
        self._lock = threading.Lock()
        self._until = 0.0
        self._slots = threading.BoundedSemaphore(bulkhead)

    def acquire_slot(self) -> bool:
        return self._slots.acquire(timeout=BULKHEAD_WAIT_S)

    def release_slot(self) -> None:
        self._slots.release()

    def allow(self) -> bool:
        with self._lock:
            now = time.monotonic()
            if now < self._until:
                return False
            if self._until:  # half open: this caller probes, the others wait for its answer
                self._until = now + self.open_s
            return True

    def failed(self) -> None:
        with self._lock:
            self._until = time.monotonic() + self.open_s

    def succeeded(self) -> None:
        with self._lock:
            self._until = 0.0


class _BreakerClient(redis.Redis):
    """redis.Redis whose commands fail at once while the breaker is open."""

    breaker: Breaker

    def execute_command(self, *args: Any, **options: Any) -> Any:
        if not self.breaker.allow():
            raise redis.ConnectionError("Redis did not answer a moment ago; not trying again yet")
        if not self.breaker.acquire_slot():
            raise redis.ConnectionError("Redis is slow to answer; not waiting in line")
        try:
            result = super().execute_command(*args, **options)
        except redis.TimeoutError:  # a stall: the next callers would wait the same
            self.breaker.failed()
            raise
        finally:
            self.breaker.release_slot()
        self.breaker.succeeded()
        return result


def sync_client(
    url: str, *, timeout_s: float | None = None, breaker: Breaker | None = None
) -> redis.Redis:
    """With a `breaker`: no retries (redis-py retries a timed-out command 3 times by default,
    with backoff: a stalled server held each call for many times the timeout) and the
    breaker's fail-fast; the API's client. Without: redis-py's defaults."""
    if breaker is None:
        return redis.Redis.from_url(
            url, decode_responses=True, socket_timeout=timeout_s, socket_connect_timeout=timeout_s
        )
    client: _BreakerClient = _BreakerClient.from_url(  # type: ignore[assignment]
        url,
        decode_responses=True,
        socket_timeout=timeout_s,
        socket_connect_timeout=timeout_s,
        retry=Retry(NoBackoff(), 0),
    )
    client.breaker = breaker
    return client


def async_client(
    url: str, *, timeout_s: float | None = None, block_s: float = 0.0
) -> aioredis.Redis:
    """`block_s`: the longest blocking read the client makes, added to the read timeout."""
    return aioredis.Redis.from_url(
        url,
        decode_responses=True,
        socket_timeout=None if timeout_s is None else timeout_s + block_s,
        socket_connect_timeout=timeout_s,
    )


def celery_broker_url(url: str) -> str:
    """kombu names a unix socket `redis+socket://`, redis-py `unix://`."""
    if url.startswith("unix://"):
        return "redis+socket://" + url.removeprefix("unix://")
    return url
