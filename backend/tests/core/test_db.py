"""The API's engine: a pooled connection is pinged before use only when it sat idle, so a busy
API pays no extra round trip a request, and one idle across a restart is still checked."""

from __future__ import annotations

import time
from typing import Any

import pytest
from sqlalchemy import Engine, text

from gpudeck.core import db as core_db
from gpudeck.core.config import Settings
from gpudeck.core.db import DbTimeouts, make_engine


def _use(engine: Engine) -> None:
    with engine.connect() as conn:
        conn.execute(text("SELECT 2"))


def test_a_connection_is_pinged_only_after_sitting_idle(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    pings: list[float] = []
    real_ping = core_db._bounded_ping

    def counted(connection: Any, ping_s: float) -> None:
        pings.append(time.monotonic())
        real_ping(connection, ping_s)

    monkeypatch.setattr(core_db, "_bounded_ping", counted)
    engine = make_engine(settings.sqlalchemy_url, pool_size=1, timeouts=DbTimeouts(ping_idle_s=0.3))
    try:
        _use(engine)
        assert len(pings) == 1  # a new connection: checked
        _use(engine)
        _use(engine)
        assert len(pings) == 1  # back a moment ago: no round trip
        time.sleep(0.35)
        _use(engine)
        assert len(pings) == 2  # idle past the window: checked again
    finally:
        engine.dispose()


def test_a_connection_dropped_while_idle_is_replaced_after_the_ping(
    settings: Settings,
) -> None:
    """As after a Postgres restart: the server ended the pooled connection while it sat."""
    engine = make_engine(settings.sqlalchemy_url, pool_size=1, timeouts=DbTimeouts(ping_idle_s=0.1))
    try:
        with engine.connect() as conn:
            pid = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
        killer = make_engine(settings.sqlalchemy_url, pool_size=1)
        with killer.connect() as conn:
            conn.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid})
        killer.dispose()
        time.sleep(0.2)
        with engine.connect() as conn:  # the ping finds it dead; the pool reconnects
            assert conn.execute(text("SELECT pg_backend_pid()")).scalar_one() != pid
    finally:
        engine.dispose()
