"""A stalled Redis (SIGSTOP: a hang, not a crash) costs the API one bounded wait, then fails
at once until a background probe hears it again: for its client and for the broker it
dispatches jobs through.
Before, redis-py retried a timed-out command with backoff and the broker send had no socket
timeout: a submit hung for the whole stall (tests/chaos/test_redis_stall.py shows the API)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import redis
from harness import TEST_NODE
from stores import RedisStore, remove_root, temp_root

from gpudeck.core.celery_app import make_celery, node_queue
from gpudeck.core.config import Settings
from gpudeck.core.redis import API_TIMEOUT_S, Breaker, RedisUnavailable, pinger, sync_client
from gpudeck.services.queue.dispatch import dispatch_job


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
    breaker = Breaker(pinger(store.url, API_TIMEOUT_S), open_s=1.0)
    client = sync_client(store.url, timeout_s=API_TIMEOUT_S, breaker=breaker)
    celery = make_celery(
        Settings(redis_url=store.url, node_name=TEST_NODE), publish_timeout_s=API_TIMEOUT_S
    )
    assert client.ping() and dispatch_job(celery, 1, TEST_NODE, breaker)
    store.pause()
    try:
        first, error = timed(lambda: client.get("x"))
        assert isinstance(error, redis.RedisError) and first < API_TIMEOUT_S + 0.5, first
        for round_ in range(3):  # the other requests, also after the open time: no wait at all
            for _ in range(10):
                took, error = timed(lambda: client.get("x"))
                assert isinstance(error, redis.RedisError) and took < 0.05, (round_, took)
                took, sent = timed(lambda: dispatch_job(celery, 2, TEST_NODE, breaker))
                assert sent is False and took < 0.05, (round_, took)
            time.sleep(1.1)  # the probe tries again meanwhile, and a request never waits for it
    finally:
        store.resume()
    back = time.monotonic()
    while time.monotonic() - back < 5:  # the next probe hears it
        try:
            assert client.ping()
            break
        except redis.RedisError:
            time.sleep(0.05)
    recovered = time.monotonic() - back
    assert recovered < 1.0 + API_TIMEOUT_S + 0.5, recovered
    assert dispatch_job(celery, 4, TEST_NODE, breaker)
    plain = redis.Redis.from_url(store.url)
    # Jobs 1 and 4; job 2 was never sent.
    assert plain.llen(node_queue(TEST_NODE)) == 2


def test_a_caller_that_waited_for_a_slot_while_redis_stalled_does_not_call_it() -> None:
    """The bulkhead's queue: a burst reached a stalled Redis before the first timeout; the
    callers queued behind the slots fail as soon as one times out, without a wait of their
    own (before, each took its slot and waited out the timeout again: a submit took 3.5 s)."""
    breaker = Breaker(lambda: None, open_s=60.0, bulkhead=1, bulkhead_wait_s=5.0)
    release = threading.Event()
    calls: list[str] = []

    def stalled() -> None:
        calls.append("stalled")
        release.wait(5)
        raise redis.TimeoutError("Timeout reading from socket")

    first = threading.Thread(
        target=lambda: timed(lambda: breaker.call(stalled, (redis.TimeoutError,)))
    )
    first.start()
    while not calls:
        time.sleep(0.01)
    threading.Timer(0.3, release.set).start()
    took, error = timed(lambda: breaker.call(lambda: calls.append("queued"), (redis.TimeoutError,)))
    first.join()
    assert isinstance(error, RedisUnavailable) and calls == ["stalled"], (error, calls)
    assert 0.25 < took < 0.6, took  # it waited for the slot, not for a timeout of its own
