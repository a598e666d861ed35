"""FastAPI application factory: settings in, app out."""

from __future__ import annotations

from fastapi import FastAPI

from gpudeck import __version__
from gpudeck.api.body_limit import BodyLimitMiddleware
from gpudeck.api.errors import install_error_handlers
from gpudeck.api.lifespan import stores_lifespan
from gpudeck.api.outage import StoreOutageMiddleware
from gpudeck.api.router import include_routes
from gpudeck.api.routes.docs import install_bearer_scheme
from gpudeck.api.security import SecurityMiddleware, check_bind
from gpudeck.core.config import Settings, get_settings


def create_server_app(settings: Settings | None = None) -> FastAPI:
    """The app of a `gpudeck api` process (uvicorn's factory with --workers): as create_app,
    and its start-up heap, PyTorch's included, is kept out of garbage collection once warm
    (one submit 1.3 ms of CPU less at 200 clients; bench/scheduler.py submit). It is ready,
    /api/health 200, once warm (api/warm_up.py): until then health answers 503 `warming`, so that a
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
    app = FastAPI(
        title="GPUDeck",
        version=__version__,
        description="Run distributed PyTorch training on the GPUs of a workstation or cluster.",
        lifespan=stores_lifespan(
            settings, freeze_heap=freeze_heap, ready_when_warm=ready_when_warm
        ),
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
