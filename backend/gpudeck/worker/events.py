"""Events the worker itself adds to a job's stream (status changes), in the ranks' wire format
(engine.events), with rank WORKER_RANK."""

from __future__ import annotations

import logging
from typing import Any

import redis

from gpudeck.engine.events import STREAM_MAXLEN, WORKER_RANK, encode
from gpudeck.services.jobs.events import job_stream

log = logging.getLogger(__name__)
FINISHED_STREAM_TTL_S = 7 * 24 * 3600


def send(client: redis.Redis, job_id: int, event_type: str, data: dict[str, Any]) -> None:
    """Add one event to the job's stream; raises RedisError (callers that must not lose it
    retry, see worker.retry)."""
    fields = encode(event_type, job_id, WORKER_RANK, data)
    client.xadd(job_stream(job_id), fields, maxlen=STREAM_MAXLEN, approximate=True)  # type: ignore[arg-type]


def publish(client: redis.Redis, job_id: int, event_type: str, data: dict[str, Any]) -> None:
    """Best effort: a Redis error is logged, not raised."""
    try:
        send(client, job_id, event_type, data)
    except redis.RedisError:
        log.warning("could not publish %s for job %s", event_type, job_id, exc_info=True)


def status_data(status: str, error: str | None = None) -> dict[str, Any]:
    return {"status": status, "error": error}


def publish_status(
    client: redis.Redis, job_id: int, status: str, *, error: str | None = None
) -> None:
    publish(client, job_id, "status", status_data(status, error))


def expire_stream(client: redis.Redis, job_id: int) -> None:
    """A finished job's stream stays a while for late viewers, then goes."""
    try:
        client.expire(job_stream(job_id), FINISHED_STREAM_TTL_S)
    except redis.RedisError:
        log.warning("could not set the expiry of job %s's stream", job_id, exc_info=True)
