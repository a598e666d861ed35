"""Every route of the app in one place: the builder (main.create_app) includes this module and
nothing else of the routes, as full-stack-fastapi-template's api/main.py gathers its routers."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI

from gpudeck.api.routes import (
    auth,
    choices,
    clusters,
    datasets,
    estimates,
    gpus,
    job_runs,
    job_settings,
    jobs,
    meta,
    metrics,
    queue,
    recommend,
    sweeps,
    ws_jobs,
    ws_telemetry,
)
from gpudeck.api.routes.dashboard import DEFAULT_DIST, dashboard_router
from gpudeck.api.routes.docs import router as docs_router
from gpudeck.api.sessions import release_sessions_in_endpoint_thread

API_ROUTERS = tuple(
    m.router
    for m in (
        meta,
        gpus,
        recommend,
        job_settings,  # before jobs: /api/jobs/diff is no job id
        jobs,
        estimates,
        auth,
        datasets,
        choices,
        metrics,
        ws_telemetry,
        job_runs,
        queue,
        sweeps,
        clusters,
        ws_jobs,
    )
)


def include_routes(app: FastAPI, dashboard_dir: Path | None) -> None:
    """The API's routes (each releasing its session in the endpoint's thread), /docs, and the
    dashboard last: its catch-all path must not shadow the API."""
    for router in API_ROUTERS:
        app.include_router(release_sessions_in_endpoint_thread(router))
    app.include_router(docs_router)
    app.include_router(dashboard_router(dashboard_dir or DEFAULT_DIST))
