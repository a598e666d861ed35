"""A stalled Redis (SIGSTOP: a hang, not a crash) costs the API one bounded wait, then fails
at once until it answers again: for its client and for the broker it dispatches jobs through.
Before, redis-py retried a timed-out command with backoff and the broker send had no socket
timeout: a submit hung for the whole stall (tests/chaos/test_redis_stall.py shows the API)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis
from harness import TEST_NODE
from stores import RedisStore, remove_root, temp_root

from gpudeck.core.celery_app import make_celery, node_queue
from gpudeck.core.config import Settings
from gpudeck.core.redis import API_TIMEOUT_S, Breaker, sync_client
from gpudeck.services.dispatch import dispatch_job


@pytest.fixture
def store() -> Iterator[RedisStore]:
    root = temp_root()
    server = RedisStore(root)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        remove_root(root)


def timed(call: object) -> tuple[float, object]:
    started = time.monotonic()
    try:
        result = call()  # type: ignore[operator]
    except redis.RedisError as exc:
        result = exc
    return time.monotonic() - started, result


def test_a_stalled_redis_costs_one_bounded_wait_then_fails_fast(store: RedisStore) -> None:
    breaker = Breaker(open_s=1.0)
    client = sync_client(store.url, timeout_s=API_TIMEOUT_S, breaker=breaker)
    celery = make_celery(
        Settings(redis_url=store.url, node_name=TEST_NODE), publish_timeout_s=API_TIMEOUT_S
    )
    assert client.ping() and dispatch_job(celery, 1, TEST_NODE, breaker)
    store.pause()
    try:
        first, error = timed(lambda: client.get("x"))
        assert isinstance(error, redis.RedisError) and first < API_TIMEOUT_S + 0.5, first
        for _ in range(20):  # the other requests of the moment: no wait at all
            took, error = timed(lambda: client.get("x"))
            assert isinstance(error, redis.RedisError) and took < 0.05, took
            took, sent = timed(lambda: dispatch_job(celery, 2, TEST_NODE, breaker))
            assert sent is False and took < 0.05, took
        time.sleep(1.1)  # open time over: one call probes, and waits its bound
        probe, sent = timed(lambda: dispatch_job(celery, 3, TEST_NODE, breaker))
        assert sent is False and probe < API_TIMEOUT_S + 1.0, probe
    finally:
        store.resume()
    time.sleep(1.1)
    assert client.ping()
    assert dispatch_job(celery, 4, TEST_NODE, breaker)
    plain = redis.Redis.from_url(store.url)
    # Jobs 1 and 4, and maybe 3: the probe's bytes were in the socket when it timed out, and
    # Redis took them once resumed. The outbox sends it again: a second delivery is harmless
    # (a worker claims a job only while it is queued). Job 2 was never sent.
    assert plain.llen(node_queue(TEST_NODE)) in (2, 3)
