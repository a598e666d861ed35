"""What a `gpudeck api` process pays before it says ready (app.state.warm): the memory
estimate's first trace, each kind's code, and with `requests` the first request's set-up on
every path (services/warm_up.py runs the statements)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import redis
from fastapi import FastAPI
from sqlalchemy.orm import Session, configure_mappers

from gpudeck.core.config import Settings
from gpudeck.core.heap import freeze_startup_objects
from gpudeck.engine.kinds import registry
from gpudeck.services import warm_up as warm_up_service
from gpudeck.services.submit.estimates import estimate_bytes_per_device

log = logging.getLogger(__name__)


def warm_up(app: FastAPI, *, freeze_heap: bool = False, requests: bool = False) -> None:
    """Pay before the process says ready (app.state.warm) what its first requests would each
    pay once: the memory estimate (torch's import and a trace: seconds) and each kind's code;
    with `requests`, also the routes' set-up (FastAPI builds each included route's
    dependencies on its first match; building the OpenAPI schema does it for all), the ORM's,
    the statements of the token lookup and the submit path's reads, and the first Redis
    connection. Failed or not, it ends ready. `freeze_heap`: then keep everything alive
    (PyTorch included) out of garbage collection (core/heap.py)."""
    started = time.monotonic()
    try:
        warm_estimator()
        warm_up_service.import_kind_code()
        if requests:
            app.openapi()
            warm_database(app.state.sessionmaker, app.state.settings)
            warm_redis(app.state.redis)
        if freeze_heap:
            freeze_startup_objects()
    finally:
        app.state.warm.set()
        log.info("warm in %.1f s", time.monotonic() - started)


def warm_estimator() -> None:
    """Estimate each kind's default config once, so the first submit and form answer at once."""
    for kind in registry().values():
        if not kind.warm_estimate:
            continue
        try:
            estimate_bytes_per_device(kind.name, kind.config_model().model_dump(), 1)
        except Exception:  # a warm-up is an optimisation: never let it take the API down
            log.exception("warming the memory estimate of kind %r failed", kind.name)


def warm_database(sessionmaker: Callable[[], Session], settings: Settings) -> None:
    """The ORM's one-time configuration, then statements compiled into the engine's cache by
    running them (services/warm_up.py), in a transaction rolled back."""
    try:
        configure_mappers()
        with sessionmaker() as session:
            warm_up_service.token_path(session)
            warm_up_service.read_submit_path(session, settings.fair_share_half_life_s)
            session.rollback()
    except Exception:  # the database may be down: health and requests will say so
        log.exception("warming the database path failed")


def warm_redis(client: redis.Redis) -> None:
    """The API client's first connection (redis-py sends its library version, read from the
    package's metadata, on each new one): every submit reads the queue summary through it."""
    try:
        client.ping()
    except redis.RedisError:  # down or stalled: the breaker and the outbox deal with it
        log.warning("warming the Redis connection failed")
