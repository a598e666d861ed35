"""The direct-database side of `gpudeck user` and `gpudeck token`: on the server, against the
database GPUDECK_DATABASE_URL names, or else the embedded one `gpudeck run` made in the data
directory (GPUDECK_DATA_DIR or its default): its socket while `gpudeck run` runs, or started for
the command and stopped after. Where there is neither it says what is missing and creates
nothing. `users` imports this module only when a command takes that path, and `gpudeck run` for
its first admin."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import timedelta
from typing import Any

import typer
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from gpudeck.cli.http import err_console
from gpudeck.cli.settings import load_settings
from gpudeck.core.config import Settings
from gpudeck.core.db import make_engine, make_sessionmaker, transaction
from gpudeck.core.security import LOCAL_ADMIN
from gpudeck.services.accounts import audit
from gpudeck.services.accounts import users as user_service
from gpudeck.services.errors import DomainError

CLI_ACTOR = "cli"
MISSING = (
    "set GPUDECK_TOKEN to an admin's token (`gpudeck run` printed the first one), "
    "or run this on the server with GPUDECK_DATABASE_URL set, or with GPUDECK_DATA_DIR "
    "naming the data directory of `gpudeck run`"
)


def _database(settings: Settings) -> AbstractContextManager[str]:
    """The URL to use: GPUDECK_DATABASE_URL's, or the data directory's embedded database."""
    if settings.database_url is not None:
        return nullcontext(settings.sqlalchemy_url)
    from gpudeck.core import embedded

    if embedded.has_embedded_postgres(settings.data_dir):
        return embedded.data_dir_postgres(settings.data_dir)
    err_console.print(f"[red]no token[/red]: {MISSING} (no database in {settings.data_dir})")
    raise typer.Exit(1)


@contextmanager
def server_session() -> Iterator[Session]:
    """GPUDECK_DATABASE_URL's database, or the embedded one of the data directory."""
    settings = load_settings()
    with _database(settings) as url:
        engine = make_engine(url, pool_size=1)
        try:
            with transaction(make_sessionmaker(engine)) as session:
                yield session
        except DomainError as exc:
            err_console.print(f"[red]{exc.field or 'error'}[/red]: {exc.message}")
            raise typer.Exit(1) from None
        except SQLAlchemyError as exc:  # an unreachable database: one line, not a traceback
            first = str(exc).splitlines()[0]
            err_console.print(f"[red]database[/red]: {type(exc).__name__}: {first}")
            raise typer.Exit(1) from None
        finally:
            engine.dispose()


def create_user(name: str, role: str) -> str:
    """The new user's first token."""
    with server_session() as session:
        user = user_service.create_user(session, name, "admin" if role == "admin" else "user")
        issued = user_service.issue_token(session, user)
        audit.record(session, CLI_ACTOR, audit.USER_CREATE, f"user:{name}", role=role)
    return issued.secret


def set_run_code(name: str, allowed: bool) -> None:
    with server_session() as session:
        user_service.set_run_code(session, name, allowed)
        audit.record(session, CLI_ACTOR, audit.USER_UPDATE, f"user:{name}", run_code=allowed)


def list_users() -> list[dict[str, Any]]:
    with server_session() as session:
        return [
            {"id": u.id, "name": u.name, "role": u.role, "run_code": u.run_code}
            for u in user_service.list_users(session)
        ]


def create_token(user: str, name: str, expires_in_days: int | None) -> str:
    with server_session() as session:
        owner = user_service.get_user(session, user)
        expires = timedelta(days=expires_in_days) if expires_in_days else None
        issued = user_service.issue_token(session, owner, name, expires)
        audit.record(session, CLI_ACTOR, audit.TOKEN_CREATE, f"token:{issued.record.id}")
    return issued.secret


def list_tokens() -> list[dict[str, Any]]:
    with server_session() as session:
        return [
            {"id": t.id, "user": t.user.name, "name": t.name,
             "display_prefix": t.display_prefix, "last_used_at": t.last_used_at,
             "revoked_at": t.revoked_at}
            for t in user_service.list_tokens(session, None)
        ]  # fmt: skip


def revoke_token(token_id: int) -> None:
    with server_session() as session:
        user_service.revoke_token(session, token_id, LOCAL_ADMIN)
        audit.record(session, CLI_ACTOR, audit.TOKEN_REVOKE, f"token:{token_id}")


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
