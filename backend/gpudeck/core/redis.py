"""Redis clients. URLs may be redis://, rediss:// or unix:// (the embedded server's socket)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import redis
import redis.asyncio as aioredis
from redis.backoff import NoBackoff
from redis.retry import Retry

# The API's bounds: a stopped Redis is an error within this, never a hang. Blocking reads
# (XREAD BLOCK) add their block time on top (see async_client).
API_TIMEOUT_S = 1.5
# After a timeout the API does not call Redis from a request again until a background probe
# (one PING every this long) gets an answer: one request pays the timeout, the others fail at
# once, and no request ever pays a probe's wait. Once Redis answers, the API is back within it.
BREAKER_OPEN_S = 1.0
# At most this many of the API's request threads wait on Redis at once; another caller waits
# at most BULKHEAD_WAIT_S for a turn (holding a request thread meanwhile), then fails as if
# Redis were down. A command takes well under a millisecond, so in normal use nobody waits;
# when Redis stalls, a burst of requests that all reached it before the first timeout tripped
# the breaker no longer holds every thread (the health check waited 1.2 s behind eight).
BULKHEAD = 4
BULKHEAD_WAIT_S = 0.5

T = TypeVar("T")


class RedisUnavailable(redis.ConnectionError):
    """Not tried: Redis did not answer a moment ago, or too many calls wait on it now."""


class Breaker:
    """A circuit breaker and bulkhead shared by the API's Redis client and its broker.

    `call(fn)` runs `fn` unless the breaker is open; a `failures` exception from it opens the
    breaker. While open, a daemon thread runs `probe` every `open_s` and closes the breaker
    at its first answer, so a request never waits on a stalled Redis more than once: a caller
    that waited for a bulkhead slot while the breaker opened fails without calling."""

    def __init__(
        self,
        probe: Callable[[], object],
        *,
        open_s: float = BREAKER_OPEN_S,
        bulkhead: int = BULKHEAD,
        bulkhead_wait_s: float = BULKHEAD_WAIT_S,
    ) -> None:
        self.probe = probe
        self.open_s = open_s
        self.bulkhead_wait_s = bulkhead_wait_s
        self._slots = threading.BoundedSemaphore(bulkhead)
        self._lock = threading.Lock()
        self._open = False
        self._trips = 0  # how many times it opened: a waiter sees whether it did meanwhile
        self._prober: threading.Thread | None = None

    def call(self, fn: Callable[[], T], failures: tuple[type[BaseException], ...]) -> T:
        trips = self._trips
        if self._open:
            raise RedisUnavailable("Redis did not answer a moment ago; not trying again yet")
        if not self._slots.acquire(timeout=self.bulkhead_wait_s):
            raise RedisUnavailable("Redis is slow to answer; not waiting in line")
        try:
            if self._trips != trips:  # it stalled while this caller waited for a slot
                raise RedisUnavailable("Redis stopped answering; not trying again yet")
            try:
                return fn()
            except failures:
                self.trip()
                raise
        finally:
            self._slots.release()

    def trip(self) -> None:
        with self._lock:
            self._trips += 1
            self._open = True
            if self._prober is None:
                self._prober = threading.Thread(
                    target=self._probe_until_closed, name="redis-breaker-probe", daemon=True
                )
                self._prober.start()

    def _probe_until_closed(self) -> None:
        while True:
            time.sleep(self.open_s)
            try:
                self.probe()
            except Exception:  # any failure: still down, probe again later
                continue
            with self._lock:
                self._open = False
                self._prober = None
            return


class _BreakerClient(redis.Redis):
    """redis.Redis whose commands go through the breaker."""

    breaker: Breaker

    def execute_command(self, *args: Any, **options: Any) -> Any:
        run = super().execute_command
        return self.breaker.call(lambda: run(*args, **options), (redis.TimeoutError,))


def pinger(url: str, timeout_s: float) -> Callable[[], object]:
    """A breaker's probe: one PING, bounded by `timeout_s`, never retried."""
    client = redis.Redis.from_url(
        url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, retry=Retry(NoBackoff(), 0)
    )
    return client.ping


def sync_client(
    url: str, *, timeout_s: float | None = None, breaker: Breaker | None = None
) -> redis.Redis:
    """With a `breaker`: no retries (redis-py retries a timed-out command 3 times by default,
    with backoff: a stalled server held each call for many times the timeout) and every
    command through the breaker; the API's client. Without: redis-py's defaults."""
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
