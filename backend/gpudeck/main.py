"""FastAPI application factory: settings in, app out."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from gpudeck import __version__
from gpudeck.api.body_limit import BodyLimitMiddleware
from gpudeck.api.errors import install_error_handlers
from gpudeck.api.routes import gpus, jobs, meta
from gpudeck.api.routes.dashboard import dashboard_router
from gpudeck.core.celery_app import make_celery
from gpudeck.core.config import Settings, get_settings
from gpudeck.core.db import make_engine, make_sessionmaker

log = logging.getLogger(__name__)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = make_engine(settings.sqlalchemy_url)
        app.state.settings = settings
        app.state.engine = engine
        app.state.sessionmaker = make_sessionmaker(engine)
        app.state.celery = make_celery(settings)
        try:
            yield
        finally:
            engine.dispose()

    app = FastAPI(
        title="GPUDeck",
        version=__version__,
        description="Run distributed PyTorch training on the GPUs of a workstation or cluster.",
        lifespan=lifespan,
    )
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    install_error_handlers(app)
    for module in (meta, gpus, jobs):
        app.include_router(module.router)
    # Last: its catch-all path must not shadow the API.
    app.include_router(dashboard_router())
    return app
