"""What every client command shares: the API's address, the token, one request helper whose
errors are one line each, and output that fits the terminal without cutting names."""

from __future__ import annotations

import functools
import json
import os
import ssl
import sys
from typing import Annotated, Any, NoReturn

import httpx
import typer
from rich.console import Console
from rich.table import Table

# Piped output is not cut at rich's default of 80 columns: a table is as wide as its content.
WIDE = None if sys.stdout.isatty() or "COLUMNS" in os.environ else 1000
console = Console(width=WIDE)
err_console = Console(stderr=True, soft_wrap=True)  # a message is one line, never cut

UrlOption = Annotated[
    str,
    typer.Option(envvar="GPUDECK_URL", help="the GPUDeck API (default from GPUDECK_HOST/PORT)"),
]
JsonOption = Annotated[bool, typer.Option("--json", help="print JSON for scripts")]
NO_TOKEN = (
    "no token: set GPUDECK_TOKEN to your API token (an admin makes one with gpudeck user create)"
)
BAD_TOKEN = "the token in GPUDECK_TOKEN was refused (wrong, expired or revoked): set a valid one"


def default_url() -> str:
    host = os.environ.get("GPUDECK_HOST", "127.0.0.1")
    return f"http://{host}:{os.environ.get('GPUDECK_PORT', '8000')}"


def auth_headers() -> dict[str, str]:
    token = os.environ.get("GPUDECK_TOKEN")
    return {"Authorization": f"Bearer {token}"} if token else {}


@functools.cache
def tls() -> ssl.SSLContext:
    """The TLS settings every request of this process shares (httpx's own defaults, certificate
    checks on): a call without them builds its own, the CA bundle read and parsed each time,
    26 ms of CPU a request here against 1.3 ms (a following `wait` sends two a poll)."""
    return httpx.create_ssl_context()


def table(*columns: str, **kwargs: Any) -> Table:
    """A table whose cells wrap (fold) instead of ending in an ellipsis."""
    result = Table(**kwargs)
    for name in columns:
        result.add_column(name, overflow="fold")
    return result


def request(method: str, url: str, path: str, **kwargs: Any) -> Any:
    """Call the API; an error prints one line naming the field and the reason, and exits 1."""
    try:
        response = httpx.request(
            method,
            url.rstrip("/") + path,
            timeout=30,
            headers=auth_headers(),
            verify=tls(),
            **kwargs,
        )
    except httpx.HTTPError as exc:
        err_console.print(f"[red]cannot reach GPUDeck at {url}[/red]: {exc}")
        raise typer.Exit(1) from None
    if response.status_code >= 400:
        exit_for_response(response)
    return response.json()


def exit_for_response(response: httpx.Response) -> NoReturn:
    if response.status_code == 401:
        err_console.print(f"[red]401[/red] {BAD_TOKEN if auth_headers() else NO_TOKEN}")
        raise typer.Exit(1)
    try:
        detail = response.json().get("detail")
    except ValueError:
        detail = response.text
    if isinstance(detail, list):
        for err in detail:
            field = ".".join(str(p) for p in err.get("loc", []) if p != "body")
            err_console.print(
                f"[red]{response.status_code}[/red] {field or 'request'}: {err.get('msg')}"
            )
    elif isinstance(detail, dict):
        field = detail.get("field") or "request"
        err_console.print(f"[red]{response.status_code}[/red] {field}: {detail.get('message')}")
    else:
        err_console.print(f"[red]{response.status_code}[/red] {detail}")
    raise typer.Exit(1)


def gib(n: int | None) -> str:
    return "-" if n is None else f"{n / 1024**3:.1f} GiB"


def size(n: int) -> str:
    """GiB from 1 GiB up, MiB below, KiB below 1 MiB: a rank's few hundred MiB stay readable
    and a small checkpoint is not "0 MiB"."""
    if n >= 1024**3:
        return f"{n / 1024**3:.3g} GiB"
    return f"{n / 1024**2:.0f} MiB" if n >= 1024**2 else f"{n / 1024:.0f} KiB"


def read_config(config: str) -> dict[str, Any]:
    """A `--config` option's value: JSON, or `@file.json`; exit 2 with one line if not JSON."""
    text = open(config[1:]).read() if config.startswith("@") else config  # noqa: SIM115
    try:
        value: dict[str, Any] = json.loads(text)
    except json.JSONDecodeError as exc:
        err_console.print(f"[red]--config[/red] is not JSON: {exc}")
        raise typer.Exit(2) from None
    return value
