"""Redis clients. URLs may be redis://, rediss:// or unix:// (the embedded server's socket)."""

from __future__ import annotations

import redis
import redis.asyncio as aioredis

# The API's bounds: a stopped Redis is an error within this, never a hang. Blocking reads
# (XREAD BLOCK) add their block time on top (see async_client).
API_TIMEOUT_S = 1.5


def sync_client(url: str, *, timeout_s: float | None = None) -> redis.Redis:
    return redis.Redis.from_url(
        url, decode_responses=True, socket_timeout=timeout_s, socket_connect_timeout=timeout_s
    )


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
