"""FastAPI application factory: settings in, app out."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio.to_thread
import redis
from fastapi import FastAPI
from sqlalchemy.orm import Session, configure_mappers

from gpudeck import __version__
from gpudeck.api.body_limit import BodyLimitMiddleware
from gpudeck.api.errors import install_error_handlers
from gpudeck.api.log_filters import install_log_filters
from gpudeck.api.outage import StoreOutageMiddleware
from gpudeck.api.router import include_routes
from gpudeck.api.routes.docs import install_bearer_scheme
from gpudeck.api.security import SecurityMiddleware, check_bind
from gpudeck.api.telemetry_hub import TelemetryHub
from gpudeck.core.celery_app import make_celery
from gpudeck.core.config import Settings, get_settings
from gpudeck.core.db import API_TIMEOUTS, make_engine, make_sessionmaker
from gpudeck.core.heap import freeze_startup_objects
from gpudeck.core.redis import API_TIMEOUT_S, Breaker, async_client, pinger, sync_client
from gpudeck.engine.kinds import registry
from gpudeck.services import warm_up as warm_up_service
from gpudeck.services.submit.estimates import estimate_bytes_per_device

log = logging.getLogger(__name__)
# Worker threads for sync endpoints, and the database pool's size to match (see lifespan).
API_THREADS = 8


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


def create_server_app(settings: Settings | None = None) -> FastAPI:
    """The app of a `gpudeck api` process (uvicorn's factory with --workers): as create_app,
    and its start-up heap, PyTorch's included, is kept out of garbage collection once warm
    (one submit 1.3 ms of CPU less at 200 clients; bench/scheduler.py submit). It is ready,
    /api/health 200, once warm (warm_up): until then health answers 503 `warming`, so that a
    submit right after health does not wait for torch's import (bench/first_submit.py)."""
    return create_app(settings, freeze_heap=True, ready_when_warm=True)


def create_app(
    settings: Settings | None = None, *, freeze_heap: bool = False, ready_when_warm: bool = False
) -> FastAPI:
    """`freeze_heap` is for a process that serves this one app until it exits (see
    create_server_app); tests build and drop apps, and must not freeze them. With
    `ready_when_warm`, /api/health says `warming` (503) until warm_up is done."""
    settings = settings or get_settings()
    check_bind(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        install_log_filters()  # no token in uvicorn's logs
        engine = make_engine(settings.sqlalchemy_url, pool_size=API_THREADS, timeouts=API_TIMEOUTS)
        # Sync endpoints (and token lookups) run in this many threads, each holding at most
        # one pooled connection: the pool never has to open overflow connections under load
        # (they are closed as they come back, and under a burst the churn of opening new ones
        # made requests wait past the connect timeout: 503s in bench/scheduler.py submit
        # --workers 2). Under the GIL more threads only add switching: at 200 clients, 20
        # threads served 145-173 submits/s at 6.3-7.5 ms of CPU each, 8 threads 187-199/s at
        # 5.3-5.4 ms, 4 no better (anyio's default is 40). Eight still leave room for requests
        # waiting on a row lock or a slow disk.
        anyio.to_thread.current_default_thread_limiter().total_tokens = API_THREADS
        app.state.settings = settings
        app.state.engine = engine
        app.state.sessionmaker = make_sessionmaker(engine)
        # For a read (or a write) that needs no transaction around it: one round trip, no
        # BEGIN and COMMIT. The token lookup of every request uses it.
        app.state.autocommit_sessionmaker = make_sessionmaker(
            engine.execution_options(isolation_level="AUTOCOMMIT")
        )
        # One breaker for the Redis client and the broker (the same server): after either
        # times out, requests skip Redis for a moment instead of each waiting out the stall.
        app.state.redis_breaker = Breaker(pinger(str(settings.redis_url), API_TIMEOUT_S))
        app.state.celery = make_celery(settings, publish_timeout_s=API_TIMEOUT_S)
        app.state.redis = sync_client(
            str(settings.redis_url), timeout_s=API_TIMEOUT_S, breaker=app.state.redis_breaker
        )
        hub = TelemetryHub(
            async_client(str(settings.redis_url), timeout_s=API_TIMEOUT_S, block_s=1.0),
            history_s=settings.telemetry_history_s,
        )
        app.state.telemetry_hub = hub
        await hub.start()
        # Importing torch and tracing the first estimate takes seconds; do it now, off the
        # event loop, rather than in the first user's POST /api/jobs.
        app.state.warm = threading.Event()
        if not ready_when_warm:
            app.state.warm.set()  # health does not wait for it (tests' apps)
        threading.Thread(
            target=warm_up,
            args=(app,),
            # Tests' apps warm no request path: its statements would run beside the test's.
            kwargs={"freeze_heap": freeze_heap, "requests": ready_when_warm},
            name="warm-up",
            daemon=True,
        ).start()
        try:
            yield
        finally:
            await hub.stop()
            await hub.redis.aclose()
            app.state.redis.close()
            engine.dispose()

    app = FastAPI(
        title="GPUDeck",
        version=__version__,
        description="Run distributed PyTorch training on the GPUs of a workstation or cluster.",
        lifespan=lifespan,
        docs_url=None,  # served from GPUDeck's own assets (api/routes/docs.py), not a CDN
        redoc_url=None,
    )
    install_bearer_scheme(app)
    app.add_middleware(
        BodyLimitMiddleware,
        max_bytes=settings.max_body_bytes,
        overrides={"/api/datasets": settings.max_dataset_bytes},
    )
    # Added last, so outermost: Host, Origin and token are checked before anything else runs.
    app.add_middleware(SecurityMiddleware, settings=settings)
    # Outermost of all: a store outage anywhere below, the token lookup included, is a 503.
    app.add_middleware(StoreOutageMiddleware)
    install_error_handlers(app)
    include_routes(app, settings.dashboard_dir)
    return app
