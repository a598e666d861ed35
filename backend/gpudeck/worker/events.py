"""Events the worker itself adds to a job's stream (status changes), in the ranks' format:
flat string fields `type`, `job_id`, `rank` (-1: the worker), `ts` and `data` (JSON)."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import redis

from gpudeck.services.job_events import job_stream

log = logging.getLogger(__name__)
STREAM_MAXLEN = 10_000
FINISHED_STREAM_TTL_S = 7 * 24 * 3600


def publish(client: redis.Redis, job_id: int, event_type: str, data: dict[str, Any]) -> None:
    fields = {
        "type": event_type,
        "job_id": str(job_id),
        "rank": "-1",
        "ts": f"{time.time():.6f}",
        "data": json.dumps(data),
    }
    try:
        client.xadd(job_stream(job_id), fields, maxlen=STREAM_MAXLEN, approximate=True)  # type: ignore[arg-type]
    except redis.RedisError:
        log.warning("could not publish %s for job %s", event_type, job_id, exc_info=True)


def publish_status(
    client: redis.Redis, job_id: int, status: str, *, error: str | None = None
) -> None:
    publish(client, job_id, "status", {"status": status, "error": error})


def expire_stream(client: redis.Redis, job_id: int) -> None:
    """A finished job's stream stays a while for late viewers, then goes."""
    try:
        client.expire(job_stream(job_id), FINISHED_STREAM_TTL_S)
    except redis.RedisError:
        log.warning("could not set the expiry of job %s's stream", job_id, exc_info=True)
