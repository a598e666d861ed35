"""The Alembic migrations are the schema: they build it from nothing, tear it down, and match
the SQLAlchemy models exactly (no drift for autogenerate to find)."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect, make_url, pool, text

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


def test_json_nulls_written_before_0011_become_sql_nulls(scratch_database: str) -> None:
    """A count job's unnamed devices and nodes were stored as the JSON value null, which
    `IS NULL` does not find; 0011 mends them, and jobs written since store SQL NULL."""
    migrate.upgrade(scratch_database, "0010")
    engine = create_engine(scratch_database, poolclass=pool.NullPool)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO jobs (name, kind, config, status, owner, node, world_size,"
                " progress_step, requested_devices, requested_nodes) VALUES ('a', 'sae', '{}',"
                " 'queued', 'ada', 'n0', 1, 0, 'null', 'null'), ('b', 'sae', '{}', 'queued',"
                " 'ada', 'n0', 2, 0, '[\"u0\", \"u1\"]', '[\"n0\", \"n1\"]')"
            )
        )
    migrate.upgrade(scratch_database)
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT name, requested_devices IS NULL, requested_nodes IS NULL, requested_nodes"
                " FROM jobs ORDER BY name"
            )
        ).all()
    engine.dispose()
    assert [tuple(r) for r in rows] == [("a", True, True, None), ("b", False, False, ["n0", "n1"])]
