"""Alembic environment: the URL comes from the caller (gpudeck migrate) or from Settings."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool

import gpudeck.models  # noqa: F401  (registers every table on Base.metadata)
from gpudeck.core.config import get_settings
from gpudeck.core.db import Base

target_metadata = Base.metadata


def _url() -> str:
    url = context.config.get_main_option("sqlalchemy.url")
    return url or get_settings().sqlalchemy_url


def run_migrations_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    engine = create_engine(_url(), poolclass=pool.NullPool)
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=target_metadata)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
