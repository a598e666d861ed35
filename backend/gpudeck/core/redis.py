"""Redis clients. URLs may be redis://, rediss:// or unix:// (the embedded server's socket)."""

from __future__ import annotations

import redis
import redis.asyncio as aioredis


def sync_client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, decode_responses=True)


def async_client(url: str) -> aioredis.Redis:
    return aioredis.Redis.from_url(url, decode_responses=True)


def celery_broker_url(url: str) -> str:
    """kombu names a unix socket `redis+socket://`, redis-py `unix://`."""
    if url.startswith("unix://"):
        return "redis+socket://" + url.removeprefix("unix://")
    return url
