"""Server commands: run (everything on one machine), api, migrate."""

from __future__ import annotations

import logging
from typing import Annotated, Any

import typer
import uvicorn

from gpudeck.cli.settings import err_console, load_service_settings, load_settings
from gpudeck.core import migrate as migrations
from gpudeck.core.embedded import EmbeddedServices


def api(
    workers: Annotated[
        int, typer.Option(min=1, max=64, help="API processes sharing the port (GIL-bound load)")
    ] = 1,
) -> None:
    """Serve the REST API, WebSockets and dashboard (needs configured database and Redis URLs)."""
    settings = load_service_settings("api")
    from gpudeck.main import create_app

    # Several workers need an import string: each process builds its app from the environment.
    app: Any = "gpudeck.main:create_app" if workers > 1 else create_app(settings)
    uvicorn.run(
        app,
        factory=workers > 1,
        workers=workers,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        timeout_graceful_shutdown=5,
    )


def migrate() -> None:
    """Bring the database schema up to date (Alembic)."""
    settings = load_settings()
    services = EmbeddedServices(settings.data_dir, settings.database_url)
    try:
        if settings.database_url is None:
            settings.database_url = services.start_postgres()
        migrations.upgrade(settings.sqlalchemy_url)
        err_console.print("database schema is up to date")
    finally:
        services.stop()


def run() -> None:
    """Run everything on this machine: API, worker, sampler and dashboard, with embedded
    PostgreSQL and Redis where no URLs are configured."""
    from gpudeck.cli.supervisor import run_all

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    raise typer.Exit(run_all(load_settings()))


def register(app: typer.Typer) -> None:
    app.command()(run)
    app.command()(api)
    app.command()(migrate)
