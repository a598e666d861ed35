"""The Alembic migrations are the schema: they build it from nothing, tear it down, and match
the SQLAlchemy models exactly (no drift for autogenerate to find)."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect, make_url, pool

import gpudeck.models  # noqa: F401  (registers the tables)
from gpudeck.core import migrate
from gpudeck.core.db import Base


@pytest.fixture
def scratch_database(service_urls: tuple[str, str]) -> Iterator[str]:
    url = make_url(service_urls[0])
    name = f"{url.database}_migrations"
    admin = url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    yield url.set(database=name).render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_upgrade_matches_the_models_and_downgrade_removes_everything(scratch_database: str) -> None:
    migrate.upgrade(scratch_database)
    engine = create_engine(scratch_database, poolclass=pool.NullPool)
    with engine.connect() as conn:
        drift = compare_metadata(MigrationContext.configure(conn), Base.metadata)
        assert drift == [], drift
        indexes = {i["name"]: i for i in inspect(conn).get_indexes("allocations")}
        live = indexes["uq_allocations_live_device"]
        assert live["unique"] and live["column_names"] == ["node", "gpu_uuid"]
        assert "released_at IS NULL" in live["dialect_options"]["postgresql_where"]
    migrate.downgrade(scratch_database, "base")
    with engine.connect() as conn:
        assert set(inspect(conn).get_table_names()) <= {"alembic_version"}
    migrate.upgrade(scratch_database)  # and back up again, from nothing
    engine.dispose()
