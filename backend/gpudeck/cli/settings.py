"""Loading settings for a CLI command: a bad environment is a clear message, not a traceback."""

from __future__ import annotations

import typer
from pydantic import ValidationError
from rich.console import Console

from gpudeck.core.config import Settings

err_console = Console(stderr=True)


def load_settings() -> Settings:
    try:
        return Settings()
    except ValidationError as exc:
        for error in exc.errors():
            field = ".".join(str(p) for p in error["loc"]) or "settings"
            err_console.print(f"[red]GPUDECK_{field.upper()}[/red]: {error['msg']}")
        raise typer.Exit(2) from None


def load_service_settings(command: str) -> Settings:
    """Settings for a part run on its own (api, worker, sampler): it joins an existing
    PostgreSQL and Redis, so both URLs must be set; only `gpudeck run` starts embedded ones."""
    settings = load_settings()
    if settings.database_url is None or settings.redis_url is None:
        err_console.print(
            f"[red]gpudeck {command}[/red] needs GPUDECK_DATABASE_URL and GPUDECK_REDIS_URL; "
            "`gpudeck run` starts embedded ones"
        )
        raise typer.Exit(2)
    return settings
