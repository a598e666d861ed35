"""`gpudeck scheduler`: the periodic duties (reaping lost jobs, ...); one active instance per
GPUDeck, any number standing by (also started by `gpudeck run`)."""

from __future__ import annotations

import logging

import typer

from gpudeck.cli.settings import load_service_settings
from gpudeck.cli.stopping import stop_on_signals


def scheduler() -> None:
    """Run the scheduler: the active instance reaps lost jobs; others stand by to take over."""
    from gpudeck.core.db import service_engine
    from gpudeck.core.heap import freeze_startup_objects
    from gpudeck.core.redis import sync_client
    from gpudeck.scheduler.service import Scheduler

    settings = load_service_settings("scheduler")
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(name)s %(message)s")
    stop = stop_on_signals()
    engine = service_engine(settings, pool_size=2)
    client = sync_client(str(settings.redis_url))
    scheduler = Scheduler(settings, engine, client)
    freeze_startup_objects()  # a pass over a long queue then pays no collection of them
    try:
        scheduler.run(stop)
    finally:
        client.close()
        engine.dispose()


def register(app: typer.Typer) -> None:
    app.command()(scheduler)
