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
