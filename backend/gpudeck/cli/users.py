"""`gpudeck user ...` and `gpudeck token ...`: run on the server, straight against the database
(whoever can read GPUDECK_DATABASE_URL or the data directory administers GPUDeck)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from sqlalchemy.orm import Session

from gpudeck.cli.settings import err_console, load_settings
from gpudeck.core.db import make_engine, make_sessionmaker, transaction
from gpudeck.core.embedded import EmbeddedServices
from gpudeck.core.security import LOCAL_ADMIN
from gpudeck.services import audit
from gpudeck.services import users as user_service
from gpudeck.services.errors import DomainError

console = Console()
user_app = typer.Typer(no_args_is_help=True, help="Create and list users.")
token_app = typer.Typer(no_args_is_help=True, help="Create, list and revoke API tokens.")
CLI_ACTOR = "cli"


@contextmanager
def _session() -> Iterator[Session]:
    settings = load_settings()
    services = EmbeddedServices(settings.data_dir, settings.database_url)
    try:
        if settings.database_url is None:
            settings.database_url = services.start_postgres()
        engine = make_engine(settings.sqlalchemy_url, pool_size=1)
        try:
            with transaction(make_sessionmaker(engine)) as session:
                yield session
        except DomainError as exc:
            err_console.print(f"[red]{exc.field or 'error'}[/red]: {exc.message}")
            raise typer.Exit(1) from None
        finally:
            engine.dispose()
    finally:
        services.stop()


def _print_token(secret: str, user: str) -> None:
    err_console.print(f"token for [bold]{user}[/bold] (shown once; store it now):")
    print(secret, flush=True)  # alone on stdout, for scripts


@user_app.command("create")
def create_user(
    name: Annotated[str, typer.Argument(help="user name (letters, digits, . _ -)")],
    role: Annotated[str, typer.Option(help="user or admin")] = "user",
) -> None:
    """Create a user and print their first token."""
    if role not in ("user", "admin"):
        err_console.print("[red]--role[/red] must be user or admin")
        raise typer.Exit(2)
    with _session() as session:
        user = user_service.create_user(session, name, "admin" if role == "admin" else "user")
        issued = user_service.issue_token(session, user)
        audit.record(session, CLI_ACTOR, audit.USER_CREATE, f"user:{name}", role=role)
    _print_token(issued.secret, name)


@user_app.command("list")
def list_users() -> None:
    """List users."""
    with _session() as session:
        table = Table("id", "name", "role", "created")
        for user in user_service.list_users(session):
            table.add_row(str(user.id), user.name, user.role, str(user.created_at)[:19])
    console.print(table)


@token_app.command("create")
def create_token(
    user: Annotated[str, typer.Argument(help="the user the token acts as")],
    name: Annotated[str, typer.Option(help="a label for the token")] = "cli",
    expires_in_days: Annotated[int | None, typer.Option(min=1, max=3650)] = None,
) -> None:
    """Create a token for a user and print it."""
    with _session() as session:
        owner = user_service.get_user(session, user)
        expires = timedelta(days=expires_in_days) if expires_in_days else None
        issued = user_service.issue_token(session, owner, name, expires)
        audit.record(session, CLI_ACTOR, audit.TOKEN_CREATE, f"token:{issued.record.id}")
    _print_token(issued.secret, user)


@token_app.command("list")
def list_tokens() -> None:
    """List every token (never the secrets)."""
    with _session() as session:
        table = Table("id", "user", "name", "prefix", "last used", "revoked")
        for t in user_service.list_tokens(session, None):
            table.add_row(
                str(t.id), t.user.name, t.name, t.display_prefix + "...",
                str(t.last_used_at or "")[:19], str(t.revoked_at or "")[:19],
            )  # fmt: skip
    console.print(table)


@token_app.command("revoke")
def revoke_token(
    token_id: Annotated[int, typer.Argument(min=1, help="id from token list")],
) -> None:
    """Revoke a token: requests carrying it are refused from now on."""
    with _session() as session:
        user_service.revoke_token(session, token_id, LOCAL_ADMIN)
        audit.record(session, CLI_ACTOR, audit.TOKEN_REVOKE, f"token:{token_id}")
    err_console.print(f"token {token_id} revoked")


def register(app: typer.Typer) -> None:
    app.add_typer(user_app, name="user")
    app.add_typer(token_app, name="token")


def first_admin_token(database_url: str) -> str | None:
    """`gpudeck run` on a fresh install: create user `admin` and return its token (else None)."""
    engine = make_engine(database_url, pool_size=1)
    try:
        with transaction(make_sessionmaker(engine)) as session:
            issued = user_service.ensure_first_admin(session)
            if issued is not None:
                audit.record(session, CLI_ACTOR, audit.USER_CREATE, "user:admin", role="admin")
    finally:
        engine.dispose()
    return issued.secret if issued else None


def announce_first_admin(url: str, token: str) -> None:
    """Printed once: the token is never stored in clear, so this is the only chance to copy it."""
    print(
        "\nCreated the first user, `admin`. Its token is shown only now:\n"
        f"  {token}\n"
        f"Sign in: {url}/#token={token}\n"
        "(the part after # never leaves the browser). More users: gpudeck user create NAME\n",
        flush=True,
    )
