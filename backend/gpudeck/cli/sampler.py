"""`gpudeck sampler`: this node's telemetry sampler (also started by `gpudeck run`)."""

from __future__ import annotations

import logging

import typer

from gpudeck.cli.settings import err_console, load_service_settings
from gpudeck.cli.stopping import stop_on_signals


def sampler() -> None:
    """Sample this node's GPUs into Redis every interval and keep the device inventory current."""
    from gpudeck.core.db import make_sessionmaker, service_engine
    from gpudeck.core.redis import sync_client
    from gpudeck.services.cluster.sampler_store import DatabaseSamplerStore
    from gpudeck.services.cluster.sharing_source import DatabaseSharingSource
    from gpudeck.telemetry.factory import make_provider
    from gpudeck.telemetry.nvml import NvmlUnavailable
    from gpudeck.telemetry.sampler import Sampler

    settings = load_service_settings("sampler")
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(name)s %(message)s")
    try:
        provider = make_provider(settings)
    except NvmlUnavailable as exc:
        err_console.print(f"[red]GPUDECK_DEVICE_PROVIDER[/red]=nvml but NVML is unavailable: {exc}")
        raise typer.Exit(2) from None
    stop = stop_on_signals()
    engine = service_engine(settings, pool_size=1)
    client = sync_client(str(settings.redis_url))  # set: load_service_settings checked it
    sessions = make_sessionmaker(engine)
    try:
        logging.getLogger("gpudeck.sampler").info(
            "sampling %d %s device(s) every %.2f s as node %s",
            len(provider.inventory()),
            provider.source,
            settings.sample_interval_s,
            settings.node_name,
        )
        Sampler(
            provider,
            node=settings.node_name,
            redis_client=client,
            store=DatabaseSamplerStore(sessions, settings.node_address),
            interval_s=settings.sample_interval_s,
            history_s=settings.telemetry_history_s,
            # Jobs sharing a device are held to their reservations (docs/sharing.md).
            sharing=DatabaseSharingSource(sessions),
        ).run(stop)
    finally:
        provider.close()
        client.close()
        engine.dispose()


def register(app: typer.Typer) -> None:
    app.command()(sampler)
