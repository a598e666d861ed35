"""The stores an API process holds for its life, opened at start-up and closed at shutdown:
the database pool sized to the request threads, the Redis client and broker behind one
breaker, the telemetry hub's reader, and the warm-up thread (api/warm_up.py)."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import anyio.to_thread
from fastapi import FastAPI

from gpudeck.api.log_filters import install_log_filters
from gpudeck.api.telemetry_hub import TelemetryHub
from gpudeck.api.warm_up import warm_up
from gpudeck.core.celery_app import make_celery
from gpudeck.core.config import Settings
from gpudeck.core.db import API_TIMEOUTS, make_sessionmaker, service_engine
from gpudeck.core.redis import API_TIMEOUT_S, Breaker, async_client, pinger, sync_client
from gpudeck.services.executors.clusters import SlurmClients

# Worker threads for sync endpoints, and the database pool's size to match (see _lifespan).
API_THREADS = 8


def stores_lifespan(
    settings: Settings, *, freeze_heap: bool, ready_when_warm: bool
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The app's lifespan: the stores on app.state while it serves."""

    def lifespan(app: FastAPI) -> AbstractAsyncContextManager[None]:
        return _lifespan(app, settings, freeze_heap=freeze_heap, ready_when_warm=ready_when_warm)

    return lifespan


@asynccontextmanager
async def _lifespan(
    app: FastAPI, settings: Settings, *, freeze_heap: bool, ready_when_warm: bool
) -> AsyncIterator[None]:
    install_log_filters()  # no token in uvicorn's logs
    engine = service_engine(settings, pool_size=API_THREADS, timeouts=API_TIMEOUTS)
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
    # Slurm's commands on each cluster; over ssh, one connection per login node kept under
    # the app's data directory (made once, here).
    app.state.slurm_clients = SlurmClients.under(settings.data_dir)
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
