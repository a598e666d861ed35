"""Server commands: run (everything on one machine), api, migrate."""

from __future__ import annotations

import logging
import os
import warnings
from typing import Annotated, Any

import typer

from gpudeck.cli.settings import err_console, load_service_settings, load_settings


def api(
    workers: Annotated[
        int, typer.Option(min=1, max=64, help="API processes sharing the port (GIL-bound load)")
    ] = 1,
) -> None:
    """Serve the REST API, WebSockets and dashboard (needs configured database and Redis URLs)."""
    import uvicorn

    from gpudeck.main import create_server_app

    settings = load_service_settings("api")

    # Several workers need an import string: each process builds its app from the environment.
    if workers > 1:
        app: Any = "gpudeck.main:create_server_app"
    else:
        app = create_server_app(settings)
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
    from gpudeck.core import migrate as migrations
    from gpudeck.core.embedded import EmbeddedServices

    settings = load_settings()
    services = EmbeddedServices(settings.data_dir, settings.database_url)
    try:
        if settings.database_url is None:
            settings.database_url = services.start_postgres()
        migrations.upgrade(settings.sqlalchemy_url)
        err_console.print("database schema is up to date")
    finally:
        services.stop()


def run(
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="every part's log, access logs included")
    ] = False,
) -> None:
    """Run everything on this machine: API, worker, sampler and dashboard, with embedded
    PostgreSQL and Redis where no URLs are configured. Quiet by default: the address, the
    sign-in link, and warnings or errors (a part that died and is restarted)."""
    from gpudeck.cli.supervisor import run_all

    quiet = not verbose and "GPUDECK_LOG_LEVEL" not in os.environ
    if quiet:
        quiet_environment()
    level = logging.INFO if not quiet else logging.WARNING
    logging.basicConfig(level=level, format="%(asctime)s %(name)s %(message)s")
    raise typer.Exit(run_all(load_settings(), quiet=quiet))


def quiet_environment() -> None:
    """Parts log warnings and errors only (no access logs, no Celery banner), and Python's
    warnings about the environment (running as root, runtime dirs) stay out of the terminal;
    the children inherit both through the environment."""
    os.environ["GPUDECK_LOG_LEVEL"] = "warning"
    os.environ["PYTHONWARNINGS"] = "ignore"
    warnings.simplefilter("ignore")


def register(app: typer.Typer) -> None:
    app.command()(run)
    app.command()(api)
    app.command()(migrate)
